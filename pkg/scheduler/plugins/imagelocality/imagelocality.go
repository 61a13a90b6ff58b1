// Package imagelocality prefers nodes that already hold the pod's images,
// weighting each image by its size and by how widely it is spread (an image
// on every node says little about any one of them).
package imagelocality

import (
	"context"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Name is the plugin name.
const Name = "ImageLocality"

// Thresholds as upstream: below min nothing counts; at max per container the
// score is full.
const (
	mb                    int64 = 1024 * 1024
	minThreshold                = 23 * mb
	maxContainerThreshold       = 1000 * mb
)

// Plugin implements Score.
type Plugin struct {
	h framework.Handle
}

// New builds the plugin.
func New(h framework.Handle) (framework.Plugin, error) { return &Plugin{h: h}, nil }

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

const stateKey framework.StateKey = Name

type preScoreState struct {
	images []string // normalized, init and app containers
	total  int64
}

// PreScore normalizes the pod's image names once.
func (p *Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	s := &preScoreState{total: int64(len(p.h.SnapshotLister().List()))}
	for _, c := range pod.Pod.Spec.InitContainers {
		s.images = append(s.images, framework.NormalizeImageName(c.Image))
	}
	for _, c := range pod.Pod.Spec.Containers {
		s.images = append(s.images, framework.NormalizeImageName(c.Image))
	}
	if s.total == 0 || len(s.images) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, s)
	return nil
}

// Score implements framework.ScorePlugin.
func (p *Plugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	s, _ := state.Read(stateKey).(*preScoreState)
	if s == nil {
		return 0, framework.NewStatus(framework.Error, "ImageLocality: PreScore state missing")
	}
	if len(node.Images) == 0 {
		return 0, nil
	}
	lister := p.h.SnapshotLister()
	var sum int64
	for _, name := range s.images {
		if size, ok := node.Images[name]; ok {
			sum += size * int64(lister.NumNodesWithImage(name)) / s.total
		}
	}
	maxThreshold := maxContainerThreshold * int64(len(s.images))
	if sum < minThreshold {
		sum = minThreshold
	} else if sum > maxThreshold {
		sum = maxThreshold
	}
	return framework.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold), nil
}
