// Package podtopologyspread spreads matching pods across topology domains:
// DoNotSchedule constraints filter nodes where the skew would exceed
// maxSkew; ScheduleAnyway constraints prefer nodes in less crowded domains.
package podtopologyspread

import (
	"context"
	"fmt"
	"maps"
	"math"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the plugin name.
const Name = "PodTopologySpread"

// Upstream's reasons.
const (
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	ErrReasonNodeLabelNotMatch   = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// Plugin implements PreFilter, Filter, PreScore, Score and NormalizeScore.
type Plugin struct {
	h framework.Handle
}

// New builds the plugin.
func New(h framework.Handle) (framework.Plugin, error) { return &Plugin{h: h}, nil }

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

type constraint struct {
	maxSkew     int32
	minDomains  int32
	topologyKey string
	selector    labels.Selector
	selfMatch   int64
}

func buildConstraints(pod *v1.Pod, want v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != want {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("topology spread selector: %w", err)
		}
		// matchLabelKeys narrows the selector to pods sharing the incoming
		// pod's values of those keys (e.g. pod-template-hash).
		for _, k := range c.MatchLabelKeys {
			if v, ok := pod.Labels[k]; ok {
				r, err := labels.NewRequirement(k, "=", []string{v})
				if err != nil {
					return nil, fmt.Errorf("matchLabelKeys: %w", err)
				}
				sel = sel.Add(*r)
			}
		}
		minDomains := int32(1)
		if c.MinDomains != nil {
			minDomains = *c.MinDomains
		}
		ct := constraint{maxSkew: c.MaxSkew, minDomains: minDomains, topologyKey: c.TopologyKey, selector: sel}
		if sel.Matches(labels.Set(pod.Labels)) {
			ct.selfMatch = 1
		}
		out = append(out, ct)
	}
	return out, nil
}

// counts returns, per constraint, matching pods per domain over the nodes
// that pass the pod's node affinity and carry every constraint's key
// (upstream's default node inclusion policy).
func counts(pod *v1.Pod, cs []constraint, req nodeaffinity.RequiredNodeAffinity, nodes []*framework.NodeInfo) []map[string]int64 {
	out := make([]map[string]int64, len(cs))
	for i := range out {
		out[i] = map[string]int64{}
	}
	for _, ni := range nodes {
		node := ni.Node()
		if !included(req, node, cs) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			v := node.Labels[c.topologyKey]
			n := int64(0)
			for _, p := range ni.Pods {
				if countable(pod, p.Pod) && c.selector.Matches(labels.Set(p.Pod.Labels)) {
					n++
				}
			}
			out[i][v] += n
		}
	}
	return out
}

// included reports whether node's pods count: it passes the pod's node
// affinity and carries every constraint's key.
func included(req nodeaffinity.RequiredNodeAffinity, node *v1.Node, cs []constraint) bool {
	if ok, _ := req.Match(node); !ok {
		return false
	}
	return hasAllKeys(node.Labels, cs)
}

// countable reports whether other may count for pod's constraints (whose
// selectors then decide).
func countable(pod, other *v1.Pod) bool {
	return other.Namespace == pod.Namespace && other.DeletionTimestamp == nil
}

func hasAllKeys(nodeLabels map[string]string, cs []constraint) bool {
	for i := range cs {
		if _, ok := nodeLabels[cs[i].topologyKey]; !ok {
			return false
		}
	}
	return true
}

type preFilterState struct {
	constraints []constraint
	// req is the pod's required node affinity, which decides the nodes
	// whose pods count.
	req      nodeaffinity.RequiredNodeAffinity
	counts   []map[string]int64
	minMatch []int64
}

const preFilterKey framework.StateKey = Name + "/filter"

// PreFilter counts matching pods per domain for DoNotSchedule constraints.
func (p *Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo) *framework.Status {
	cs, err := buildConstraints(pod.Pod, v1.DoNotSchedule)
	if err != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	req := nodeaffinity.GetRequiredNodeAffinity(pod.Pod)
	s := &preFilterState{constraints: cs, req: req, counts: counts(pod.Pod, cs, req, p.h.SnapshotLister().List())}
	s.minMatch = make([]int64, len(cs))
	s.updateMin()
	state.Write(preFilterKey, s)
	return nil
}

func (s *preFilterState) updateMin() {
	for i, m := range s.counts {
		lo := int64(math.MaxInt64)
		for _, n := range m {
			lo = min(lo, n)
		}
		// Fewer domains than minDomains: the global minimum is taken as 0.
		if lo == math.MaxInt64 || int32(len(m)) < s.constraints[i].minDomains {
			lo = 0
		}
		s.minMatch[i] = lo
	}
}

// Clone implements framework.StateCloner.
func (s *preFilterState) Clone() framework.StateData {
	c := &preFilterState{constraints: s.constraints, req: s.req, counts: make([]map[string]int64, len(s.counts)), minMatch: append([]int64(nil), s.minMatch...)}
	for i, m := range s.counts {
		c.counts[i] = maps.Clone(m)
	}
	return c
}

// AddPod implements framework.PreFilterExtensions.
func (p *Plugin) AddPod(_ context.Context, state *framework.CycleState, pod, add *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return updateWithPod(state, pod, add, node, 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (p *Plugin) RemovePod(_ context.Context, state *framework.CycleState, pod, remove *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return updateWithPod(state, pod, remove, node, -1)
}

// updateWithPod counts (n = 1) or uncounts (n = -1) other on node, where
// PreFilter would have counted it.
func updateWithPod(state *framework.CycleState, pod, other *framework.PodInfo, node *framework.NodeInfo, n int64) *framework.Status {
	s, _ := state.Read(preFilterKey).(*preFilterState)
	if s == nil {
		return framework.NewStatus(framework.Error, "PodTopologySpread: PreFilter state missing")
	}
	nd := node.Node()
	if !countable(pod.Pod, other.Pod) || !included(s.req, nd, s.constraints) {
		return nil
	}
	for i := range s.constraints {
		c := &s.constraints[i]
		if c.selector.Matches(labels.Set(other.Pod.Labels)) {
			s.counts[i][nd.Labels[c.topologyKey]] += n
		}
	}
	s.updateMin()
	return nil
}

// Filter implements framework.FilterPlugin.
func (p *Plugin) Filter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	s, _ := state.Read(preFilterKey).(*preFilterState)
	if s == nil {
		return framework.NewStatus(framework.Error, "PodTopologySpread: PreFilter state missing")
	}
	nodeLabels := node.Node().Labels
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := nodeLabels[c.topologyKey]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		if skew := s.counts[i][v] + c.selfMatch - s.minMatch[i]; skew > int64(c.maxSkew) {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

type preScoreState struct {
	constraints []constraint
	counts      []map[string]int64
	weights     []float64
}

const preScoreKey framework.StateKey = Name + "/score"

// PreScore counts matching pods per domain for ScheduleAnyway constraints.
func (p *Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	cs, err := buildConstraints(pod.Pod, v1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{constraints: cs, counts: counts(pod.Pod, cs, nodeaffinity.GetRequiredNodeAffinity(pod.Pod), p.h.SnapshotLister().List())}
	for i := range cs {
		// More domains weigh more, as upstream: log(domains + 2).
		s.weights = append(s.weights, math.Log(float64(len(s.counts[i])+2)))
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score is the weighted count of matching pods in the node's domains
// (lower is better; see NormalizeScore). Nodes missing a key score -1.
func (p *Plugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	s, _ := state.Read(preScoreKey).(*preScoreState)
	if s == nil {
		return 0, framework.NewStatus(framework.Error, "PodTopologySpread: PreScore state missing")
	}
	nodeLabels := node.Node().Labels
	var score float64
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := nodeLabels[c.topologyKey]
		if !ok {
			return -1, nil
		}
		score += float64(s.counts[i][v])*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// NormalizeScore gives the least crowded node 100 and nodes without the
// topology keys 0.
func (*Plugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, s := range scores {
		if s.Score < 0 {
			continue
		}
		lo = min(lo, s.Score)
		hi = max(hi, s.Score)
	}
	for i := range scores {
		switch {
		case scores[i].Score < 0:
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (hi + lo - scores[i].Score) / hi
		}
	}
	return nil
}
