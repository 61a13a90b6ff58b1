package framework

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
)

// PluginConfig enables one plugin; Weight matters for Score only.
type PluginConfig struct {
	Name    string
	Factory PluginFactory
	Weight  int64
}

// Framework runs the enabled plugins at each extension point.
type Framework struct {
	profile     string
	parallelism int
	lister      NodeInfoLister

	preFilter []PreFilterPlugin
	// preFilterExt are the PreFilter plugins with PreFilterExtensions, with
	// the skip bit of their Filter (0 when they have none).
	preFilterExt []preFilterExt
	filter       []FilterPlugin
	postFilter   []PostFilterPlugin
	preScore     []PreScorePlugin
	score        []ScorePlugin
	weights      []int64
	reserve      []ReservePlugin
	bind         []BindPlugin

	// filterIdx and scoreIdx map a plugin's PreFilter/PreScore to the bit of
	// its Filter/Score in the CycleState skip sets.
	filterIdx map[string]int
	scoreIdx  map[string]int

	// scratch is reused across cycles (the scheduling cycle is sequential).
	scratch [][]NodeScore
}

// New builds a framework for profile with the plugins in order. lister is
// the snapshot that plugins read.
func New(profile string, plugins []PluginConfig, lister NodeInfoLister, parallelism int) (*Framework, error) {
	if parallelism <= 0 {
		parallelism = 16
	}
	f := &Framework{profile: profile, parallelism: parallelism, lister: lister,
		filterIdx: map[string]int{}, scoreIdx: map[string]int{}}
	for _, pc := range plugins {
		p, err := pc.Factory(f)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", pc.Name, err)
		}
		if pl, ok := p.(PreFilterPlugin); ok {
			f.preFilter = append(f.preFilter, pl)
		}
		if pl, ok := p.(FilterPlugin); ok {
			f.filterIdx[p.Name()] = len(f.filter)
			f.filter = append(f.filter, pl)
		}
		if ext, ok := p.(PreFilterExtensions); ok {
			if _, ok := p.(PreFilterPlugin); ok {
				e := preFilterExt{name: p.Name(), ext: ext}
				if i, ok := f.filterIdx[p.Name()]; ok {
					e.skipBit = 1 << i
				}
				f.preFilterExt = append(f.preFilterExt, e)
			}
		}
		if pl, ok := p.(PostFilterPlugin); ok {
			f.postFilter = append(f.postFilter, pl)
		}
		if pl, ok := p.(PreScorePlugin); ok {
			f.preScore = append(f.preScore, pl)
		}
		if pl, ok := p.(ScorePlugin); ok && pc.Weight > 0 {
			f.scoreIdx[p.Name()] = len(f.score)
			f.score = append(f.score, pl)
			f.weights = append(f.weights, pc.Weight)
		}
		if pl, ok := p.(ReservePlugin); ok {
			f.reserve = append(f.reserve, pl)
		}
		if pl, ok := p.(BindPlugin); ok {
			f.bind = append(f.bind, pl)
		}
	}
	if len(f.filter) > 64 || len(f.score) > 64 {
		return nil, fmt.Errorf("at most 64 filter and score plugins are supported")
	}
	if len(f.bind) == 0 {
		return nil, fmt.Errorf("profile %s has no bind plugin", profile)
	}
	return f, nil
}

// SnapshotLister implements Handle.
func (f *Framework) SnapshotLister() NodeInfoLister { return f.lister }

// ProfileName is the scheduler name this framework serves.
func (f *Framework) ProfileName() string { return f.profile }

// Parallelism is the number of workers for per-node work.
func (f *Framework) Parallelism() int { return f.parallelism }

// HasScorePlugins reports whether scoring can change the choice.
func (f *Framework) HasScorePlugins() bool { return len(f.score) > 0 }

// RunPreFilterPlugins runs PreFilter; a rejection ends the cycle.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *PodInfo) *Status {
	for _, pl := range f.preFilter {
		st := pl.PreFilter(ctx, state, pod)
		switch {
		case st.IsSkip():
			if i, ok := f.filterIdx[pl.Name()]; ok {
				state.skipFilter |= 1 << i
			}
		case !st.IsSuccess():
			return st.WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunPreFilterExtensionAddPod tells the PreFilter plugins whose filters
// run for this pod that add now counts on node.
func (f *Framework) RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, pod, add *PodInfo, node *NodeInfo) *Status {
	return f.runPreFilterExtension(state, func(ext PreFilterExtensions) *Status { return ext.AddPod(ctx, state, pod, add, node) })
}

// RunPreFilterExtensionRemovePod tells the PreFilter plugins whose filters
// run for this pod that remove no longer counts on node.
func (f *Framework) RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, pod, remove *PodInfo, node *NodeInfo) *Status {
	return f.runPreFilterExtension(state, func(ext PreFilterExtensions) *Status { return ext.RemovePod(ctx, state, pod, remove, node) })
}

type preFilterExt struct {
	name    string
	ext     PreFilterExtensions
	skipBit uint64
}

func (f *Framework) runPreFilterExtension(state *CycleState, run func(PreFilterExtensions) *Status) *Status {
	for _, e := range f.preFilterExt {
		if state.skipFilter&e.skipBit != 0 {
			continue
		}
		if st := run(e.ext); !st.IsSuccess() {
			return st.WithPlugin(e.name)
		}
	}
	return nil
}

// RunFilterPlugins runs every Filter on one node and returns the first
// rejection. It allocates nothing when the node fits.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	for i, pl := range f.filter {
		if state.skipFilter&(1<<i) != 0 {
			continue
		}
		if st := pl.Filter(ctx, state, pod, node); !st.IsSuccess() {
			if st.plugin == "" {
				st.plugin = pl.Name()
			}
			return st
		}
	}
	return nil
}

// RunPostFilterPlugins runs PostFilter until one finds a node to nominate.
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *CycleState, pod *PodInfo, statuses map[string]*Status) (string, *Status) {
	for _, pl := range f.postFilter {
		nominated, st := pl.PostFilter(ctx, state, pod, statuses)
		if st.IsSuccess() {
			return nominated, nil
		}
		if st.Code() == Error {
			return "", st.WithPlugin(pl.Name())
		}
	}
	return "", NewStatus(Unschedulable)
}

// RunPreScorePlugins runs PreScore over the feasible nodes.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *CycleState, pod *PodInfo, nodes []*NodeInfo) *Status {
	for _, pl := range f.preScore {
		st := pl.PreScore(ctx, state, pod, nodes)
		switch {
		case st.IsSkip():
			if i, ok := f.scoreIdx[pl.Name()]; ok {
				state.skipScore |= 1 << i
			}
		case !st.IsSuccess():
			return st.WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunScorePlugins scores nodes (in parallel), normalizes each plugin's
// scores and returns the weighted sum per node, in the order of nodes.
// The returned slice is reused by the next call.
func (f *Framework) RunScorePlugins(ctx context.Context, state *CycleState, pod *PodInfo, nodes []*NodeInfo, total []int64) ([]int64, *Status) {
	if cap(f.scratch) < len(f.score) {
		f.scratch = make([][]NodeScore, len(f.score))
	}
	f.scratch = f.scratch[:len(f.score)]
	for i := range f.scratch {
		if cap(f.scratch[i]) < len(nodes) {
			f.scratch[i] = make([]NodeScore, len(nodes), len(nodes)*5/4)
		}
		f.scratch[i] = f.scratch[i][:len(nodes)]
	}
	errCh := make(chan *Status, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workqueue.ParallelizeUntil(ctx, f.parallelism, len(nodes), func(n int) {
		for i, pl := range f.score {
			if state.skipScore&(1<<i) != 0 {
				continue
			}
			s, st := pl.Score(ctx, state, pod, nodes[n])
			if !st.IsSuccess() {
				select {
				case errCh <- st.WithPlugin(pl.Name()):
				default:
				}
				cancel()
				return
			}
			f.scratch[i][n] = NodeScore{Name: nodes[n].node.Name, Score: s}
		}
	}, workqueue.WithChunkSize(chunkSize(len(nodes), f.parallelism)))
	select {
	case st := <-errCh:
		return nil, st
	default:
	}
	if cap(total) < len(nodes) {
		total = make([]int64, len(nodes))
	}
	total = total[:len(nodes)]
	clear(total)
	for i, pl := range f.score {
		if state.skipScore&(1<<i) != 0 {
			continue
		}
		scores := f.scratch[i]
		if n, ok := pl.(ScoreNormalizer); ok {
			if st := n.NormalizeScore(ctx, state, pod, scores); !st.IsSuccess() {
				return nil, st.WithPlugin(pl.Name())
			}
		}
		for n := range scores {
			s := scores[n].Score
			if s < MinNodeScore || s > MaxNodeScore {
				return nil, AsStatus(fmt.Errorf("plugin %s returned score %d for node %s, outside [%d, %d]", pl.Name(), s, scores[n].Name, MinNodeScore, MaxNodeScore))
			}
			total[n] += s * f.weights[i]
		}
	}
	return total, nil
}

// RunReservePlugins reserves; on failure the caller runs Unreserve.
func (f *Framework) RunReservePlugins(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string) *Status {
	for _, pl := range f.reserve {
		if st := pl.Reserve(ctx, state, pod, nodeName); !st.IsSuccess() {
			return st.WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunUnreservePlugins undoes Reserve, in reverse order.
func (f *Framework) RunUnreservePlugins(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string) {
	for i := len(f.reserve) - 1; i >= 0; i-- {
		f.reserve[i].Unreserve(ctx, state, pod, nodeName)
	}
}

// RunBindPlugins binds with the first plugin that does not Skip.
func (f *Framework) RunBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status {
	for _, pl := range f.bind {
		st := pl.Bind(ctx, state, pod, nodeName)
		if st.IsSkip() {
			continue
		}
		if st.Code() == Error {
			// Upstream's wording, which the pod's FailedScheduling event
			// and condition show.
			st = AsStatus(fmt.Errorf("running Bind plugin %q: %w", pl.Name(), st.AsError()))
		}
		return st.WithPlugin(pl.Name())
	}
	return NewStatus(Error, "no bind plugin bound the pod")
}

// chunkSize keeps each worker's share large enough that handing out pieces
// costs less than the work, like upstream's sqrt heuristic.
func chunkSize(n, workers int) int {
	s := int(math.Sqrt(float64(n)))
	if r := n/workers + 1; r < s {
		s = r
	}
	if s < 1 {
		s = 1
	}
	return s
}

// ChunkSize is chunkSize for callers that parallelize per-node work.
func ChunkSize(n, workers int) int { return chunkSize(n, workers) }

// DefaultNormalizeScore scales scores to [0, MaxNodeScore] by the highest
// one, reversed (higher raw is worse) when reverse is set.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores []NodeScore) {
	var maxCount int64
	for i := range scores {
		if scores[i].Score > maxCount {
			maxCount = scores[i].Score
		}
	}
	if maxCount == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return
	}
	for i := range scores {
		s := maxPriority * scores[i].Score / maxCount
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
}
