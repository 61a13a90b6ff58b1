package servicealloc

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func services(t *testing.T) (*Services, *memStore) {
	t.Helper()
	s := newMemStore()
	pr, _ := ParsePortRange("30000-32767")
	return &Services{IPs: ipAllocator(t, s, "10.96.0.0/16"), Ports: NewPortAllocator(s, "/ports/", pr, clocktesting.NewFakePassiveClock(now))}, s
}

func nodePortService() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "default", UID: "uid-dns"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "dns"}, Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP}}}}
}

func TestServicesAllocate(t *testing.T) {
	ctx := context.Background()
	svcs, store := services(t)
	svc := nodePortService()
	a, err := svcs.Allocate(ctx, svc, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	a.Finish(ctx, true)
	p := svc.Spec.Ports
	if p[0].NodePort == 0 || p[0].NodePort != p[1].NodePort {
		t.Errorf("UDP and TCP 53 got node ports %d and %d, want one shared", p[0].NodePort, p[1].NodePort)
	}
	if svc.Spec.ClusterIP == "" || len(store.m) != 2 {
		t.Errorf("clusterIP %q, %d claims; want an address and 2 claims", svc.Spec.ClusterIP, len(store.m))
	}

	// NodePort → ClusterIP: the node port goes once the update is written.
	old := svc.DeepCopy()
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	for i := range svc.Spec.Ports {
		svc.Spec.Ports[i].NodePort = 0
	}
	a, err = svcs.Allocate(ctx, svc, old, false)
	if err != nil {
		t.Fatal(err)
	}
	a.Finish(ctx, true)
	if len(store.m) != 1 {
		t.Errorf("after NodePort → ClusterIP: claims %v, want the cluster IP alone", store.m)
	}

	// A write that fails frees what its allocation took.
	other := nodePortService()
	other.Name, other.UID = "other", "uid-other"
	a, err = svcs.Allocate(ctx, other, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	a.Finish(ctx, false)
	if len(store.m) != 1 {
		t.Errorf("after a failed create: claims %v, want the first service's alone", store.m)
	}
}

func TestServicesAllocateRefusals(t *testing.T) {
	ctx := context.Background()
	svcs, store := services(t)
	dual := corev1.IPFamilyPolicyRequireDualStack
	tests := []struct {
		name   string
		mutate func(s *corev1.Service)
		want   string
	}{
		{"dual-stack", func(s *corev1.Service) { s.Spec.IPFamilyPolicy = &dual },
			`spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`},
		{"IPv6", func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} },
			`spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster`},
		{"node port outside, reported on the first port of its number, as upstream", func(s *corev1.Service) { s.Spec.Ports[1].NodePort = 80 },
			`spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := nodePortService()
			tt.mutate(svc)
			_, err := svcs.Allocate(ctx, svc, nil, false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Allocate: %v, want %s", err, tt.want)
			}
			if len(store.m) != 0 {
				t.Errorf("a refused allocation left claims %v", store.m)
			}
		})
	}
}
