package scheduler

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/balancedallocation"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/defaultbinder"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/imagelocality"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/interpodaffinity"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/nodeaffinity"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/nodename"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/nodeports"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/noderesourcesfit"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/nodeunschedulable"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/podtopologyspread"
	"github.com/kube-lite/kube-lite/pkg/scheduler/plugins/tainttoleration"
)

// DefaultPlugins is upstream's default profile, in upstream's order (the
// first rejecting filter names the reason) and with upstream's score weights.
func DefaultPlugins(client kubernetes.Interface) []framework.PluginConfig {
	return []framework.PluginConfig{
		{Name: nodeunschedulable.Name, Factory: nodeunschedulable.New},
		{Name: nodename.Name, Factory: nodename.New},
		{Name: tainttoleration.Name, Factory: tainttoleration.New, Weight: 3},
		{Name: nodeaffinity.Name, Factory: nodeaffinity.New, Weight: 2},
		{Name: nodeports.Name, Factory: nodeports.New},
		{Name: noderesourcesfit.Name, Factory: noderesourcesfit.New, Weight: 1},
		{Name: podtopologyspread.Name, Factory: podtopologyspread.New, Weight: 2},
		{Name: interpodaffinity.Name, Factory: interpodaffinity.New, Weight: 2},
		{Name: balancedallocation.Name, Factory: balancedallocation.New, Weight: 1},
		{Name: imagelocality.Name, Factory: imagelocality.New, Weight: 1},
		{Name: defaultbinder.Name, Factory: defaultbinder.Factory(client)},
	}
}

// clusterEvent is a change that can make unschedulable pods fit.
type clusterEvent int

const (
	assignedPodAdd clusterEvent = iota
	assignedPodDelete
	nodeAdd
	nodeDelete
	nodeAllocatable
	nodeLabel
	nodeTaint
	nodeSpecUnschedulable
)

// pluginsHelpedBy names the plugins whose rejections event can undo: an
// unschedulable pod moves back to active only if one of them rejected it.
// nil means every pod.
func pluginsHelpedBy(event clusterEvent) sets.Set[string] {
	switch event {
	case assignedPodAdd:
		return sets.New(interpodaffinity.Name, podtopologyspread.Name)
	case assignedPodDelete:
		return sets.New(noderesourcesfit.Name, nodeports.Name, interpodaffinity.Name, podtopologyspread.Name)
	case nodeDelete:
		return sets.New(podtopologyspread.Name, interpodaffinity.Name)
	case nodeAllocatable:
		return sets.New(noderesourcesfit.Name)
	case nodeLabel:
		return sets.New(nodeaffinity.Name, interpodaffinity.Name, podtopologyspread.Name)
	case nodeTaint:
		return sets.New(tainttoleration.Name)
	case nodeSpecUnschedulable:
		return sets.New(nodeunschedulable.Name)
	}
	return nil
}
