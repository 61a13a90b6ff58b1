package interpodaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func term(key, value, topology string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}, TopologyKey: topology}
}

func affinity(t v1.PodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{t}}}
	}
}

func antiAffinity(t v1.PodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{t}}}
	}
}

func TestFilter(t *testing.T) {
	const (
		hostname = v1.LabelHostname
		zone     = "zone"
	)
	tests := []struct {
		name     string
		existing map[string][]*v1.Pod // node → pods
		pod      *v1.Pod
		want     map[string]string // node → outcome
	}{
		{
			name:     "affinity to a pod on n1 by hostname",
			existing: map[string][]*v1.Pod{"n1": {Pod("db", PodLabels("app", "db"))}},
			pod:      Pod("web", affinity(term("app", "db", hostname))),
			want:     map[string]string{"n1": "", "n2": "UnschedulableAndUnresolvable: node(s) didn't match pod affinity rules", "n3": "UnschedulableAndUnresolvable: node(s) didn't match pod affinity rules"},
		},
		{
			name:     "affinity by zone reaches the other node of the zone",
			existing: map[string][]*v1.Pod{"n1": {Pod("db", PodLabels("app", "db"))}},
			pod:      Pod("web", affinity(term("app", "db", zone))),
			want:     map[string]string{"n1": "", "n2": "", "n3": "UnschedulableAndUnresolvable: node(s) didn't match pod affinity rules"},
		},
		{
			name:     "first pod of a self-selecting group goes anywhere",
			existing: nil,
			pod:      Pod("web", PodLabels("app", "web"), affinity(term("app", "web", hostname))),
			want:     map[string]string{"n1": "", "n2": "", "n3": ""},
		},
		{
			name:     "anti-affinity keeps replicas apart",
			existing: map[string][]*v1.Pod{"n1": {Pod("web-1", PodLabels("app", "web"))}},
			pod:      Pod("web-2", PodLabels("app", "web"), antiAffinity(term("app", "web", hostname))),
			want:     map[string]string{"n1": "Unschedulable: node(s) didn't match pod anti-affinity rules", "n2": "", "n3": ""},
		},
		{
			name:     "existing pod's anti-affinity is symmetric",
			existing: map[string][]*v1.Pod{"n3": {Pod("loner", antiAffinity(term("app", "web", zone)))}},
			pod:      Pod("web", PodLabels("app", "web")),
			want:     map[string]string{"n1": "", "n2": "", "n3": "Unschedulable: node(s) didn't satisfy existing pods anti-affinity rules"},
		},
		{
			name:     "other namespaces do not count",
			existing: map[string][]*v1.Pod{"n1": {Pod("db", PodLabels("app", "db"), func(p *v1.Pod) { p.Namespace = "other" })}},
			pod:      Pod("web-2", antiAffinity(term("app", "db", hostname))),
			want:     map[string]string{"n1": "", "n2": "", "n3": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n1 := NodeInfo(Node("n1", Labels(zone, "a")), tt.existing["n1"]...)
			n2 := NodeInfo(Node("n2", Labels(zone, "a")), tt.existing["n2"]...)
			n3 := NodeInfo(Node("n3", Labels(zone, "b")), tt.existing["n3"]...)
			pl, _ := New(Handle(n1, n2, n3))
			got := Filter(t, pl, tt.pod, n1, n2, n3)
			for n, w := range tt.want {
				if g := Outcome(got[n]); g != w {
					t.Errorf("%s: got %q, want %q", n, g, w)
				}
			}
		})
	}
}

func TestScorePreferred(t *testing.T) {
	pod := Pod("web", func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{
			PodAffinity:     &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: term("app", "cache", v1.LabelHostname)}}},
			PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: term("app", "batch", v1.LabelHostname)}}},
		}
	})
	withCache := NodeInfo(Node("cache"), Pod("c", PodLabels("app", "cache")))
	plain := NodeInfo(Node("plain"))
	withBatch := NodeInfo(Node("batch"), Pod("b", PodLabels("app", "batch")))
	pl, _ := New(Handle(withCache, plain, withBatch))
	got := Score(t, pl, pod, withCache, plain, withBatch)
	want := map[string]int64{"cache": 100, "plain": 50, "batch": 0}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("score[%s] = %d, want %d", n, got[n], w)
		}
	}
	if got := Score(t, pl, Pod("plain-pod"), withCache, plain); got != nil {
		t.Errorf("pod without terms, no pods with affinity: scored %v, want skipped", got)
	}
}

// TestPreemptionChangesFirstOfGroup: preemption removes and adds pods through
// AddPod/RemovePod; whether the pod may start its own group follows the
// live counts, not what PreFilter saw.
func TestPreemptionChangesFirstOfGroup(t *testing.T) {
	const zone = "zone"
	ctx := context.Background()
	web := Pod("web", PodLabels("app", "web"), affinity(term("app", "web", v1.LabelHostname)))
	victim := framework.NewPodInfo(Pod("web-old", PodLabels("app", "web"), On("n1")))
	n1 := NodeInfo(Node("n1", Labels(zone, "a")), victim.Pod)
	n2 := NodeInfo(Node("n2", Labels(zone, "a")))
	pl, _ := New(Handle(n1, n2))
	p := pl.(*Plugin)
	pi := framework.NewPodInfo(web)
	filter := func(state *framework.CycleState, ni *framework.NodeInfo) string {
		t.Helper()
		st := p.Filter(ctx, state, pi, ni)
		if st.Code() == framework.Error {
			t.Fatalf("Filter: %v", st.AsError())
		}
		return Outcome(st)
	}
	const notMatch = "UnschedulableAndUnresolvable: node(s) didn't match pod affinity rules"

	state := framework.NewCycleState()
	if st := p.PreFilter(ctx, state, pi); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st.AsError())
	}
	if got := filter(state, n2); got != notMatch {
		t.Fatalf("n2 with web-old on n1: got %q, want %q", got, notMatch)
	}

	// Preempting the only matching pod leaves none: web starts the group.
	removed := state.Clone()
	if st := p.RemovePod(ctx, removed, pi, victim, n1); !st.IsSuccess() {
		t.Fatalf("RemovePod: %v", st.AsError())
	}
	if got := filter(removed, n2); got != "" {
		t.Errorf("n2 after removing web-old: got %q, want it to fit", got)
	}

	// A matching nominated pod added on n1 ends the special case again.
	readded := removed.Clone()
	if st := p.AddPod(ctx, readded, pi, framework.NewPodInfo(Pod("web-nominated", PodLabels("app", "web"))), n1); !st.IsSuccess() {
		t.Fatalf("AddPod: %v", st.AsError())
	}
	if got := filter(readded, n2); got != notMatch {
		t.Errorf("n2 after adding web-nominated on n1: got %q, want %q", got, notMatch)
	}
	if got := filter(readded, n1); got != "" {
		t.Errorf("n1 after adding web-nominated: got %q, want it to fit", got)
	}

	// Starting from an empty cluster, a nominated matching pod also ends it.
	empty1 := NodeInfo(Node("n1", Labels(zone, "a")))
	pl2, _ := New(Handle(empty1, n2))
	p = pl2.(*Plugin)
	state = framework.NewCycleState()
	if st := p.PreFilter(ctx, state, pi); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st.AsError())
	}
	if got := filter(state, n2); got != "" {
		t.Fatalf("n2 in an empty cluster: got %q, want it to fit", got)
	}
	if st := p.AddPod(ctx, state, pi, framework.NewPodInfo(Pod("web-nominated", PodLabels("app", "web"))), empty1); !st.IsSuccess() {
		t.Fatalf("AddPod: %v", st.AsError())
	}
	if got := filter(state, n2); got != notMatch {
		t.Errorf("n2 after adding web-nominated on n1: got %q, want %q", got, notMatch)
	}
}

// TestFilterOnePodMatchesAllTerms: as upstream, a node satisfies several
// affinity terms only through pods that each match all of them.
func TestFilterOnePodMatchesAllTerms(t *testing.T) {
	pod := Pod("web", func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{
			term("app", "db", v1.LabelHostname), term("tier", "backend", v1.LabelHostname),
		}}}
	})
	split := NodeInfo(Node("split"), Pod("db", PodLabels("app", "db")), Pod("cache", PodLabels("tier", "backend")))
	both := NodeInfo(Node("both"), Pod("db-backend", PodLabels("app", "db", "tier", "backend")))
	pl, _ := New(Handle(split, both))
	got := Filter(t, pl, pod, split, both)
	if g, w := Outcome(got["split"]), "UnschedulableAndUnresolvable: node(s) didn't match pod affinity rules"; g != w {
		t.Errorf("split: got %q, want %q", g, w)
	}
	if g := Outcome(got["both"]); g != "" {
		t.Errorf("both: got %q, want it to fit", g)
	}
}
