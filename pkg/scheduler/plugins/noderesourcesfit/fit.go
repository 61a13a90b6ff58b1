// Package noderesourcesfit rejects nodes without room for the pod's requests
// (init containers included) or for one more pod, and scores nodes by the
// LeastAllocated strategy: the more room left after placing the pod, the
// better.
package noderesourcesfit

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the plugin name.
const Name = "NodeResourcesFit"

// ErrReasonTooManyPods is upstream's reason for a full pod count.
const ErrReasonTooManyPods = "Too many pods"

// Plugin implements Filter and Score.
type Plugin struct{}

// New builds the plugin.
func New(framework.Handle) (framework.Plugin, error) { return &Plugin{}, nil }

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

// InsufficientResource is one shortfall.
type InsufficientResource struct {
	Name      v1.ResourceName
	Requested int64
	Used      int64
	Capacity  int64
}

// Reason is the user-facing text.
func (r InsufficientResource) Reason() string {
	if r.Name == v1.ResourcePods {
		return ErrReasonTooManyPods
	}
	return "Insufficient " + string(r.Name)
}

// Fits lists what the node lacks for pod; empty means it fits. Only the
// failure path allocates.
func Fits(pod *framework.PodInfo, node *framework.NodeInfo) []InsufficientResource {
	var out []InsufficientResource
	alloc, used, req := &node.Allocatable, &node.Requested, &pod.Requests
	if int64(len(node.Pods))+1 > alloc.AllowedPodNumber {
		out = append(out, InsufficientResource{v1.ResourcePods, 1, int64(len(node.Pods)), alloc.AllowedPodNumber})
	}
	if req.MilliCPU == 0 && req.Memory == 0 && req.EphemeralStorage == 0 && len(req.Scalar) == 0 {
		return out
	}
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU {
		out = append(out, InsufficientResource{v1.ResourceCPU, req.MilliCPU, used.MilliCPU, alloc.MilliCPU})
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-used.Memory {
		out = append(out, InsufficientResource{v1.ResourceMemory, req.Memory, used.Memory, alloc.Memory})
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		out = append(out, InsufficientResource{v1.ResourceEphemeralStorage, req.EphemeralStorage, used.EphemeralStorage, alloc.EphemeralStorage})
	}
	for name, q := range req.Scalar {
		if q > 0 && q > alloc.Scalar[name]-used.Scalar[name] {
			out = append(out, InsufficientResource{name, q, used.Scalar[name], alloc.Scalar[name]})
		}
	}
	return out
}

// Filter implements framework.FilterPlugin.
func (*Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	missing := Fits(pod, node)
	if len(missing) == 0 {
		return nil
	}
	reasons := make([]string, len(missing))
	for i, m := range missing {
		reasons[i] = m.Reason()
	}
	return framework.NewStatus(framework.Unschedulable, reasons...)
}

// Score implements framework.ScorePlugin: the mean over cpu and memory of
// the percentage left free once the pod is placed, counting request-less
// containers at the default requests.
func (*Plugin) Score(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	cpu := leastAllocated(node.NonZeroRequested.MilliCPU+pod.NonZeroRequests.MilliCPU, node.Allocatable.MilliCPU)
	mem := leastAllocated(node.NonZeroRequested.Memory+pod.NonZeroRequests.Memory, node.Allocatable.Memory)
	return (cpu + mem) / 2, nil
}

func leastAllocated(requested, capacity int64) int64 {
	if capacity <= 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}
