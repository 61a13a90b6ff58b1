package noderesourcesfit

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func initContainer(cpu string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "init", Image: "busybox",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}})
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name     string
		node     *v1.Node
		existing []*v1.Pod
		pod      *v1.Pod
		want     string
	}{
		{"fits empty node", Node("n"), nil, Pod("p", Requests("cpu", "1", "memory", "1Gi")), ""},
		{"fits exactly", Node("n"), []*v1.Pod{Pod("e", Requests("cpu", "3"))}, Pod("p", Requests("cpu", "1")), ""},
		{"insufficient cpu", Node("n"), []*v1.Pod{Pod("e", Requests("cpu", "3500m"))}, Pod("p", Requests("cpu", "1")),
			"Unschedulable: Insufficient cpu"},
		{"insufficient cpu and memory", Node("n"), nil, Pod("p", Requests("cpu", "5", "memory", "9Gi")),
			"Unschedulable: Insufficient cpu, Insufficient memory"},
		{"init container larger than the app containers", Node("n"), nil, Pod("p", Requests("cpu", "1"), initContainer("5")),
			"Unschedulable: Insufficient cpu"},
		{"init container counted as max, not sum", Node("n"), nil, Pod("p", Requests("cpu", "3"), initContainer("3")), ""},
		{"too many pods", Node("n", Allocatable("pods", "1")), []*v1.Pod{Pod("e")}, Pod("p"), "Unschedulable: Too many pods"},
		{"pod without requests fits a full node", Node("n", Allocatable("cpu", "1")), []*v1.Pod{Pod("e", Requests("cpu", "1"))}, Pod("p"), ""},
		{"extended resource missing", Node("n"), nil, Pod("p", Requests("example.com/gpu", "1")), "Unschedulable: Insufficient example.com/gpu"},
		{"extended resource present", Node("n", Allocatable("example.com/gpu", "2")), nil, Pod("p", Requests("example.com/gpu", "1")), ""},
	}
	pl, _ := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Outcome(Filter(t, pl, tt.pod, NodeInfo(tt.node, tt.existing...))["n"]); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScoreLeastAllocated(t *testing.T) {
	empty := NodeInfo(Node("empty"))
	half := NodeInfo(Node("half"), Pod("e", Requests("cpu", "2", "memory", "4Gi")))
	pl, _ := New(nil)
	got := Score(t, pl, Pod("p", Requests("cpu", "1", "memory", "1Gi")), empty, half)
	// empty: cpu (4-1)/4=75, mem (8-1)/8=87 → 81; half: cpu 25, mem 37 → 31.
	want := map[string]int64{"empty": 81, "half": 31}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("score[%s] = %d, want %d", n, got[n], w)
		}
	}
}

func TestFilterDoesNotAllocateWhenFitting(t *testing.T) {
	pl, _ := New(nil)
	pi := framework.NewPodInfo(Pod("p", Requests("cpu", "1")))
	ni := NodeInfo(Node("n"))
	f := pl.(framework.FilterPlugin)
	allocs := testing.AllocsPerRun(100, func() { _ = f.Filter(t.Context(), nil, pi, ni) })
	if allocs != 0 {
		t.Errorf("Filter allocates %v times per call on a fitting node", allocs)
	}
}
