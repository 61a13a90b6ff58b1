// Package nodeports rejects nodes where a host port the pod asks for is
// already taken.
package nodeports

import (
	"context"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the plugin name.
const Name = "NodePorts"

// ErrReason is upstream's reason.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

// Plugin implements PreFilter and Filter.
type Plugin struct{}

// New builds the plugin.
func New(framework.Handle) (framework.Plugin, error) { return &Plugin{}, nil }

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

// PreFilter skips pods without host ports.
func (*Plugin) PreFilter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo) *framework.Status {
	if len(pod.HostPorts) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}

// Filter implements framework.FilterPlugin.
func (*Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	for _, want := range pod.HostPorts {
		for _, used := range node.UsedPorts {
			if want.Conflicts(used) {
				return framework.NewStatus(framework.Unschedulable, ErrReason)
			}
		}
	}
	return nil
}
