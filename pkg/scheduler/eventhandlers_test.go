package scheduler

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestNodeChanges(t *testing.T) {
	base := testNode("n", "4", 110)
	tests := []struct {
		name   string
		change func(n *v1.Node)
		want   []clusterEvent
	}{
		{"heartbeat only", func(n *v1.Node) {
			n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
		}, nil},
		{"allocatable", func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("8") }, []clusterEvent{nodeAllocatable}},
		{"label", func(n *v1.Node) { n.Labels["zone"] = "a" }, []clusterEvent{nodeLabel}},
		{"taint", func(n *v1.Node) { n.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}} }, []clusterEvent{nodeTaint}},
		{"cordon", func(n *v1.Node) { n.Spec.Unschedulable = true }, []clusterEvent{nodeSpecUnschedulable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tt.change(cur)
			if got := nodeChanges(base, cur); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestResponsibleFor(t *testing.T) {
	s := &Scheduler{name: DefaultSchedulerName}
	tests := []struct {
		name string
		pod  func(p *v1.Pod)
		want bool
	}{
		{"default scheduler name", func(*v1.Pod) {}, true},
		{"explicit default", func(p *v1.Pod) { p.Spec.SchedulerName = DefaultSchedulerName }, true},
		{"other scheduler", func(p *v1.Pod) { p.Spec.SchedulerName = "custom" }, false},
		{"already bound", func(p *v1.Pod) { p.Spec.NodeName = "n" }, false},
		{"finished", func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod("p", "1")
			tt.pod(p)
			if got := s.responsibleFor(p); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
