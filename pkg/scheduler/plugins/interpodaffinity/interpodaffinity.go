// Package interpodaffinity places pods relative to other pods: required
// affinity and anti-affinity (of the incoming pod and, symmetrically, of the
// pods already placed) filter nodes; preferred terms score them. Topology is
// any node label (kubernetes.io/hostname for per-node rules).
package interpodaffinity

import (
	"context"
	"maps"

	v1 "k8s.io/api/core/v1"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the plugin name.
const Name = "InterPodAffinity"

// Upstream's reasons.
const (
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	ErrReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ErrReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
)

// hardPodAffinityWeight is what an existing pod's required affinity to the
// incoming pod adds to the score (upstream's default).
const hardPodAffinityWeight = 1

// Plugin implements PreFilter, Filter, PreScore, Score and NormalizeScore.
type Plugin struct {
	h framework.Handle
}

// New builds the plugin.
func New(h framework.Handle) (framework.Plugin, error) { return &Plugin{h: h}, nil }

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

// topologyCounts counts matching pods per topology key and value.
type topologyCounts map[string]map[string]int64

func (t topologyCounts) add(key, value string, n int64) {
	m := t[key]
	if m == nil {
		m = map[string]int64{}
		t[key] = m
	}
	m[value] += n
	// Preemption's RemovePod takes counts back down: a domain at zero is
	// gone, so an empty map means no pod counts anywhere.
	if m[value] == 0 {
		delete(m, value)
		if len(m) == 0 {
			delete(t, key)
		}
	}
}

func (t topologyCounts) get(key, value string) int64 { return t[key][value] }

type preFilterState struct {
	// existingAnti: pairs where an existing pod's required anti-affinity
	// matches the incoming pod.
	existingAnti topologyCounts
	// affinity: pairs with pods matching all of the incoming pod's required
	// affinity terms, counted under each term's topology key. Kept live by
	// AddPod/RemovePod, so when it is empty no pod anywhere matches and a pod
	// matching its own terms may start the group.
	affinity topologyCounts
	// anti[i]: pairs with pods matching the incoming pod's i-th required
	// anti-affinity term.
	anti      []topologyCounts
	selfMatch bool
}

const preFilterKey framework.StateKey = Name + "/filter"

// Clone implements framework.StateCloner.
func (s *preFilterState) Clone() framework.StateData {
	c := *s
	c.existingAnti = s.existingAnti.clone()
	c.affinity = s.affinity.clone()
	c.anti = cloneAll(s.anti)
	return &c
}

func (t topologyCounts) clone() topologyCounts {
	c := make(topologyCounts, len(t))
	for k, m := range t {
		c[k] = maps.Clone(m)
	}
	return c
}

func cloneAll(ts []topologyCounts) []topologyCounts {
	if ts == nil {
		return nil
	}
	out := make([]topologyCounts, len(ts))
	for i, t := range ts {
		out[i] = t.clone()
	}
	return out
}

// AddPod implements framework.PreFilterExtensions.
func (p *Plugin) AddPod(_ context.Context, state *framework.CycleState, pod, add *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return updateWithPod(state, pod, add, node, 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (p *Plugin) RemovePod(_ context.Context, state *framework.CycleState, pod, remove *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return updateWithPod(state, pod, remove, node, -1)
}

// updateWithPod counts (n = 1) or uncounts (n = -1) other on node in the
// PreFilter state, as PreFilter would have.
func updateWithPod(state *framework.CycleState, pod, other *framework.PodInfo, node *framework.NodeInfo, n int64) *framework.Status {
	s, _ := state.Read(preFilterKey).(*preFilterState)
	if s == nil {
		return framework.NewStatus(framework.Error, "InterPodAffinity: PreFilter state missing")
	}
	labels := node.Node().Labels
	s.existingAnti.addAntiOf(other, pod.Pod, labels, n)
	s.addAffinity(pod, other.Pod, labels, n)
	s.addAnti(pod, other.Pod, labels, n)
	return nil
}

// addAffinity counts (n = 1) or uncounts (n = -1) other, on a node with
// labels, under each of pod's required affinity terms' topology keys, if it
// matches all of them: one pod must satisfy the whole set.
func (s *preFilterState) addAffinity(pod *framework.PodInfo, other *v1.Pod, labels map[string]string, n int64) {
	if !matchesAll(pod.RequiredAffinity, other) {
		return
	}
	for i := range pod.RequiredAffinity {
		t := &pod.RequiredAffinity[i]
		if v, ok := labels[t.TopologyKey]; ok {
			s.affinity.add(t.TopologyKey, v, n)
		}
	}
}

// matchesAll reports whether pod matches every term (and there is one).
func matchesAll(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod) {
			return false
		}
	}
	return true
}

// addAntiOf counts (n = 1) or uncounts (n = -1) the required anti-affinity
// terms of ex, on a node with labels, that match pod.
func (t topologyCounts) addAntiOf(ex *framework.PodInfo, pod *v1.Pod, labels map[string]string, n int64) {
	for i := range ex.RequiredAntiAffinity {
		term := &ex.RequiredAntiAffinity[i]
		if v, ok := labels[term.TopologyKey]; ok && term.Matches(pod) {
			t.add(term.TopologyKey, v, n)
		}
	}
}

// addAnti counts (n = 1) or uncounts (n = -1) other, on a node with labels,
// for each of pod's required anti-affinity terms it matches.
func (s *preFilterState) addAnti(pod *framework.PodInfo, other *v1.Pod, labels map[string]string, n int64) {
	for i := range pod.RequiredAntiAffinity {
		t := &pod.RequiredAntiAffinity[i]
		if v, ok := labels[t.TopologyKey]; ok && t.Matches(other) {
			s.anti[i].add(t.TopologyKey, v, n)
		}
	}
}

// PreFilter counts, per topology domain, the pods that the rules involve.
func (p *Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo) *framework.Status {
	if pod.ParseError != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pod.ParseError.Error())
	}
	lister := p.h.SnapshotLister()
	withAnti := lister.HavePodsWithRequiredAntiAffinityList()
	if len(pod.RequiredAffinity) == 0 && len(pod.RequiredAntiAffinity) == 0 && len(withAnti) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{existingAnti: topologyCounts{}}
	for _, ni := range withAnti {
		labels := ni.Node().Labels
		for _, ex := range ni.PodsWithRequiredAntiAffinity {
			s.existingAnti.addAntiOf(ex, pod.Pod, labels, 1)
		}
	}
	if len(pod.RequiredAffinity) > 0 || len(pod.RequiredAntiAffinity) > 0 {
		s.affinity = topologyCounts{}
		s.anti = make([]topologyCounts, len(pod.RequiredAntiAffinity))
		for i := range s.anti {
			s.anti[i] = topologyCounts{}
		}
		for _, ni := range lister.List() {
			labels := ni.Node().Labels
			for _, ex := range ni.Pods {
				s.addAffinity(pod, ex.Pod, labels, 1)
				s.addAnti(pod, ex.Pod, labels, 1)
			}
		}
		s.selfMatch = matchesAll(pod.RequiredAffinity, pod.Pod)
	}
	state.Write(preFilterKey, s)
	return nil
}

// Filter implements framework.FilterPlugin.
func (p *Plugin) Filter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	s, _ := state.Read(preFilterKey).(*preFilterState)
	if s == nil {
		return framework.NewStatus(framework.Error, "InterPodAffinity: PreFilter state missing")
	}
	labels := node.Node().Labels
	for key, vals := range s.existingAnti {
		if v, ok := labels[key]; ok && vals[v] > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
		}
	}
	for i := range pod.RequiredAntiAffinity {
		t := &pod.RequiredAntiAffinity[i]
		if v, ok := labels[t.TopologyKey]; ok && s.anti[i].get(t.TopologyKey, v) > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
		}
	}
	if len(pod.RequiredAffinity) > 0 {
		allHaveKeys := true
		fits := true
		for i := range pod.RequiredAffinity {
			t := &pod.RequiredAffinity[i]
			v, ok := labels[t.TopologyKey]
			if !ok {
				allHaveKeys = false
				fits = false
				break
			}
			if s.affinity.get(t.TopologyKey, v) <= 0 {
				fits = false
			}
		}
		// The first pod of a group that selects itself may go anywhere that
		// has the topology labels.
		if !fits && !(allHaveKeys && len(s.affinity) == 0 && s.selfMatch) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
		}
	}
	return nil
}

type preScoreState struct {
	scores topologyCounts
}

const preScoreKey framework.StateKey = Name + "/score"

// PreScore sums the weights of preferred terms (and of existing pods'
// terms towards the incoming pod) per topology domain.
func (p *Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	lister := p.h.SnapshotLister()
	hasPreferred := len(pod.PreferredAffinity)+len(pod.PreferredAntiAffinity) > 0
	nodes := lister.HavePodsWithAffinityList()
	if hasPreferred {
		nodes = lister.List()
	}
	if len(nodes) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{scores: topologyCounts{}}
	for _, ni := range nodes {
		labels := ni.Node().Labels
		pods := ni.PodsWithAffinity
		if hasPreferred {
			pods = ni.Pods
		}
		for _, ex := range pods {
			score := func(t *framework.AffinityTerm, target *framework.PodInfo, w int64) {
				if v, ok := labels[t.TopologyKey]; ok && t.Matches(target.Pod) {
					s.scores.add(t.TopologyKey, v, w)
				}
			}
			for i := range pod.PreferredAffinity {
				score(&pod.PreferredAffinity[i].AffinityTerm, ex, int64(pod.PreferredAffinity[i].Weight))
			}
			for i := range pod.PreferredAntiAffinity {
				score(&pod.PreferredAntiAffinity[i].AffinityTerm, ex, -int64(pod.PreferredAntiAffinity[i].Weight))
			}
			for i := range ex.RequiredAffinity {
				score(&ex.RequiredAffinity[i], pod, hardPodAffinityWeight)
			}
			for i := range ex.PreferredAffinity {
				score(&ex.PreferredAffinity[i].AffinityTerm, pod, int64(ex.PreferredAffinity[i].Weight))
			}
			for i := range ex.PreferredAntiAffinity {
				score(&ex.PreferredAntiAffinity[i].AffinityTerm, pod, -int64(ex.PreferredAntiAffinity[i].Weight))
			}
		}
	}
	if len(s.scores) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score sums the domain scores of the node's topology values. Raw scores
// may be negative; NormalizeScore maps them into [0, 100].
func (p *Plugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	s, _ := state.Read(preScoreKey).(*preScoreState)
	if s == nil {
		return 0, framework.NewStatus(framework.Error, "InterPodAffinity: PreScore state missing")
	}
	var total int64
	labels := node.Node().Labels
	for key, vals := range s.scores {
		if v, ok := labels[key]; ok {
			total += vals[v]
		}
	}
	return total, nil
}

// NormalizeScore maps [min, max] onto [0, 100].
func (*Plugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	if len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo = min(lo, s.Score)
		hi = max(hi, s.Score)
	}
	for i := range scores {
		if hi == lo {
			scores[i].Score = 0
			continue
		}
		scores[i].Score = framework.MaxNodeScore * (scores[i].Score - lo) / (hi - lo)
	}
	return nil
}
