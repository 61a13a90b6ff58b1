package validation

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// The wanted errors are what upstream 1.36's kube-apiserver answers for the
// same pod spec; kube-lite accepted most of these or worded them
// differently.
func TestPodSpecExtrasAsUpstream(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *corev1.PodSpec)
		want   []string
	}{
		{"pod fields", func(s *corev1.PodSpec) {
			s.HostPID, s.ShareProcessNamespace = true, ptr.To(true)
			s.HostAliases = []corev1.HostAlias{{IP: "bad", Hostnames: []string{"Bad_Host"}}, {Hostnames: []string{"a"}}}
			s.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "bad type!"}}
			s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "a"}, {Name: "a"}}
			s.OS = &corev1.PodOS{Name: "plan9"}
		}, []string{
			`spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled`,
			`spec.readinessGates[0].conditionType: Invalid value: "bad type!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`spec.schedulingGates[1]: Duplicate value: "a"`,
			`spec.hostAliases[0].ip: Invalid value: "bad": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`spec.hostAliases[0].hostnames[0]: Invalid value: "Bad_Host": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`spec.hostAliases[1].ip: Invalid value: "": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`spec.os: Unsupported value: "plan9": supported values: "linux", "windows"`,
		}},
		{"dns config", func(s *corev1.PodSpec) {
			s.DNSPolicy = corev1.DNSNone
			s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"bad"}, Searches: []string{"Bad_Search!", "_srv._tcp.example.com.", "."},
				Options: []corev1.PodDNSConfigOption{{}}}
		}, []string{
			`spec.dnsConfig.nameservers[0]: Invalid value: "bad": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`spec.dnsConfig.searches[0]: Invalid value: "Bad_Search!": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')`,
			`spec.dnsConfig.options[0]: Required value: must not be empty`,
		}},
		{"host network ports and sleep", func(s *corev1.PodSpec) {
			s.HostNetwork = true
			s.TerminationGracePeriodSeconds = ptr.To[int64](30)
			s.InitContainers = []corev1.Container{{Name: "i", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile, Ports: []corev1.ContainerPort{{ContainerPort: 83, HostPort: 84, Protocol: corev1.ProtocolTCP}}}}
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 81, HostPort: 82, Protocol: corev1.ProtocolTCP}}
			s.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 31}}}
		}, []string{
			"spec.containers[0].ports[0].hostPort: Invalid value: 82: must match `containerPort` when `hostNetwork` is true",
			`spec.containers[0].lifecycle.preStop.sleep: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)`,
		}},
		{"container restart rules", func(s *corev1.PodSpec) {
			never := corev1.ContainerRestartPolicyNever
			s.Containers = append(s.Containers, s.Containers[0], s.Containers[0])
			s.Containers[1].Name, s.Containers[2].Name = "b", "c"
			s.Containers[0].RestartPolicy = &never
			s.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{
				{Action: "Reboot", ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: "Is", Values: []int32{1}}},
				{Action: corev1.ContainerRestartRuleActionRestart},
				{Action: corev1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}},
			}
			s.Containers[1].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}}}
			s.Containers[2].RestartPolicy = ptr.To(corev1.ContainerRestartPolicy("Sometimes"))
		}, []string{
			`spec.containers[0].restartPolicyRules[0].action: Unsupported value: "Reboot": supported values: "Restart", "RestartAllContainers"`,
			`spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Is": supported values: "In", "NotIn"`,
			`spec.containers[0].restartPolicyRules[1].exitCodes: Required value: must be specified`,
			`spec.containers[1].restartPolicy: Required value: must specify restartPolicy when restart rules are used`,
			`spec.containers[2].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`,
		}},
		{"init container restart rules", func(s *corev1.PodSpec) {
			always := corev1.ContainerRestartPolicyAlways
			init := corev1.Container{Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}
			s.InitContainers = []corev1.Container{init, init, init}
			s.InitContainers[0].Name, s.InitContainers[1].Name, s.InitContainers[2].Name = "side", "plain", "ok"
			s.InitContainers[0].RestartPolicy = &always
			s.InitContainers[0].RestartPolicyRules = []corev1.ContainerRestartRule{
				{Action: "Reboot", ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}},
				{Action: corev1.ContainerRestartRuleActionRestartAllContainers},
			}
			s.InitContainers[1].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}}
			s.InitContainers[2].RestartPolicy = &always
			s.InitContainers[2].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
		}, []string{
			`spec.initContainers[0].restartPolicyRules[0].action: Unsupported value: "Reboot": supported values: "Restart", "RestartAllContainers"`,
			`spec.initContainers[0].restartPolicyRules[1].exitCodes: Required value: must be specified`,
			`spec.initContainers[1].restartPolicy: Required value: must specify restartPolicy when restart rules are used`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.mutate(&s)
			if got := errorStrings(PodSpec(&s, field.NewPath("spec"))); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}
