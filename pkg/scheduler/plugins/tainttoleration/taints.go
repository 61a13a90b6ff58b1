// Package tainttoleration rejects nodes with a NoSchedule or NoExecute taint
// the pod does not tolerate, and prefers nodes with fewer untolerated
// PreferNoSchedule taints.
package tainttoleration

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the plugin name.
const Name = "TaintToleration"

// Plugin implements Filter, PreScore, Score and NormalizeScore.
type Plugin struct{}

// New builds the plugin.
func New(framework.Handle) (framework.Plugin, error) { return &Plugin{}, nil }

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

func tolerated(tols []v1.Toleration, taint *v1.Taint) bool {
	for i := range tols {
		if tols[i].ToleratesTaint(klog.Background(), taint, false) {
			return true
		}
	}
	return false
}

// Filter implements framework.FilterPlugin.
func (*Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	taints := node.Node().Spec.Taints
	for i := range taints {
		t := &taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !tolerated(pod.Pod.Spec.Tolerations, t) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value))
		}
	}
	return nil
}

const stateKey framework.StateKey = Name

type preScoreState struct{ tolerations []v1.Toleration }

// PreScore keeps the tolerations that can match PreferNoSchedule taints.
func (*Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	var tols []v1.Toleration
	for _, t := range pod.Pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tols = append(tols, t)
		}
	}
	state.Write(stateKey, &preScoreState{tolerations: tols})
	return nil
}

// Score counts untolerated PreferNoSchedule taints (fewer is better; see
// NormalizeScore).
func (*Plugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	s, _ := state.Read(stateKey).(*preScoreState)
	if s == nil {
		return 0, framework.NewStatus(framework.Error, "TaintToleration: PreScore state missing")
	}
	var n int64
	taints := node.Node().Spec.Taints
	for i := range taints {
		if taints[i].Effect == v1.TaintEffectPreferNoSchedule && !tolerated(s.tolerations, &taints[i]) {
			n++
		}
	}
	return n, nil
}

// NormalizeScore reverses the counts into [0, 100].
func (*Plugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	framework.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
	return nil
}
