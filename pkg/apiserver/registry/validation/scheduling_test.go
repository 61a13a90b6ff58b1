package validation

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// The wanted errors are what upstream 1.36's kube-apiserver answers for the
// same pod spec; kube-lite accepted all of these pods.
func TestPodSpecSecurityContextAffinitySpread(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *corev1.PodSpec)
		want   []string
	}{
		{"pod security context", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{
				RunAsUser: ptr.To[int64](-1), FSGroup: ptr.To[int64](-3), SupplementalGroups: []int64{-4},
				Sysctls:             []corev1.Sysctl{{Name: "bad name!"}, {Name: "kernel.shm_rmid_forced"}, {Name: "kernel.shm_rmid_forced"}},
				FSGroupChangePolicy: ptr.To(corev1.PodFSGroupChangePolicy("Sometimes")),
				SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("/abs/../x")},
				AppArmorProfile:     &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("")},
			}
		}, []string{
			`spec.securityContext.fsGroup: Invalid value: -3: must be between 0 and 2147483647, inclusive`,
			`spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive`,
			`spec.securityContext.supplementalGroups[0]: Invalid value: -4: must be between 0 and 2147483647, inclusive`,
			`spec.securityContext.sysctls[0].name: Invalid value: "bad name!": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`,
			`spec.securityContext.sysctls[2].name: Duplicate value: "kernel.shm_rmid_forced"`,
			`spec.securityContext.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"`,
			`spec.securityContext.seccompProfile.localhostProfile: Invalid value: "/abs/../x": must be a relative path`,
			`spec.securityContext.seccompProfile.localhostProfile: Invalid value: "/abs/../x": must not contain '..'`,
			`spec.securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost`,
		}},
		{"container security context", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{
				Privileged: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), RunAsGroup: ptr.To[int64](-1),
				ProcMount:      ptr.To(corev1.ProcMountType("Weird")),
				SeccompProfile: &corev1.SeccompProfile{Type: "Bogus"},
				Capabilities:   &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN"}},
			}
		}, []string{
			`spec.containers[0].securityContext.runAsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive`,
			`spec.containers[0].securityContext.procMount: Unsupported value: "Weird": supported values: "Default", "Unmasked"`,
			`spec.containers[0].securityContext.seccompProfile.type: Unsupported value: "Bogus": supported values: "Localhost", "RuntimeDefault", "Unconfined"`,
			`spec.containers[0].securityContext: Invalid value: {"Capabilities":{"Add":["CAP_SYS_ADMIN"],"Drop":null},"Privileged":true,"SELinuxOptions":null,"WindowsOptions":null,"RunAsUser":null,"RunAsGroup":-1,"RunAsNonRoot":null,"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,"ProcMount":"Weird","SeccompProfile":{"Type":"Bogus","LocalhostProfile":null},"AppArmorProfile":null}: cannot set ` + "`allowPrivilegeEscalation` to false and `privileged` to true",
			`spec.containers[0].securityContext: Invalid value: {"Capabilities":{"Add":["CAP_SYS_ADMIN"],"Drop":null},"Privileged":true,"SELinuxOptions":null,"WindowsOptions":null,"RunAsUser":null,"RunAsGroup":-1,"RunAsNonRoot":null,"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,"ProcMount":"Weird","SeccompProfile":{"Type":"Bogus","LocalhostProfile":null},"AppArmorProfile":null}: cannot set ` + "`allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
		}},
		{"unmasked proc mount needs a user namespace", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount),
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault, LocalhostProfile: ptr.To("y")}}
		}, []string{
			"spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`",
			`spec.containers[0].securityContext.appArmorProfile.localhostProfile: Invalid value: "y": can only be set when AppArmor type is Localhost`,
		}},
		{"affinity", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "a", Operator: corev1.NodeSelectorOpIn}, {Key: "b", Operator: "Bogus"}},
						MatchFields:      []corev1.NodeSelectorRequirement{{Key: "spec.x", Operator: corev1.NodeSelectorOpExists}},
					}}},
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 0}},
				},
				PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
						Namespaces: []string{"Bad_NS"}, TopologyKey: "",
						LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn}}},
					}},
				},
			}
		}, []string{
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].operator: Invalid value: "Bogus": not a valid selector operator`,
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].operator: Invalid value: "Exists": not a valid selector operator`,
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "spec.x": not a valid field selector key`,
			`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100`,
			"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespace: Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty`,
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": name part must be non-empty`,
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		}},
		{"no node selector terms", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}, []string{`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term`}},
		{"topology spread constraints", func(s *corev1.PodSpec) {
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
				{MaxSkew: 0, WhenUnsatisfiable: "Maybe"},
				{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: ptr.To[int32](0)},
				{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule},
				{MaxSkew: 1, TopologyKey: "rack", WhenUnsatisfiable: corev1.ScheduleAnyway, MinDomains: ptr.To[int32](2),
					NodeAffinityPolicy: ptr.To(corev1.NodeInclusionPolicy("Bogus"))},
			}
		}, []string{
			`spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero`,
			`spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty`,
			`spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"`,
			`spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, DoNotSchedule}"`,
			`spec.topologySpreadConstraints[1].minDomains: Invalid value: 0: must be greater than zero`,
			`spec.topologySpreadConstraints[3].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway`,
			`spec.topologySpreadConstraints[3].nodeAffinityPolicy: Unsupported value: "Bogus": supported values: "Honor", "Ignore"`,
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
