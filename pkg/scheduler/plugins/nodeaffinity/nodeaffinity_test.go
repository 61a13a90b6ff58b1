package nodeaffinity

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func selector(kv ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func required(terms ...v1.NodeSelectorTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
	}
}

func expr(key string, op v1.NodeSelectorOperator, vals ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: vals}}}
}

func TestFilter(t *testing.T) {
	const mismatch = "UnschedulableAndUnresolvable: node(s) didn't match Pod's node affinity/selector"
	node := Node("n", Labels("zone", "a", "disk", "ssd"))
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"no selector", Pod("p"), ""},
		{"nodeSelector matches", Pod("p", selector("zone", "a")), ""},
		{"nodeSelector mismatch", Pod("p", selector("zone", "b")), mismatch},
		{"required In matches", Pod("p", required(expr("zone", v1.NodeSelectorOpIn, "a", "b"))), ""},
		{"required NotIn excludes", Pod("p", required(expr("zone", v1.NodeSelectorOpNotIn, "a"))), mismatch},
		{"terms are ORed", Pod("p", required(expr("zone", v1.NodeSelectorOpIn, "x"), expr("disk", v1.NodeSelectorOpExists))), ""},
		{"selector and affinity are ANDed", Pod("p", selector("zone", "b"), required(expr("disk", v1.NodeSelectorOpExists))), mismatch},
		{"matchFields on the node name", Pod("p", required(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"other"}}}})), mismatch},
	}
	pl, _ := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Outcome(Filter(t, pl, tt.pod, NodeInfo(node))["n"]); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScorePreferred(t *testing.T) {
	pod := Pod("p", func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
			{Weight: 10, Preference: expr("zone", v1.NodeSelectorOpIn, "a")},
			{Weight: 30, Preference: expr("disk", v1.NodeSelectorOpIn, "ssd")},
		}}}
	})
	pl, _ := New(nil)
	got := Score(t, pl, pod,
		NodeInfo(Node("both", Labels("zone", "a", "disk", "ssd"))),
		NodeInfo(Node("ssd", Labels("disk", "ssd"))),
		NodeInfo(Node("none")))
	want := map[string]int64{"both": 100, "ssd": 75, "none": 0}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("score[%s] = %d, want %d", n, got[n], w)
		}
	}
	if got := Score(t, pl, Pod("plain"), NodeInfo(Node("n"))); got != nil {
		t.Errorf("pod without preferences scored %v, want skipped", got)
	}
}
