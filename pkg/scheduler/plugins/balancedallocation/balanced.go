// Package balancedallocation prefers nodes whose cpu and memory would be used
// in equal proportion after placing the pod, so that neither runs out first.
package balancedallocation

import (
	"context"
	"math"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the upstream plugin name.
const Name = "NodeResourcesBalancedAllocation"

// Plugin implements PreScore and Score.
type Plugin struct{}

// New builds the plugin.
func New(framework.Handle) (framework.Plugin, error) { return &Plugin{}, nil }

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

// PreScore skips pods that request neither cpu nor memory: they change no
// balance.
func (*Plugin) PreScore(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	if pod.Requests.MilliCPU == 0 && pod.Requests.Memory == 0 {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}

// Score implements framework.ScorePlugin: 100 × (1 − the standard deviation
// of the cpu and memory fractions requested).
func (*Plugin) Score(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	cpu := fraction(node.Requested.MilliCPU+pod.Requests.MilliCPU, node.Allocatable.MilliCPU)
	mem := fraction(node.Requested.Memory+pod.Requests.Memory, node.Allocatable.Memory)
	// For two values the standard deviation is half their distance.
	std := math.Abs(cpu-mem) / 2
	return int64((1 - std) * float64(framework.MaxNodeScore)), nil
}

func fraction(requested, capacity int64) float64 {
	if capacity <= 0 {
		return 1
	}
	f := float64(requested) / float64(capacity)
	if f > 1 {
		return 1
	}
	return f
}
