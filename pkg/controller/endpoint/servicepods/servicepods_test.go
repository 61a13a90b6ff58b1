package servicepods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestResolvePort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080}, // protocol unset: TCP
			{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
		}}},
		InitContainers: []corev1.Container{
			{Name: "once", Ports: []corev1.ContainerPort{{Name: "init", ContainerPort: 7000}}},
			{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}}},
		},
	}}
	tests := []struct {
		name   string
		sp     corev1.ServicePort
		want   int32
		wantOK bool
	}{
		{name: "number", sp: corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(9000)}, want: 9000, wantOK: true},
		{name: "unset is the Service port", sp: corev1.ServicePort{Port: 80}, want: 80, wantOK: true},
		{name: "name", sp: corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}, want: 8080, wantOK: true},
		{name: "name with another protocol", sp: corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("dns")}},
		{name: "name and protocol", sp: corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}, want: 5353, wantOK: true},
		{name: "a sidecar's port", sp: corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("proxy")}, want: 15001, wantOK: true},
		{name: "not a plain init container's", sp: corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("init")}},
		{name: "unknown name", sp: corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("grpc")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ResolvePort(pod, &tt.sp)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ResolvePort = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestTriggerTimes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.NewTime(t0)}}
	readyAt := func(name string, ts time.Time) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ts)}}}}
	}
	var tt TriggerTimes
	steps := []struct {
		what string
		pods []*corev1.Pod
		want time.Time
	}{
		{what: "first sync: the Service's creation", pods: []*corev1.Pod{readyAt("a", t0.Add(time.Minute))}, want: t0},
		{what: "nothing changed", pods: []*corev1.Pod{readyAt("a", t0.Add(time.Minute))}},
		{what: "two pods changed: the earlier change", pods: []*corev1.Pod{readyAt("a", t0.Add(3*time.Minute)), readyAt("b", t0.Add(2*time.Minute))}, want: t0.Add(2 * time.Minute)},
		{what: "a pod went: nothing to report", pods: []*corev1.Pod{readyAt("a", t0.Add(3*time.Minute))}},
	}
	for _, s := range steps {
		if got := tt.Compute("ns/web", svc, s.pods); !got.Equal(s.want) {
			t.Errorf("%s: %v, want %v", s.what, got, s.want)
		}
	}
	tt.Forget("ns/web")
	if got := tt.Compute("ns/web", svc, nil); !got.Equal(t0) {
		t.Errorf("after Forget: %v, want the Service's creation again", got)
	}
}

func TestInclude(t *testing.T) {
	running := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.2"}}
		mutate(p)
		return p
	}
	tests := []struct {
		name             string
		pod              *corev1.Pod
		want, wantWithTT bool
	}{
		{name: "running with an IP", pod: running(func(*corev1.Pod) {}), want: true, wantWithTT: true},
		{name: "no IP", pod: running(func(p *corev1.Pod) { p.Status.PodIP = "" })},
		{name: "succeeded", pod: running(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
		{name: "failed", pod: running(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })},
		{name: "terminating", pod: running(func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }), wantWithTT: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Include(tt.pod, false); got != tt.want {
				t.Errorf("Include(pod, false) = %v, want %v", got, tt.want)
			}
			if got := Include(tt.pod, true); got != tt.wantWithTT {
				t.Errorf("Include(pod, true) = %v, want %v", got, tt.wantWithTT)
			}
		})
	}
}
