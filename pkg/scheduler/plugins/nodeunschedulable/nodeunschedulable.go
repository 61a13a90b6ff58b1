// Package nodeunschedulable rejects nodes marked spec.unschedulable (cordoned)
// unless the pod tolerates the unschedulable taint.
package nodeunschedulable

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the plugin name.
const Name = "NodeUnschedulable"

// ErrReasonUnschedulable is upstream's reason.
const ErrReasonUnschedulable = "node(s) were unschedulable"

// Plugin implements Filter.
type Plugin struct{}

// New builds the plugin.
func New(framework.Handle) (framework.Plugin, error) { return &Plugin{}, nil }

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// Filter implements framework.FilterPlugin.
func (*Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	if !node.Node().Spec.Unschedulable {
		return nil
	}
	for i := range pod.Pod.Spec.Tolerations {
		if pod.Pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &unschedulableTaint, false) {
			return nil
		}
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}
