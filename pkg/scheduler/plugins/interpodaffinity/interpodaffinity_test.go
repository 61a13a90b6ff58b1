package interpodaffinity

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
