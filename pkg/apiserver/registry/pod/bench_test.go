package pod

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
)

// BenchmarkCreatePath measures what every pod create costs in the strategy:
// defaulting, preparation and validation of a typical workload pod.
func BenchmarkCreatePath(b *testing.B) {
	s := Resource(clocktesting.NewFakePassiveClock(now)).Strategy
	ctx := context.Background()
	tmpl := newPod()
	tmpl.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}
	tmpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	tmpl.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}
	tmpl.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}}}
	tmpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p := tmpl.DeepCopy()
		s.Default(p)
		s.PrepareForCreate(ctx, p)
		if errs := s.Validate(ctx, p); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
