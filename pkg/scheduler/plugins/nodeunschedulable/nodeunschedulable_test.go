package nodeunschedulable

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func TestFilter(t *testing.T) {
	cordoned := func(n *v1.Node) { n.Spec.Unschedulable = true }
	tolerates := func(p *v1.Pod) {
		p.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	}
	tests := []struct {
		name string
		node *v1.Node
		pod  *v1.Pod
		want string
	}{
		{"schedulable node", Node("n"), Pod("p"), ""},
		{"cordoned node", Node("n", cordoned), Pod("p"), "UnschedulableAndUnresolvable: node(s) were unschedulable"},
		{"cordoned node, pod tolerates", Node("n", cordoned), Pod("p", tolerates), ""},
	}
	pl, _ := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Outcome(Filter(t, pl, tt.pod, NodeInfo(tt.node))["n"])
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
