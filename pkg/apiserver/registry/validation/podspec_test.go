package validation

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validSpec is a defaulted pod spec that passes validation.
func validSpec() corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyAlways,
		DNSPolicy:     corev1.DNSClusterFirst,
		Volumes:       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{
			Name: "web", Image: "nginx:1.27",
			ImagePullPolicy:          corev1.PullIfNotPresent,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			Ports:                    []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
			Env:                      []corev1.EnvVar{{Name: "MODE", Value: "prod"}},
			VolumeMounts:             []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
			},
			LivenessProbe: &corev1.Probe{
				ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
			},
		}},
	}
}

// errorStrings renders errors the way the API reports them, one per entry.
func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestPodSpec(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *corev1.PodSpec)
		want   []string // prefixes of the expected errors, in order
	}{
		{"valid", func(s *corev1.PodSpec) {}, nil},
		{"preemption policy unknown", func(s *corev1.PodSpec) {
			p := corev1.PreemptionPolicy("Sometimes")
			s.PreemptionPolicy = &p
		}, []string{`spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"`}},
		{"preemption policy never", func(s *corev1.PodSpec) {
			p := corev1.PreemptNever
			s.PreemptionPolicy = &p
		}, nil},
		{"no containers", func(s *corev1.PodSpec) { s.Containers = nil }, []string{"spec.containers: Required value"}},
		{"image missing", func(s *corev1.PodSpec) { s.Containers[0].Image = "" },
			[]string{"spec.containers[0].image: Required value"}},
		{"container name invalid", func(s *corev1.PodSpec) { s.Containers[0].Name = "Web_1" },
			[]string{`spec.containers[0].name: Invalid value: "Web_1"`}},
		{"duplicate across init and regular", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{s.Containers[0]}
			s.InitContainers[0].LivenessProbe = nil
		}, []string{`spec.containers[0].name: Duplicate value: "web"`}},
		{"init container probe", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{s.Containers[0]}
			s.InitContainers[0].Name = "init"
		}, []string{"spec.initContainers[0].livenessProbe: Forbidden"}},
		{"sidecar may have probes", func(s *corev1.PodSpec) {
			always := corev1.ContainerRestartPolicyAlways
			s.InitContainers = []corev1.Container{s.Containers[0]}
			s.InitContainers[0].Name = "sidecar"
			s.InitContainers[0].RestartPolicy = &always
		}, nil},
		{"port out of range", func(s *corev1.PodSpec) { s.Containers[0].Ports[0].ContainerPort = 70000 },
			[]string{"spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"}},
		{"port zero", func(s *corev1.PodSpec) { s.Containers[0].Ports[0].ContainerPort = 0 },
			[]string{"spec.containers[0].ports[0].containerPort: Required value"}},
		{"bad protocol", func(s *corev1.PodSpec) { s.Containers[0].Ports[0].Protocol = "ICMP" },
			[]string{`spec.containers[0].ports[0].protocol: Unsupported value: "ICMP"`}},
		{"negative request", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("-1Mi")
		}, []string{`spec.containers[0].resources.requests[memory]: Invalid value: "-1Mi": must be greater than or equal to 0`}},
		{"request above limit", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		}, []string{`spec.containers[0].resources.requests: Invalid value: "1": must be less than or equal to cpu limit of 200m`}},
		{"unknown resource", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Limits["gpu"] = resource.MustParse("1")
		}, []string{
			// Both, as upstream 1.36 answers.
			`spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified`,
			`spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource for containers`,
		}},
		{"restart policy", func(s *corev1.PodSpec) { s.RestartPolicy = "Sometimes" },
			[]string{`spec.restartPolicy: Unsupported value: "Sometimes"`}},
		{"volume without source", func(s *corev1.PodSpec) { s.Volumes[0].VolumeSource = corev1.VolumeSource{} },
			// As upstream, an invalid volume is not one its mounts can name.
			[]string{"spec.volumes[0]: Required value: must specify a volume type", `spec.containers[0].volumeMounts[0].name: Not found: "data"`}},
		// Upstream 1.36's answer: emptyDir counts first, every other
		// source is refused, invalid volumes are no duplicates and their
		// source errors come before their name's.
		{"volume with many sources", func(s *corev1.PodSpec) {
			s.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/tmp"}
			s.Volumes[0].Secret = &corev1.SecretVolumeSource{SecretName: "b"}
			s.Volumes[0].ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}
			s.Volumes = append(s.Volumes,
				corev1.Volume{Name: "w", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				corev1.Volume{Name: "w", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				corev1.Volume{Name: "Bad_V", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}})
		}, []string{
			"spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
			"spec.volumes[0].secret: Forbidden: may not specify more than 1 volume type",
			"spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type",
			"spec.volumes[1].configMap.name: Required value",
			"spec.volumes[3].configMap.name: Required value",
			`spec.volumes[3].name: Invalid value: "Bad_V": a lowercase RFC 1123 label`,
			`spec.containers[0].volumeMounts[0].name: Not found: "data"`,
		}},
		{"duplicate volume", func(s *corev1.PodSpec) { s.Volumes = append(s.Volumes, s.Volumes[0]) },
			[]string{`spec.volumes[1].name: Duplicate value: "data"`}},
		{"mount of unknown volume", func(s *corev1.PodSpec) { s.Containers[0].VolumeMounts[0].Name = "logs" },
			[]string{`spec.containers[0].volumeMounts[0].name: Not found: "logs"`}},
		{"env name with =", func(s *corev1.PodSpec) { s.Containers[0].Env[0].Name = "A=B" },
			[]string{`spec.containers[0].env[0].name: Invalid value: "A=B"`}},
		{"env value and valueFrom", func(s *corev1.PodSpec) {
			s.Containers[0].Env[0].ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}
		}, []string{"spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"}},
		{"probe with two handlers", func(s *corev1.PodSpec) {
			s.Containers[0].LivenessProbe.Exec = &corev1.ExecAction{Command: []string{"true"}}
		}, []string{"spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"}},
		{"probe without handler", func(s *corev1.PodSpec) { s.Containers[0].LivenessProbe.ProbeHandler = corev1.ProbeHandler{} },
			[]string{"spec.containers[0].livenessProbe: Required value: must specify a handler type"}},
		{"host port used twice", func(s *corev1.PodSpec) {
			s.Containers[0].Ports[0].HostPort = 8080
			c := s.Containers[0]
			c.Name, c.LivenessProbe = "second", nil
			s.Containers = append(s.Containers, c)
		}, []string{`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"`}},
		{"dns none without nameservers", func(s *corev1.PodSpec) {
			s.DNSPolicy = corev1.DNSNone
			s.DNSConfig = &corev1.PodDNSConfig{}
		}, []string{"spec.dnsConfig.nameservers: Required value"}},
		{"bad nameserver", func(s *corev1.PodSpec) { s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.2.3"}} },
			[]string{`spec.dnsConfig.nameservers[0]: Invalid value: "1.2.3"`}},
		{"node name", func(s *corev1.PodSpec) { s.NodeName = "Node_1" },
			[]string{`spec.nodeName: Invalid value: "Node_1"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.mutate(&s)
			got := errorStrings(PodSpec(&s, field.NewPath("spec")))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d errors %q, want %d %q", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestPodSpecNilSafe(t *testing.T) {
	// Decoded objects can carry empty structs everywhere; none may panic.
	s := corev1.PodSpec{
		Volumes:        []corev1.Volume{{}},
		InitContainers: []corev1.Container{{LivenessProbe: &corev1.Probe{}, Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}}},
		Containers: []corev1.Container{{
			Env:     []corev1.EnvVar{{ValueFrom: &corev1.EnvVarSource{}}},
			EnvFrom: []corev1.EnvFromSource{{}},
			Ports:   []corev1.ContainerPort{{}},
		}},
		Tolerations: []corev1.Toleration{{}},
	}
	if errs := PodSpec(&s, field.NewPath("spec")); len(errs) == 0 {
		t.Fatal("an empty spec validated")
	}
	if errs := PodSpec(nil, field.NewPath("spec")); len(errs) != 1 {
		t.Fatalf("nil spec: %v", errs)
	}
	if errs := PodTemplateSpec(nil, field.NewPath("spec", "template")); len(errs) != 1 {
		t.Fatalf("nil template: %v", errs)
	}
}

func TestDataKeys(t *testing.T) {
	got := errorStrings(DataKeys(map[string]string{"a.txt": "x", "bad/key": "y"}, field.NewPath("data")))
	if len(got) != 1 || !strings.HasPrefix(got[0], `data[bad/key]: Invalid value: "bad/key"`) {
		t.Fatalf("got %q", got)
	}
}

// As upstream 1.36 (ContainerRestartRules, on by default since 1.35), an
// init container may have restartPolicy Never or OnFailure, with
// restartPolicyRules checked as a regular container's, and still no probes
// or hooks; only Always (a sidecar) was accepted.
func TestInitContainerRestartPolicyNeverOrOnFailure(t *testing.T) {
	rule := func(action corev1.ContainerRestartRuleAction, op corev1.ContainerRestartRuleOnExitCodesOperator) corev1.ContainerRestartRule {
		return corev1.ContainerRestartRule{Action: action, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: []int32{42}}}
	}
	init := func(name string, policy corev1.ContainerRestartPolicy, rules ...corev1.ContainerRestartRule) corev1.Container {
		return corev1.Container{Name: name, Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile, RestartPolicy: &policy, RestartPolicyRules: rules}
	}
	tests := []struct {
		name  string
		inits []corev1.Container
		want  []string
	}{
		{"Never and OnFailure with rules", []corev1.Container{
			init("never", corev1.ContainerRestartPolicyNever, rule(corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleOnExitCodesOpIn)),
			init("onfailure", corev1.ContainerRestartPolicyOnFailure, rule(corev1.ContainerRestartRuleActionRestartAllContainers, corev1.ContainerRestartRuleOnExitCodesOpNotIn)),
		}, nil},
		{"bad policy and rules", []corev1.Container{
			init("bad", "Sometimes"),
			init("badrule", corev1.ContainerRestartPolicyNever, rule("Reboot", "Is")),
		}, []string{
			`spec.initContainers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`,
			`spec.initContainers[1].restartPolicyRules[0].action: Unsupported value: "Reboot": supported values: "Restart", "RestartAllContainers"`,
			`spec.initContainers[1].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Is": supported values: "In", "NotIn"`,
		}},
		{"Never may not have probes", func() []corev1.Container {
			c := init("probed", corev1.ContainerRestartPolicyNever)
			c.StartupProbe = &corev1.Probe{SuccessThreshold: 1, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			return []corev1.Container{c}
		}(), []string{
			`spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always`,
		}},
		// The Forbidden alone, as upstream: a probe or hook the container
		// may not have is not checked field by field as well.
		{"a bad probe and hook are only forbidden", func() []corev1.Container {
			c := init("probed", corev1.ContainerRestartPolicyNever)
			c.LivenessProbe = &corev1.Probe{SuccessThreshold: 3}
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}
			return []corev1.Container{c}
		}(), []string{
			`spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always`,
			`spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			s.InitContainers = tt.inits
			if got := errorStrings(PodSpec(&s, field.NewPath("spec"))); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}
