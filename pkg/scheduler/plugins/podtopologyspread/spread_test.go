package podtopologyspread

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func spread(key string, skew int32, action v1.UnsatisfiableConstraintAction) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
			MaxSkew: skew, TopologyKey: key, WhenUnsatisfiable: action,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		})
	}
}

func web(name string) *v1.Pod { return Pod(name, PodLabels("app", "web")) }

func TestFilter(t *testing.T) {
	const skewed = "Unschedulable: node(s) didn't match pod topology spread constraints"
	tests := []struct {
		name     string
		existing map[string][]*v1.Pod
		pod      *v1.Pod
		want     map[string]string
	}{
		{
			name:     "zone a has 2, zone b 0: maxSkew 1 keeps the pod out of zone a",
			existing: map[string][]*v1.Pod{"a1": {web("w1")}, "a2": {web("w2")}},
			pod:      Pod("w3", PodLabels("app", "web"), spread("zone", 1, v1.DoNotSchedule)),
			want:     map[string]string{"a1": skewed, "a2": skewed, "b1": "", "nolabel": "UnschedulableAndUnresolvable: node(s) didn't match pod topology spread constraints (missing required label)"},
		},
		{
			name:     "maxSkew 2 allows zone a",
			existing: map[string][]*v1.Pod{"a1": {web("w1")}},
			pod:      Pod("w3", PodLabels("app", "web"), spread("zone", 2, v1.DoNotSchedule)),
			want:     map[string]string{"a1": "", "a2": "", "b1": ""},
		},
		{
			name:     "pods not matching the selector do not count",
			existing: map[string][]*v1.Pod{"a1": {Pod("other1"), Pod("other2")}},
			pod:      Pod("w3", PodLabels("app", "web"), spread("zone", 1, v1.DoNotSchedule)),
			want:     map[string]string{"a1": "", "a2": "", "b1": ""},
		},
		{
			name:     "per hostname",
			existing: map[string][]*v1.Pod{"a1": {web("w1")}, "b1": {web("w2")}},
			pod:      Pod("w3", PodLabels("app", "web"), spread(v1.LabelHostname, 1, v1.DoNotSchedule)),
			want:     map[string]string{"a1": skewed, "a2": "", "b1": skewed, "nolabel": ""},
		},
		{
			name:     "ScheduleAnyway never filters",
			existing: map[string][]*v1.Pod{"a1": {web("w1")}, "a2": {web("w2")}},
			pod:      Pod("w3", PodLabels("app", "web"), spread("zone", 1, v1.ScheduleAnyway)),
			want:     map[string]string{"a1": "", "a2": "", "b1": "", "nolabel": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a1 := NodeInfo(Node("a1", Labels("zone", "a")), tt.existing["a1"]...)
			a2 := NodeInfo(Node("a2", Labels("zone", "a")), tt.existing["a2"]...)
			b1 := NodeInfo(Node("b1", Labels("zone", "b")), tt.existing["b1"]...)
			nolabel := NodeInfo(Node("nolabel"))
			pl, _ := New(Handle(a1, a2, b1, nolabel))
			got := Filter(t, pl, tt.pod, a1, a2, b1, nolabel)
			for n, w := range tt.want {
				if g := Outcome(got[n]); g != w {
					t.Errorf("%s: got %q, want %q", n, g, w)
				}
			}
		})
	}
}

func TestScoreScheduleAnyway(t *testing.T) {
	a1 := NodeInfo(Node("a1", Labels("zone", "a")), web("w1"), web("w2"))
	a2 := NodeInfo(Node("a2", Labels("zone", "a")))
	b1 := NodeInfo(Node("b1", Labels("zone", "b")))
	pl, _ := New(Handle(a1, a2, b1))
	got := Score(t, pl, Pod("w3", PodLabels("app", "web"), spread("zone", 1, v1.ScheduleAnyway)), a1, a2, b1)
	if !(got["b1"] > got["a1"] && got["b1"] > got["a2"]) || got["a1"] != got["a2"] {
		t.Errorf("scores %v: want the empty zone b best and both zone-a nodes equal", got)
	}
	if got := Score(t, pl, Pod("plain"), a1); got != nil {
		t.Errorf("pod without constraints scored %v, want skipped", got)
	}
}
