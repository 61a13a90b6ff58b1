// Package scheduler is kube-lite's scheduler: it watches pending pods, picks
// a node for each through the framework's plugins and binds it, with the
// binding running in the background so that the next pod need not wait.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/scheduler/cache"
	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
	"github.com/kube-lite/kube-lite/pkg/scheduler/queue"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultSchedulerName is the profile that pods without spec.schedulerName get.
const DefaultSchedulerName = v1.DefaultSchedulerName

// ErrNoNodesAvailable is upstream's error for an empty cluster.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// Config holds what New needs; zero values get defaults.
type Config struct {
	Client        kubernetes.Interface
	SchedulerName string
	Clock         clock.WithTicker
	// Registerer receives the metrics; nil means a private registry.
	Registerer prometheus.Registerer
	// Parallelism bounds the workers filtering and scoring nodes.
	Parallelism int
	// PercentageOfNodesToScore: stop filtering once this share of nodes was
	// found feasible (0: upstream's adaptive share, 100: all nodes).
	PercentageOfNodesToScore int32
	// BindConcurrency bounds the bindings in flight.
	BindConcurrency int
	InitialBackoff  time.Duration
	MaxBackoff      time.Duration
	// AssumedPodTTL is how long a pod whose binding returned may wait for the
	// informer to confirm it before it stops being counted.
	AssumedPodTTL time.Duration
	// Plugins overrides DefaultPlugins.
	Plugins []framework.PluginConfig
}

// Scheduler schedules the pods whose spec.schedulerName is its name.
type Scheduler struct {
	client   kubernetes.Interface
	name     string
	clock    clock.WithTicker
	cache    *cache.Cache
	snapshot *cache.Snapshot
	queue    *queue.PriorityQueue
	fwk      *framework.Framework
	metrics  *Metrics
	pct      int32

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	unscheduledFactory informers.SharedInformerFactory
	handlers           []toolscache.ResourceEventHandlerRegistration
	assignedFactory    informers.SharedInformerFactory
	nodeFactory        informers.SharedInformerFactory
	pdbs               policylisters.PodDisruptionBudgetLister

	nominator nominator

	bindSem  chan struct{}
	bindings sync.WaitGroup
	started  atomic.Bool
	synced   atomic.Bool

	// Scheduling-cycle scratch, reused across cycles (one cycle at a time).
	nextStartNodeIndex int
	feasible           []*framework.NodeInfo
	// nominated holds, for this cycle's pod, the nominated pods it must
	// leave room for, by node.
	nominated map[string][]*framework.PodInfo
	statuses  []*framework.Status
	totals    []int64
}

// New builds a scheduler; Run starts it.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Client == nil {
		return nil, errors.New("scheduler: no client")
	}
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = DefaultSchedulerName
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.BindConcurrency <= 0 {
		cfg.BindConcurrency = 64
	}
	if cfg.AssumedPodTTL <= 0 {
		cfg.AssumedPodTTL = 30 * time.Second
	}
	if cfg.Plugins == nil {
		cfg.Plugins = DefaultPlugins(cfg.Client)
	}
	if cfg.PercentageOfNodesToScore < 0 || cfg.PercentageOfNodesToScore > 100 {
		return nil, fmt.Errorf("percentageOfNodesToScore %d is not in [0, 100]", cfg.PercentageOfNodesToScore)
	}
	m, err := NewMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	s := &Scheduler{
		client: cfg.Client, name: cfg.SchedulerName, clock: cfg.Clock, metrics: m,
		cache:    cache.New(cfg.Clock, cfg.AssumedPodTTL),
		snapshot: cache.NewSnapshot(),
		pct:      cfg.PercentageOfNodesToScore,
		bindSem:  make(chan struct{}, cfg.BindConcurrency),
	}
	s.queue = queue.New(queue.Options{Clock: cfg.Clock, InitialBackoff: cfg.InitialBackoff, MaxBackoff: cfg.MaxBackoff, Metrics: m})
	s.fwk, err = framework.New(cfg.SchedulerName, cfg.Plugins, s.snapshot, cfg.Parallelism)
	if err != nil {
		return nil, fmt.Errorf("framework: %w", err)
	}
	s.broadcaster = record.NewBroadcaster()
	s.recorder = s.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: cfg.SchedulerName})
	s.addInformers()
	return s, nil
}

// Ready reports whether the informers have synced (nil before Run starts,
// so that a standby replica is ready).
func (s *Scheduler) Ready() error {
	if s.started.Load() && !s.synced.Load() {
		return errors.New("scheduler informers not synced")
	}
	return nil
}

// Synced reports whether Run has filled its caches and is scheduling.
func (s *Scheduler) Synced() bool { return s.synced.Load() }

// Run schedules until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	s.started.Store(true)
	stopEvents := s.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
	defer s.broadcaster.Shutdown()
	defer stopEvents.Stop()

	for _, f := range []informers.SharedInformerFactory{s.nodeFactory, s.assignedFactory, s.unscheduledFactory} {
		f.Start(ctx.Done())
	}
	defer func() {
		for _, f := range []informers.SharedInformerFactory{s.nodeFactory, s.assignedFactory, s.unscheduledFactory} {
			f.Shutdown()
		}
	}()
	for _, f := range []informers.SharedInformerFactory{s.nodeFactory, s.assignedFactory, s.unscheduledFactory} {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("informer for %v did not sync", typ)
			}
		}
	}
	handlersSynced := make([]toolscache.InformerSynced, len(s.handlers))
	for i, h := range s.handlers {
		handlersSynced[i] = h.HasSynced
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), handlersSynced...) {
		return nil // ctx ended
	}
	s.synced.Store(true)
	slog.Info("scheduler started", "name", s.name, "nodes", s.cache.NodeCount())

	go s.queue.Run(ctx)
	go func() {
		t := s.clock.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				s.cache.CleanupExpiredAssumedPods()
			}
		}
	}()
	for s.scheduleOne(ctx) {
	}
	s.bindings.Wait()
	return nil
}

// scheduleOne runs one scheduling cycle; false once the queue is closed.
func (s *Scheduler) scheduleOne(ctx context.Context) bool {
	qp := s.queue.Pop()
	if qp == nil {
		return false
	}
	cycle := s.queue.SchedulingCycle()
	pod := qp.Pod
	// A stale queue entry: the pod is being deleted, or was assumed or
	// bound while it waited.
	if pod.DeletionTimestamp != nil || s.cache.HasPod(pod) {
		if pod.DeletionTimestamp != nil {
			// As upstream, say why a pod being deleted stays unscheduled.
			s.recorder.Eventf(pod, v1.EventTypeWarning, "FailedScheduling", "skip schedule deleting pod: %v/%v", pod.Namespace, pod.Name)
		}
		s.queue.Done(qp)
		return true
	}
	start := s.clock.Now()
	s.cache.UpdateSnapshot(s.snapshot)
	state := framework.NewCycleState()
	host, st, msg := s.schedulePod(ctx, state, qp.PodInfo)
	if !st.IsSuccess() {
		if ctx.Err() != nil {
			return true
		}
		rejectors, _ := state.Read(rejectorsKey).(sets.Set[string])
		if rejectors == nil && st.Plugin() != "" {
			rejectors = sets.New(st.Plugin())
		}
		qp.UnschedulablePlugins = rejectors
		var nominated *string
		if node, ok := state.Read(nominatedKey).(string); ok {
			// The queue keeps this copy: the next attempt must know of the
			// nomination even if the informer has not brought it back yet.
			p := pod.DeepCopy()
			p.Status.NominatedNodeName = node
			pi := *qp.PodInfo
			pi.Pod = p
			qp.PodInfo = &pi
			s.nominator.set(p)
			nominated = &node
		}
		s.handleFailure(ctx, qp, cycle, st, msg, start, nominated)
		return true
	}

	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = host
	api := *qp.PodInfo
	api.Pod = assumed
	if err := s.cache.AssumePod(&api); err != nil {
		s.handleFailure(ctx, qp, cycle, framework.AsStatus(err), err.Error(), start, nil)
		return true
	}
	// Counted on its node now: its nomination need hold no room.
	s.nominator.forget(pod.UID)
	if st := s.fwk.RunReservePlugins(ctx, state, &api, host); !st.IsSuccess() {
		s.fwk.RunUnreservePlugins(ctx, state, &api, host)
		s.cache.ForgetPod(assumed)
		s.handleFailure(ctx, qp, cycle, st, st.Message(), start, nil)
		return true
	}
	s.queue.Done(qp)
	s.bindings.Add(1)
	go s.bind(ctx, state, qp, &api, host, start)
	return true
}

// bind is the binding cycle; it runs concurrently with later scheduling
// cycles, which already count the pod on host through the cache.
func (s *Scheduler) bind(ctx context.Context, state *framework.CycleState, qp *queue.QueuedPodInfo, assumed *framework.PodInfo, host string, start time.Time) {
	defer s.bindings.Done()
	select {
	case s.bindSem <- struct{}{}:
	case <-ctx.Done():
		s.cache.ForgetPod(assumed.Pod)
		return
	}
	st := s.fwk.RunBindPlugins(ctx, state, assumed.Pod, host)
	<-s.bindSem
	if !st.IsSuccess() {
		s.fwk.RunUnreservePlugins(ctx, state, assumed, host)
		s.cache.ForgetPod(assumed.Pod)
		if ctx.Err() != nil {
			return
		}
		// The room the pod held is free again.
		s.queue.MoveAllToActiveOrBackoffQueue(pluginsHelpedBy(assignedPodDelete))
		if err := st.AsError(); apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Deleted, or bound by someone else: nothing left to do.
			slog.Info("binding abandoned", "pod", qp.Key(), "node", host, "err", err)
			return
		}
		slog.Warn("binding failed", "pod", qp.Key(), "node", host, "err", st.AsError())
		s.handleFailure(ctx, qp, s.queue.SchedulingCycle(), st, st.Message(), start, nil)
		return
	}
	s.cache.FinishBinding(assumed.Pod)
	s.metrics.observe(resultScheduled, s.name, s.clock.Since(start).Seconds())
	s.recorder.Eventf(qp.Pod, v1.EventTypeNormal, "Scheduled", "Successfully assigned %v/%v to %v", assumed.Pod.Namespace, assumed.Pod.Name, host)
}

// schedulePod picks a node. On failure it returns the status and the
// message users see (events and the PodScheduled condition).
func (s *Scheduler) schedulePod(ctx context.Context, state *framework.CycleState, pi *framework.PodInfo) (string, *framework.Status, string) {
	nodes := s.snapshot.List()
	if len(nodes) == 0 {
		return "", framework.AsStatus(ErrNoNodesAvailable), ErrNoNodesAvailable.Error()
	}
	// The nominated pods this pod must leave room for, in filtering and in
	// preemption alike.
	s.nominated = s.nominator.forPod(pi.Pod)
	if st := s.fwk.RunPreFilterPlugins(ctx, state, pi); !st.IsSuccess() {
		if st.Code() == framework.Error {
			return "", st, st.Message()
		}
		// As upstream: a PreFilter rejection applies to every node and is
		// reported once, not per node; preemption still runs, and says
		// why it cannot help.
		statuses := make([]*framework.Status, len(nodes))
		for i := range statuses {
			statuses[i] = st
		}
		msg := fmt.Sprintf("0/%d nodes are available: %s.", len(nodes), st.Message())
		return "", st, s.postFilter(ctx, state, pi, nodes, statuses, msg)
	}
	candidates, outside := nodes, []*framework.NodeInfo(nil)
	names, restrictedBy := state.NodeNames()
	if names != nil {
		candidates, outside = splitNodes(nodes, names)
	}
	feasible, st := s.findFeasible(ctx, state, pi, candidates)
	if !st.IsSuccess() {
		return "", st, st.Message()
	}
	if len(feasible) == 0 {
		rejectors := sets.New[string](restrictedBy...)
		statuses := s.statuses
		if len(outside) > 0 {
			// As upstream, the nodes PreFilter ruled out count under the
			// plugins that did, and preemption cannot help on them.
			excluded := framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(rejectors)))
			// candidates is splitNodes' own slice: appending is safe.
			candidates = append(candidates, outside...)
			statuses = slices.Clone(statuses)
			for range outside {
				statuses = append(statuses, excluded)
			}
		}
		counts := map[string]int{}
		for _, fs := range statuses {
			if fs == nil {
				continue
			}
			if fs.Plugin() != "" {
				rejectors.Insert(fs.Plugin())
			}
			for _, r := range fs.Reasons() {
				counts[r]++
			}
		}
		fit := framework.NewStatus(framework.Unschedulable, fitErrorMessage(len(nodes), counts))
		state.Write(rejectorsKey, rejectors)
		return "", fit, s.postFilter(ctx, state, pi, candidates, statuses, fit.Message())
	}
	if len(feasible) == 1 || !s.fwk.HasScorePlugins() {
		return feasible[0].Node().Name, nil, ""
	}
	if st := s.fwk.RunPreScorePlugins(ctx, state, pi, feasible); !st.IsSuccess() {
		return "", st, st.Message()
	}
	totals, st := s.fwk.RunScorePlugins(ctx, state, pi, feasible, s.totals)
	if !st.IsSuccess() {
		return "", st, st.Message()
	}
	s.totals = totals
	return selectHost(feasible, totals), nil, ""
}

const (
	rejectorsKey framework.StateKey = "scheduler/rejectors"
	// nominatedKey holds the node preemption made room on ("" to clear a
	// nomination that no longer holds).
	nominatedKey framework.StateKey = "scheduler/nominated"
)

// selectHost takes the best total, breaking ties uniformly at random so that
// equal nodes share the load.
func selectHost(nodes []*framework.NodeInfo, totals []int64) string {
	best, ties := 0, 1
	for i := 1; i < len(totals); i++ {
		switch {
		case totals[i] > totals[best]:
			best, ties = i, 1
		case totals[i] == totals[best]:
			ties++
			if rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return nodes[best].Node().Name
}

// numFeasibleNodesToFind is upstream's adaptive cut-off: in large clusters
// finding a good-enough node beats examining every node.
func (s *Scheduler) numFeasibleNodesToFind(n int) int {
	const minFeasible = 100
	if n < minFeasible || s.pct >= 100 {
		return n
	}
	pct := int(s.pct)
	if pct == 0 {
		pct = max(50-n/125, 5)
	}
	return max(n*pct/100, minFeasible)
}

// findFeasible runs the filters over nodes in parallel, starting where the
// previous cycle stopped so that all nodes get examined in turn. It stops
// once enough feasible nodes are found. Rejections are left in s.statuses.
func (s *Scheduler) findFeasible(ctx context.Context, state *framework.CycleState, pi *framework.PodInfo, nodes []*framework.NodeInfo) ([]*framework.NodeInfo, *framework.Status) {
	n := len(nodes)
	if n == 0 {
		// PreFilter left the pod only nodes that do not exist.
		s.statuses = s.statuses[:0]
		return nil, nil
	}
	want := s.numFeasibleNodesToFind(n)
	if cap(s.feasible) < want {
		s.feasible = make([]*framework.NodeInfo, want)
	}
	feasible := s.feasible[:want]
	if cap(s.statuses) < n {
		s.statuses = make([]*framework.Status, n)
	}
	s.statuses = s.statuses[:n]
	clear(s.statuses)

	var found, rejected atomic.Int32
	var firstErr atomic.Pointer[framework.Status]
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := s.nextStartNodeIndex % n
	workqueue.ParallelizeUntil(ctx, s.fwk.Parallelism(), n, func(i int) {
		idx := (start + i) % n
		st := s.filterNode(ctx, state, pi, nodes[idx])
		switch {
		case st.IsSuccess():
			k := found.Add(1)
			if int(k) > want {
				found.Add(-1)
				cancel()
				return
			}
			feasible[k-1] = nodes[idx]
		case st.Code() == framework.Error:
			firstErr.CompareAndSwap(nil, st)
			cancel()
		default:
			s.statuses[idx] = st
			rejected.Add(1)
		}
	}, workqueue.WithChunkSize(framework.ChunkSize(n, s.fwk.Parallelism())))
	if st := firstErr.Load(); st != nil {
		return nil, st
	}
	if err := parent.Err(); err != nil {
		return nil, framework.AsStatus(err)
	}
	s.nextStartNodeIndex = (start + int(found.Load()+rejected.Load())) % n
	return feasible[:found.Load()], nil
}

// filterNode runs the filters on node as it will be once the pods
// nominated to it that pi must leave room for run there, as upstream.
func (s *Scheduler) filterNode(ctx context.Context, state *framework.CycleState, pi *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	extra := s.nominated[node.Node().Name]
	if len(extra) == 0 {
		return s.fwk.RunFilterPlugins(ctx, state, pi, node)
	}
	n, st, r := withNominated(ctx, s.fwk, state, pi, node, extra)
	if !r.IsSuccess() {
		return r
	}
	return s.fwk.RunFilterPlugins(ctx, st, pi, n)
}

// postFilter runs preemption for a pod no node fits (statuses[i] is why
// nodes[i] did not) and returns msg with what preemption has to say.
func (s *Scheduler) postFilter(ctx context.Context, state *framework.CycleState, pi *framework.PodInfo, nodes []*framework.NodeInfo, statuses []*framework.Status, msg string) string {
	nominated, why := s.preempt(ctx, state, pi, nodes, statuses)
	if nominated != nil {
		state.Write(nominatedKey, *nominated)
	}
	if why != "" {
		msg += " " + why
	}
	return msg
}

// splitNodes parts nodes into those named in names and the others.
func splitNodes(nodes []*framework.NodeInfo, names sets.Set[string]) (in, out []*framework.NodeInfo) {
	for _, n := range nodes {
		if names.Has(n.Node().Name) {
			in = append(in, n)
		} else {
			out = append(out, n)
		}
	}
	return in, out
}

// fitErrorMessage is upstream's summary: "0/3 nodes are available: 1
// Insufficient cpu, 2 node(s) had untolerated taint {k: v}." with the
// "count reason" items sorted as strings.
func fitErrorMessage(numNodes int, counts map[string]int) string {
	items := make([]string, 0, len(counts))
	for r, c := range counts {
		items = append(items, fmt.Sprintf("%d %s", c, r))
	}
	sort.Strings(items)
	return fmt.Sprintf("0/%d nodes are available: %s.", numNodes, strings.Join(items, ", "))
}

// handleFailure requeues the pod, records the attempt, and tells users why
// through an event and the PodScheduled condition; nominated, when not nil,
// becomes the pod's status.nominatedNodeName.
func (s *Scheduler) handleFailure(ctx context.Context, qp *queue.QueuedPodInfo, cycle int64, st *framework.Status, msg string, start time.Time, nominated *string) {
	isError := st.Code() == framework.Error
	s.queue.AddUnschedulableIfNotPresent(qp, cycle, isError)
	result := resultUnschedulable
	reason := v1.PodReasonUnschedulable
	if isError {
		result = resultError
		reason = v1.PodReasonSchedulerError
	}
	s.metrics.observe(result, s.name, s.clock.Since(start).Seconds())
	slog.Debug("pod not scheduled", "pod", qp.Key(), "reason", msg)
	s.recorder.Event(qp.Pod, v1.EventTypeWarning, "FailedScheduling", msg)
	s.bindings.Add(1)
	go func() {
		defer s.bindings.Done()
		if err := s.setPodScheduledFalse(ctx, qp.Pod, reason, msg, nominated); err != nil && ctx.Err() == nil {
			slog.Warn("updating PodScheduled condition", "pod", qp.Key(), "err", err)
		}
	}()
}
