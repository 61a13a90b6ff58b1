package framework

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// Scores are in [MinNodeScore, MaxNodeScore] after normalization.
const (
	MinNodeScore int64 = 0
	MaxNodeScore int64 = 100
)

// Plugin is the base of every extension point.
type Plugin interface {
	Name() string
}

// PreFilterPlugin computes per-pod state once per cycle. Returning Skip
// turns off the plugin's Filter for this pod.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *PodInfo) *Status
}

// PreFilterExtensions is implemented by PreFilter plugins whose state
// counts pods: they update it when a simulation adds a pod to node or
// removes one from it (preemption taking victims away, pods nominated to a
// node). The state is a clone made for that node.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, pod, add *PodInfo, node *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, pod, remove *PodInfo, node *NodeInfo) *Status
}

// FilterPlugin rejects nodes that cannot run the pod. Called in parallel over
// nodes: it must only read state, and should not allocate when the node fits.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) *Status
}

// PostFilterPlugin runs when no node fits (upstream: preemption).
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *PodInfo, statuses map[string]*Status) (nominatedNode string, st *Status)
}

// PreScorePlugin computes per-pod state for Score over the feasible nodes.
// Returning Skip turns off the plugin's Score for this pod.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *PodInfo, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks feasible nodes; called in parallel over nodes.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) (int64, *Status)
}

// ScoreNormalizer maps a plugin's raw scores into [MinNodeScore, MaxNodeScore].
type ScoreNormalizer interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *PodInfo, scores []NodeScore) *Status
}

// NodeScore is one node's score.
type NodeScore struct {
	Name  string
	Score int64
}

// ReservePlugin is told when a node is chosen (Reserve) and when that choice
// is abandoned (Unreserve, which must be idempotent).
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string)
}

// BindPlugin binds the pod. Skip passes to the next bind plugin.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// NodeInfoLister reads the cycle's snapshot.
type NodeInfoLister interface {
	List() []*NodeInfo
	Get(name string) (*NodeInfo, bool)
	HavePodsWithAffinityList() []*NodeInfo
	HavePodsWithRequiredAntiAffinityList() []*NodeInfo
	// NumNodesWithImage counts nodes that hold the (normalized) image.
	NumNodesWithImage(image string) int
}

// Handle is what plugins get from the framework.
type Handle interface {
	SnapshotLister() NodeInfoLister
}

// PluginFactory builds a plugin.
type PluginFactory func(h Handle) (Plugin, error)
