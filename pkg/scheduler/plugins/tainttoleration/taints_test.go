package tainttoleration

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func tolerate(key, value string, op v1.TolerationOperator, effect v1.TaintEffect) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Value: value, Operator: op, Effect: effect})
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		node *v1.Node
		pod  *v1.Pod
		want string
	}{
		{"no taints", Node("n"), Pod("p"), ""},
		{"NoSchedule untolerated", Node("n", Taint("k", "v", v1.TaintEffectNoSchedule)), Pod("p"),
			"UnschedulableAndUnresolvable: node(s) had untolerated taint {k: v}"},
		{"NoExecute untolerated, empty value", Node("n", Taint("dedicated", "", v1.TaintEffectNoExecute)), Pod("p"),
			"UnschedulableAndUnresolvable: node(s) had untolerated taint {dedicated: }"},
		{"PreferNoSchedule does not filter", Node("n", Taint("k", "v", v1.TaintEffectPreferNoSchedule)), Pod("p"), ""},
		{"tolerated with Equal", Node("n", Taint("k", "v", v1.TaintEffectNoSchedule)),
			Pod("p", tolerate("k", "v", v1.TolerationOpEqual, v1.TaintEffectNoSchedule)), ""},
		{"wrong value not tolerated", Node("n", Taint("k", "v", v1.TaintEffectNoSchedule)),
			Pod("p", tolerate("k", "w", v1.TolerationOpEqual, v1.TaintEffectNoSchedule)),
			"UnschedulableAndUnresolvable: node(s) had untolerated taint {k: v}"},
		{"Exists with empty effect tolerates all effects", Node("n", Taint("k", "v", v1.TaintEffectNoExecute)),
			Pod("p", tolerate("k", "", v1.TolerationOpExists, "")), ""},
	}
	pl, _ := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Outcome(Filter(t, pl, tt.pod, NodeInfo(tt.node))["n"]); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScorePreferNoSchedule(t *testing.T) {
	clean := NodeInfo(Node("clean"))
	one := NodeInfo(Node("one", Taint("a", "", v1.TaintEffectPreferNoSchedule)))
	two := NodeInfo(Node("two", Taint("a", "", v1.TaintEffectPreferNoSchedule), Taint("b", "", v1.TaintEffectPreferNoSchedule)))
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		{"fewer untolerated taints score higher", Pod("p"), map[string]int64{"clean": 100, "one": 50, "two": 0}},
		{"tolerated taints do not count", Pod("p", tolerate("b", "", v1.TolerationOpExists, v1.TaintEffectPreferNoSchedule)),
			map[string]int64{"clean": 100, "one": 0, "two": 0}},
	}
	pl, _ := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Score(t, pl, tt.pod, clean, one, two)
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("score[%s] = %d, want %d", n, got[n], w)
				}
			}
		})
	}
}
