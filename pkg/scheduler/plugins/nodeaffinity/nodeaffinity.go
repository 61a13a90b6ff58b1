// Package nodeaffinity rejects nodes that do not match the pod's nodeSelector
// and required node affinity, and scores the preferred terms.
package nodeaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the plugin name.
const Name = "NodeAffinity"

// Upstream's reasons: a node that does not match, and required terms that
// pin the pod to node names no term shares.
const (
	ErrReasonPod      = "node(s) didn't match Pod's node affinity/selector"
	ErrReasonConflict = "pod affinity terms conflict"
)

// Plugin implements PreFilter, Filter, PreScore, Score and NormalizeScore.
type Plugin struct{}

// New builds the plugin.
func New(framework.Handle) (framework.Plugin, error) { return &Plugin{}, nil }

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

const (
	filterKey framework.StateKey = Name + "/filter"
	scoreKey  framework.StateKey = Name + "/score"
)

// PreFilter parses the selector once; pods without one skip Filter.
func (*Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo) *framework.Status {
	spec := &pod.Pod.Spec
	hasRequired := spec.Affinity != nil && spec.Affinity.NodeAffinity != nil &&
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
	if len(spec.NodeSelector) == 0 && !hasRequired {
		return framework.NewStatus(framework.Skip)
	}
	if hasRequired {
		terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) == 0 {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
		}
		if _, err := nodeaffinity.NewNodeSelector(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("invalid node affinity: %v", err))
		}
	}
	req := nodeaffinity.GetRequiredNodeAffinity(pod.Pod)
	state.Write(filterKey, &req)
	if hasRequired {
		names, pinned := pinnedNodes(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
		switch {
		case !pinned:
		case len(names) == 0:
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonConflict)
		default:
			state.RestrictNodes(Name, names)
		}
	}
	return nil
}

// pinnedNodes returns the node names the terms allow when every term names
// its nodes through a metadata.name In matchFields requirement (as
// DaemonSet pods do); pinned is false when some term does not, and every node
// may then match.
func pinnedNodes(terms []v1.NodeSelectorTerm) (names sets.Set[string], pinned bool) {
	names = sets.New[string]()
	for _, t := range terms {
		var term sets.Set[string]
		for _, r := range t.MatchFields {
			if r.Key != metav1.ObjectNameField || r.Operator != v1.NodeSelectorOpIn {
				continue
			}
			// A term's requirements are ANDed.
			if term == nil {
				term = sets.New(r.Values...)
			} else {
				term = term.Intersection(sets.New(r.Values...))
			}
		}
		if term == nil {
			return nil, false
		}
		names = names.Union(term)
	}
	return names, true
}

// Filter implements framework.FilterPlugin.
func (*Plugin) Filter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	req, _ := state.Read(filterKey).(*nodeaffinity.RequiredNodeAffinity)
	if req == nil {
		return framework.NewStatus(framework.Error, "NodeAffinity: PreFilter state missing")
	}
	if ok, _ := req.Match(node.Node()); !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}

// PreScore parses the preferred terms; pods without any skip Score.
func (*Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	a := pod.Pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("preferred node affinity: %w", err))
	}
	state.Write(scoreKey, terms)
	return nil
}

// Score sums the weights of matching preferred terms.
func (*Plugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	terms, _ := state.Read(scoreKey).(*nodeaffinity.PreferredSchedulingTerms)
	if terms == nil {
		return 0, framework.NewStatus(framework.Error, "NodeAffinity: PreScore state missing")
	}
	return terms.Score(node.Node()), nil
}

// NormalizeScore scales to [0, 100] by the best node.
func (*Plugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
	return nil
}
