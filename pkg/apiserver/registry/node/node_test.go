package node

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: metav1.NewTime(now.Add(-5 * time.Minute))},
		Spec:       corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-1"}, {Type: corev1.NodeInternalIP, Address: "192.168.1.10"}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.36.0-kube-lite", OSImage: "Debian GNU/Linux 12 (bookworm)", KernelVersion: "6.1.0", ContainerRuntimeVersion: "containerd://1.6.20"},
		},
	}
}

func TestCreateKeepsStatusAndDefaultsAllocatable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	n := newNode()
	r.Strategy.Default(n)
	r.Strategy.PrepareForCreate(context.Background(), n)
	if errs := r.Strategy.Validate(context.Background(), n); len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := n.Status.Allocatable.Cpu().String(); got != "2" {
		t.Errorf("allocatable cpu = %s, want 2 (from capacity)", got)
	}
	if len(n.Status.Addresses) != 2 {
		t.Errorf("status was cleared on create: %+v", n.Status)
	}
}

func TestDefaultMirrorsPodCIDR(t *testing.T) {
	n := newNode()
	n.Spec.PodCIDRs = nil
	Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Default(n)
	if len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != "10.244.1.0/24" {
		t.Errorf("podCIDRs = %v", n.Spec.PodCIDRs)
	}
}

// A podCIDR that is not podCIDRs[0] replaces the list, as upstream's v1
// conversion does, instead of the node being refused.
func TestDefaultPodCIDRWinsOverPodCIDRs(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	n := newNode()
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.0.0.0/24", []string{"fd00::/64", "10.0.0.0/24"}
	r.Strategy.Default(n)
	if !reflect.DeepEqual(n.Spec.PodCIDRs, []string{"10.0.0.0/24"}) {
		t.Fatalf("podCIDRs = %v, want [10.0.0.0/24]", n.Spec.PodCIDRs)
	}
	if errs := r.Strategy.Validate(context.Background(), n); len(errs) > 0 {
		t.Fatal(errs)
	}

	// On update the same rule makes a changed podCIDR the forbidden change
	// it is, not a disagreement between the two fields.
	old := newNode()
	moved := old.DeepCopy()
	moved.Spec.PodCIDR = "10.244.9.0/24"
	r.Strategy.Default(moved)
	errs := r.Strategy.ValidateUpdate(context.Background(), moved, old)
	if len(errs) != 1 || errs[0].Error() != `spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid` {
		t.Fatalf("podCIDR change: %v", errs)
	}
}

// A pod CIDR the node already has passes an update even if strict parsing
// refuses it now.
func TestUpdateKeepsLegacyPodCIDR(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	old := newNode()
	old.Spec.PodCIDR, old.Spec.PodCIDRs = "10.244.1.5/24", []string{"10.244.1.5/24"}
	n := old.DeepCopy()
	n.Spec.Unschedulable = true
	if errs := r.Strategy.ValidateUpdate(context.Background(), n, old); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(n *corev1.Node)
		want   []string
	}{
		{"valid", func(n *corev1.Node) {}, nil},
		{"bad cidr", func(n *corev1.Node) { n.Spec.PodCIDR = ""; n.Spec.PodCIDRs = []string{"10.244.1.0"} },
			[]string{`spec.podCIDRs[0]: Invalid value: "10.244.1.0"`}},
		{"taint without effect", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu"}} },
			[]string{"metadata.taints[0].effect: Required value"}},
		{"duplicate taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "a", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		}, []string{`metadata.taints[1]: Duplicate value: {"Key":"a","Value":"x","Effect":"NoSchedule","TimeAdded":null}: taints must be unique by key and effect pair`}},
		// The pod CIDR cases below are what upstream 1.36's kube-apiserver answers.
		{"two cidrs of one family", func(n *corev1.Node) { n.Spec.PodCIDR = ""; n.Spec.PodCIDRs = []string{"10.0.1.0/24", "10.0.1.0/24"} },
			[]string{`spec.podCIDRs: Invalid value: ["10.0.1.0/24","10.0.1.0/24"]: may specify no more than one CIDR for each IP family`}},
		{"unparsable second cidr", func(n *corev1.Node) { n.Spec.PodCIDR = ""; n.Spec.PodCIDRs = []string{"10.0.1.0/24", "bad"} },
			[]string{
				`spec.podCIDRs[1]: Invalid value: "bad": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`,
				`spec.podCIDRs: Internal error: invalid PodCIDRs. failed to check with dual stack with error:invalid CIDR[1]: <nil> (invalid CIDR address: bad)`,
				`spec.podCIDRs: Invalid value: ["10.0.1.0/24","bad"]: may specify no more than one CIDR for each IP family`,
			}},
		{"host bits set", func(n *corev1.Node) { n.Spec.PodCIDR = ""; n.Spec.PodCIDRs = []string{"10.0.1.5/24", "fd00::1/64"} },
			[]string{
				`spec.podCIDRs[0]: Invalid value: "10.0.1.5/24": must not have bits set beyond the prefix length`,
				`spec.podCIDRs[1]: Invalid value: "fd00::1/64": must not have bits set beyond the prefix length`,
			}},
		{"leading zeros", func(n *corev1.Node) { n.Spec.PodCIDR = ""; n.Spec.PodCIDRs = []string{"010.0.1.0/24"} },
			[]string{`spec.podCIDRs[0]: Invalid value: "010.0.1.0/24": must not have leading 0s in IP or prefix length`}},
		{"dual stack", func(n *corev1.Node) { n.Spec.PodCIDR = ""; n.Spec.PodCIDRs = []string{"10.0.1.0/24", "fd00::/64"} }, nil},
		{"negative capacity", func(n *corev1.Node) { n.Status.Capacity[corev1.ResourceMemory] = resource.MustParse("-1") },
			[]string{`status.capacity[memory]: Invalid value: "-1": must be greater than or equal to 0`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode()
			tt.mutate(n)
			errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Validate(context.Background(), n)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors = %v, want %q", errs, tt.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tt.want[i]) {
					t.Errorf("error %q, want prefix %q", e.Error(), tt.want[i])
				}
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	old := newNode()

	cordoned := old.DeepCopy()
	cordoned.Spec.Unschedulable = true
	cordoned.Status.Capacity = nil
	r.Strategy.PrepareForUpdate(context.Background(), cordoned, old)
	if errs := r.Strategy.ValidateUpdate(context.Background(), cordoned, old); len(errs) > 0 {
		t.Fatalf("cordon: %v", errs)
	}
	if cordoned.Status.Capacity == nil {
		t.Error("main endpoint changed status")
	}

	moved := old.DeepCopy()
	moved.Spec.PodCIDR, moved.Spec.PodCIDRs = "10.244.2.0/24", []string{"10.244.2.0/24"}
	errs := r.Strategy.ValidateUpdate(context.Background(), moved, old)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "spec.podCIDRs: Forbidden: node updates may not change podCIDR") {
		t.Fatalf("podCIDR change: %v", errs)
	}

	status := old.DeepCopy()
	status.Spec.Unschedulable = true
	status.Status.Conditions[0].Status = corev1.ConditionFalse
	r.Status.PrepareForUpdate(context.Background(), status, old)
	if status.Spec.Unschedulable || status.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Errorf("status update: spec %+v status %+v", status.Spec, status.Status.Conditions)
	}
}

func TestTable(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(n *corev1.Node)
		want   []interface{}
	}{
		{"ready worker", func(n *corev1.Node) {},
			[]interface{}{"node-1", "Ready", "<none>", "5m", "v1.36.0-kube-lite", "192.168.1.10", "<none>", "Debian GNU/Linux 12 (bookworm)", "6.1.0", "containerd://1.6.20"}},
		{"cordoned control plane, not ready", func(n *corev1.Node) {
			n.Spec.Unschedulable = true
			n.Labels = map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "master"}
			n.Status.Conditions[0].Status = corev1.ConditionUnknown
			n.Status.NodeInfo = corev1.NodeSystemInfo{}
		}, []interface{}{"node-1", "NotReady,SchedulingDisabled", "control-plane,master", "5m", "", "192.168.1.10", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"no conditions yet", func(n *corev1.Node) { n.Status.Conditions = nil },
			[]interface{}{"node-1", "Unknown", "<none>", "5m", "v1.36.0-kube-lite", "192.168.1.10", "<none>", "Debian GNU/Linux 12 (bookworm)", "6.1.0", "containerd://1.6.20"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode()
			tt.mutate(n)
			cells, err := Resource(clocktesting.NewFakePassiveClock(now)).Table.Cells(n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cells, tt.want) {
				t.Errorf("cells = %q\nwant    %q", cells, tt.want)
			}
		})
	}
}

func TestAttrs(t *testing.T) {
	n := newNode()
	n.Spec.Unschedulable = true
	_, fs, err := Resource(clocktesting.NewFakePassiveClock(now)).ObjectAttrs(n)
	if err != nil || fs["spec.unschedulable"] != "true" || fs["metadata.name"] != "node-1" {
		t.Fatalf("fields = %v, %v", fs, err)
	}
	if _, ok := fs["metadata.namespace"]; ok {
		t.Error("cluster-scoped node has a metadata.namespace field")
	}
}
