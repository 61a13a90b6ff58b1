// Package nodename rejects nodes other than the one a pod names in
// spec.nodeName (a pod handed to the scheduler with a name set).
package nodename

import (
	"context"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the plugin name.
const Name = "NodeName"

// ErrReason is upstream's reason.
const ErrReason = "node(s) didn't match the requested node name"

// Plugin implements PreFilter and Filter.
type Plugin struct{}

// New builds the plugin.
func New(framework.Handle) (framework.Plugin, error) { return &Plugin{}, nil }

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

// PreFilter skips the Filter for the usual pod without a node name.
func (*Plugin) PreFilter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo) *framework.Status {
	if pod.Pod.Spec.NodeName == "" {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}

// Filter implements framework.FilterPlugin.
func (*Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	if n := pod.Pod.Spec.NodeName; n != "" && n != node.Node().Name {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}
