package validation

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The wanted errors are what upstream 1.36's kube-apiserver answers for the
// same containers.
func TestEnvAndResourcesAsUpstream(t *testing.T) {
	fieldRef := func(name, p string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: p}}}
	}
	resourceRef := func(name, r, divisor string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: r, Divisor: resource.MustParse(divisor)}}}
	}
	fileRef := func(name, vol, p, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: vol, Path: p, Key: key}}}
	}
	const envList = `supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`
	tests := []struct {
		name   string
		mutate func(s *corev1.PodSpec)
		want   []string
	}{
		{"field refs", func(s *corev1.PodSpec) {
			s.Containers[0].Env = []corev1.EnvVar{
				fieldRef("A", "spec.restartPolicy"), fieldRef("B", "metadata.labels['x']"), fieldRef("C", "metadata.labels"),
				fieldRef("E", "metadata.name['x']"), fieldRef("F", "metadata.labels['Bad Key']"), fieldRef("G", "metadata.labels[x"),
				fieldRef("I", "metadata.generateName"), {Name: "J", ValueFrom: &corev1.EnvVarSource{}},
			}
		}, []string{
			`spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.restartPolicy": ` + envList,
			`spec.containers[0].env[2].valueFrom.fieldRef.fieldPath: Unsupported value: "metadata.labels": ` + envList,
			`spec.containers[0].env[3].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.name['x']": error converting fieldPath: field label does not support subscript: metadata.name['x']`,
			`spec.containers[0].env[4].valueFrom.fieldRef: Invalid value: "Bad Key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`spec.containers[0].env[5].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.labels[x": error converting fieldPath: field label not supported: metadata.labels[x`,
			`spec.containers[0].env[6].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.generateName": error converting fieldPath: field label not supported: metadata.generateName`,
			"spec.containers[0].env[7].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
		}},
		{"resource field refs", func(s *corev1.PodSpec) {
			s.Containers[0].Env = []corev1.EnvVar{
				resourceRef("K", "limits.cpu", "3"), resourceRef("L", "limits.memory", "3"), resourceRef("M", "limits.hugepages-2Mi", "3"),
				resourceRef("N", "requests.ephemeral-storage", "3"), resourceRef("O", "requests.cpu", "1m"), resourceRef("P", "limits.bogus", "1"),
			}
		}, []string{
			`spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`,
			`spec.containers[0].env[1].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.memory": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource`,
			`spec.containers[0].env[2].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.hugepages-2Mi": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource`,
			`spec.containers[0].env[3].valueFrom.resourceFieldRef.divisor: Invalid value: "requests.ephemeral-storage": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource`,
			`spec.containers[0].env[5].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.bogus": supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"`,
		}},
		{"file key refs", func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}})
			s.Containers[0].Env = []corev1.EnvVar{
				fileRef("J", "cm", "a.env", "K"), fileRef("K", "data", "", ""), fileRef("L", "data", "/abs/../x", "bad=key"), fileRef("M", "", "a", "k"),
			}
		}, []string{
			`spec.containers[0].env[1].valueFrom.fileKeyRef.key: Required value`,
			`spec.containers[0].env[1].valueFrom.fileKeyRef.path: Required value`,
			`spec.containers[0].env[2].valueFrom.fileKeyRef.key: Invalid value: "bad=key": a valid environment variable name must consist only of printable ASCII characters other than '='`,
			`spec.containers[0].env[2].valueFrom.fileKeyRef.path: Invalid value: "/abs/../x": must not contain '..'`,
			`spec.containers[0].env[3].valueFrom.fileKeyRef.volumeName: Required value`,
			`spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "cm": referenced volume must be of type emptyDir`,
			`spec.containers[0].env[3].valueFrom.fileKeyRef.volumeName: Not found: ""`,
		}},
		{"downward API volume", func(s *corev1.PodSpec) {
			file := func(p string, f *corev1.ObjectFieldSelector, r *corev1.ResourceFieldSelector) corev1.DownwardAPIVolumeFile {
				return corev1.DownwardAPIVolumeFile{Path: p, FieldRef: f, ResourceFieldRef: r}
			}
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "d", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				file("a", &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}, nil),
				file("b", &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.bogus"}, nil),
				file("c", &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['x']"}, nil),
				file("e", &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}, nil),
				file("f", nil, &corev1.ResourceFieldSelector{Resource: "limits.cpu"}),
				file("g", nil, &corev1.ResourceFieldSelector{Resource: "limits.bogus", ContainerName: "web"}),
			}}}})
		}, []string{
			`spec.volumes[1].downwardAPI.fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"`,
			`spec.volumes[1].downwardAPI.fieldRef.fieldPath: Invalid value: "metadata.bogus": error converting fieldPath: field label not supported: metadata.bogus`,
			`spec.volumes[1].downwardAPI.resourceFieldRef.containerName: Required value`,
			`spec.volumes[1].downwardAPI.resourceFieldRef.resource: Unsupported value: "limits.bogus": supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"`,
		}},
		{"extended resource without limit", func(s *corev1.PodSpec) {
			s.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}}
		}, []string{`spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources`}},
		{"hugepages request below limit", func(s *corev1.PodSpec) {
			s.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")},
				Limits:   corev1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi")},
			}
		}, []string{`spec.containers[0].resources.requests: Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi`}},
		{"extended resource request above limit", func(s *corev1.PodSpec) {
			s.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("3")},
				Limits:   corev1.ResourceList{"example.com/gpu": resource.MustParse("2")},
			}
		}, []string{`spec.containers[0].resources.requests: Invalid value: "3": must be equal to example.com/gpu limit of 2`}},
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
