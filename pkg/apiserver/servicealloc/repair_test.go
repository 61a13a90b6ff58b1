package servicealloc

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestDecide(t *testing.T) {
	old, recent := now.Add(-2*RepairGrace), now.Add(-time.Second)
	tests := []struct {
		name   string
		claims []Claim
		held   []Holding
		want   Plan
	}{
		{"in step", []Claim{{Value: "a", Owner: owner(1), Claimed: old}}, []Holding{{"a", owner(1)}}, Plan{}},
		{"leak past the grace period", []Claim{{Value: "a", Owner: owner(1), Claimed: old}}, nil,
			Plan{Release: []Claim{{Value: "a", Owner: owner(1), Claimed: old}}}},
		{"a create in flight", []Claim{{Value: "a", Owner: owner(1), Claimed: recent}}, nil, Plan{}},
		{"held without a claim", nil, []Holding{{"b", owner(2)}}, Plan{Claim: []Holding{{"b", owner(2)}}}},
		{"held twice, claimed once", nil, []Holding{{"b", owner(2)}, {"b", owner(3)}}, Plan{Claim: []Holding{{"b", owner(2)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.claims, tt.held, now, RepairGrace); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRepair(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	clk := clocktesting.NewFakeClock(now)
	ips := ipAllocator(t, s, "10.96.0.0/16")
	ips.clock = clk
	pr, _ := ParsePortRange("30000-32767")
	svcs := &Services{IPs: ips, Ports: NewPortAllocator(s, "/ports/", pr, clk)}
	// A leak: claimed, its service never stored.
	if _, err := ips.Allocate(ctx, "10.96.0.50", owner(9), false); err != nil {
		t.Fatal(err)
	}
	web := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.60", ClusterIPs: []string{"10.96.0.60"},
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}}}}
	r := &Repairer{Services: svcs, Clock: clk, List: func(context.Context) ([]corev1.Service, error) { return []corev1.Service{web}, nil }}
	clk.Step(2 * RepairGrace)
	if err := r.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	claims, _ := ips.Claims(ctx)
	if len(claims) != 1 || claims[0].Value != "10.96.0.60" || claims[0].UID != "uid-web" {
		t.Errorf("cluster IP claims after repair: %+v, want web's 10.96.0.60 alone", claims)
	}
	ports, _ := svcs.Ports.Claims(ctx)
	if len(ports) != 1 || ports[0].Value != "30080" {
		t.Errorf("node port claims after repair: %+v", ports)
	}
}
