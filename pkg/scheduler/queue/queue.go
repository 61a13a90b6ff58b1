// Package queue is the scheduling queue: pods waiting for a scheduling
// attempt (active, by priority then age), pods backing off after a failed
// attempt (1 s doubling to 10 s), and unschedulable pods that wait for a
// cluster change that could make them fit.
package queue

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// Defaults as upstream.
const (
	DefaultInitialBackoff = 1 * time.Second
	DefaultMaxBackoff     = 10 * time.Second
	// DefaultMaxInUnschedulable is how long a pod may wait for a helpful
	// event before it is retried anyway (events can be missed: e.g. a
	// change no plugin declared).
	DefaultMaxInUnschedulable = 5 * time.Minute
)

// QueuedPodInfo is a pod in the queue with its scheduling history.
type QueuedPodInfo struct {
	*framework.PodInfo
	key string
	// Timestamp is when the pod entered the queue last; it orders pods of
	// equal priority and starts the back-off.
	Timestamp time.Time
	// InitialAttemptTimestamp is when the pod was first popped.
	InitialAttemptTimestamp time.Time
	Attempts                int
	// UnschedulablePlugins rejected the pod in its last attempt; only events
	// those plugins care about move it back to active.
	UnschedulablePlugins sets.Set[string]
	priority             int32
}

// Key is namespace/name.
func (p *QueuedPodInfo) Key() string { return p.key }

// PendingPodsRecorder observes queue lengths (the scheduler_pending_pods metric).
type PendingPodsRecorder interface {
	SetPending(queue string, n int)
}

type nopRecorder struct{}

func (nopRecorder) SetPending(string, int) {}

// Options tune the queue.
type Options struct {
	Clock              clock.WithTicker
	InitialBackoff     time.Duration
	MaxBackoff         time.Duration
	MaxInUnschedulable time.Duration
	Metrics            PendingPodsRecorder
}

// PriorityQueue is safe for concurrent use.
type PriorityQueue struct {
	clock              clock.WithTicker
	initialBackoff     time.Duration
	maxBackoff         time.Duration
	maxInUnschedulable time.Duration
	metrics            PendingPodsRecorder

	mu            sync.Mutex
	cond          sync.Cond
	active        *keyedHeap
	backoff       *keyedHeap
	unschedulable map[string]*QueuedPodInfo
	// gated pods have spec.schedulingGates; they wait for their removal.
	gated map[string]*QueuedPodInfo
	// inFlight holds popped pods; false marks one deleted while in flight,
	// which must not come back to the queue.
	inFlight map[string]bool
	// schedulingCycle counts Pops; moveRequestCycle is the cycle of the last
	// move request, so that a pod whose attempt overlapped a helpful event
	// backs off instead of waiting for another event.
	schedulingCycle  int64
	moveRequestCycle int64
	closed           bool
}

// New returns an empty queue.
func New(o Options) *PriorityQueue {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.InitialBackoff == 0 {
		o.InitialBackoff = DefaultInitialBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxInUnschedulable == 0 {
		o.MaxInUnschedulable = DefaultMaxInUnschedulable
	}
	if o.Metrics == nil {
		o.Metrics = nopRecorder{}
	}
	q := &PriorityQueue{
		clock: o.Clock, initialBackoff: o.InitialBackoff, maxBackoff: o.MaxBackoff,
		maxInUnschedulable: o.MaxInUnschedulable, metrics: o.Metrics,
		unschedulable: map[string]*QueuedPodInfo{}, gated: map[string]*QueuedPodInfo{}, inFlight: map[string]bool{},
		moveRequestCycle: -1,
	}
	q.cond.L = &q.mu
	q.active = newKeyedHeap(func(a, b *QueuedPodInfo) bool {
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		return a.Timestamp.Before(b.Timestamp)
	})
	q.backoff = newKeyedHeap(func(a, b *QueuedPodInfo) bool {
		return q.backoffExpiry(a).Before(q.backoffExpiry(b))
	})
	return q
}

func key(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// Run flushes completed back-offs every second and leftover unschedulable
// pods every 30 s until ctx ends, then closes the queue.
func (q *PriorityQueue) Run(ctx context.Context) {
	backoffTick := q.clock.NewTicker(time.Second)
	defer backoffTick.Stop()
	leftoverTick := q.clock.NewTicker(30 * time.Second)
	defer leftoverTick.Stop()
	for {
		select {
		case <-ctx.Done():
			q.Close()
			return
		case <-backoffTick.C():
			q.FlushBackoffCompleted()
		case <-leftoverTick.C():
			q.FlushUnschedulableLeftover()
		}
	}
}

// Close wakes Pop callers; Pop then returns nil.
func (q *PriorityQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

func (q *PriorityQueue) recordLocked() {
	q.metrics.SetPending("active", q.active.Len())
	q.metrics.SetPending("backoff", q.backoff.Len())
	q.metrics.SetPending("unschedulable", len(q.unschedulable))
	q.metrics.SetPending("gated", len(q.gated))
}

func (q *PriorityQueue) newInfo(pod *v1.Pod) *QueuedPodInfo {
	return &QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), key: key(pod), Timestamp: q.clock.Now(),
		priority: corev1helpers.PodPriority(pod)}
}

// Add queues a new pending pod.
func (q *PriorityQueue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := key(pod)
	if q.inFlight[k] {
		return
	}
	q.backoff.Delete(k)
	delete(q.unschedulable, k)
	if len(pod.Spec.SchedulingGates) > 0 {
		q.active.Delete(k)
		q.gated[k] = q.newInfo(pod)
		q.recordLocked()
		return
	}
	delete(q.gated, k)
	q.active.AddOrUpdate(q.newInfo(pod))
	q.recordLocked()
	q.cond.Signal()
}

// Pop blocks until a pod is active and returns it (nil once closed). The pod
// stays in flight until Done or AddUnschedulableIfNotPresent.
func (q *PriorityQueue) Pop() *QueuedPodInfo {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil
	}
	p := q.active.PopTop()
	p.Attempts++
	if p.InitialAttemptTimestamp.IsZero() {
		p.InitialAttemptTimestamp = q.clock.Now()
	}
	q.schedulingCycle++
	q.inFlight[p.key] = true
	q.recordLocked()
	return p
}

// SchedulingCycle returns the number of Pops so far.
func (q *PriorityQueue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.schedulingCycle
}

// Done ends a pod's time in flight (it was assumed or dropped).
func (q *PriorityQueue) Done(p *QueuedPodInfo) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, p.key)
}

// AddUnschedulableIfNotPresent returns a pod after a failed attempt started
// in cycle. Pods that hit an error, or whose attempt overlapped a move
// request, back off; others wait in the unschedulable pool.
func (q *PriorityQueue) AddUnschedulableIfNotPresent(p *QueuedPodInfo, cycle int64, isError bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	alive, wasInFlight := q.inFlight[p.key]
	delete(q.inFlight, p.key)
	if wasInFlight && !alive {
		return
	}
	if _, ok := q.active.Get(p.key); ok {
		return
	}
	if _, ok := q.backoff.Get(p.key); ok {
		return
	}
	p.Timestamp = q.clock.Now()
	if isError || q.moveRequestCycle >= cycle {
		q.backoff.AddOrUpdate(p)
	} else {
		q.unschedulable[p.key] = p
	}
	q.recordLocked()
}

// Update replaces a pending pod. An unschedulable pod whose spec changed
// gets another try, since the change may make it fit.
func (q *PriorityQueue) Update(oldPod, newPod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := key(newPod)
	if q.inFlight[k] {
		return
	}
	if p, ok := q.gated[k]; ok {
		if len(newPod.Spec.SchedulingGates) > 0 {
			q.gated[k] = q.refresh(p, newPod)
			return
		}
		// The last gate was removed: the pod's first attempt starts now.
		delete(q.gated, k)
		p = q.refresh(p, newPod)
		p.Timestamp = q.clock.Now()
		q.active.AddOrUpdate(p)
		q.recordLocked()
		q.cond.Signal()
		return
	}
	if p, ok := q.active.Get(k); ok {
		q.active.AddOrUpdate(q.refresh(p, newPod))
		return
	}
	if p, ok := q.backoff.Get(k); ok {
		q.backoff.AddOrUpdate(q.refresh(p, newPod))
		return
	}
	if p, ok := q.unschedulable[k]; ok {
		p = q.refresh(p, newPod)
		if oldPod != nil && !equality.Semantic.DeepEqual(oldPod.Spec, newPod.Spec) ||
			oldPod != nil && !equality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels) {
			delete(q.unschedulable, k)
			q.moveLocked(p)
		} else {
			q.unschedulable[k] = p
		}
		q.recordLocked()
		return
	}
	if len(newPod.Spec.SchedulingGates) > 0 {
		q.gated[k] = q.newInfo(newPod)
	} else {
		q.active.AddOrUpdate(q.newInfo(newPod))
		q.cond.Signal()
	}
	q.recordLocked()
}

func (q *PriorityQueue) refresh(p *QueuedPodInfo, pod *v1.Pod) *QueuedPodInfo {
	c := *p
	c.PodInfo = framework.NewPodInfo(pod)
	c.priority = corev1helpers.PodPriority(pod)
	return &c
}

// Delete removes a pod from the queue.
func (q *PriorityQueue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := key(pod)
	if _, ok := q.inFlight[k]; ok {
		q.inFlight[k] = false
	}
	q.active.Delete(k)
	q.backoff.Delete(k)
	delete(q.unschedulable, k)
	delete(q.gated, k)
	q.recordLocked()
}

func (q *PriorityQueue) backoffDuration(p *QueuedPodInfo) time.Duration {
	d := q.initialBackoff
	for i := 1; i < p.Attempts; i++ {
		d *= 2
		if d >= q.maxBackoff {
			return q.maxBackoff
		}
	}
	return d
}

func (q *PriorityQueue) backoffExpiry(p *QueuedPodInfo) time.Time {
	return p.Timestamp.Add(q.backoffDuration(p))
}

// moveLocked sends a pod to back-off if its back-off has not expired yet,
// else to active.
func (q *PriorityQueue) moveLocked(p *QueuedPodInfo) {
	if q.clock.Now().Before(q.backoffExpiry(p)) {
		q.backoff.AddOrUpdate(p)
		return
	}
	q.active.AddOrUpdate(p)
	q.cond.Signal()
}

// MoveAllToActiveOrBackoffQueue moves unschedulable pods that a cluster
// event may help: those rejected by one of plugins (nil means every pod).
func (q *PriorityQueue) MoveAllToActiveOrBackoffQueue(plugins sets.Set[string]) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, p := range q.unschedulable {
		if plugins != nil && len(p.UnschedulablePlugins) > 0 && !plugins.HasAny(p.UnschedulablePlugins.UnsortedList()...) {
			continue
		}
		delete(q.unschedulable, k)
		q.moveLocked(p)
	}
	q.moveRequestCycle = q.schedulingCycle
	q.recordLocked()
}

// FlushBackoffCompleted moves pods whose back-off expired to active.
func (q *PriorityQueue) FlushBackoffCompleted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	moved := false
	for {
		p := q.backoff.Peek()
		if p == nil || q.backoffExpiry(p).After(now) {
			break
		}
		q.backoff.PopTop()
		q.active.AddOrUpdate(p)
		moved = true
	}
	if moved {
		q.recordLocked()
		q.cond.Broadcast()
	}
}

// FlushUnschedulableLeftover retries pods that waited too long for an event.
func (q *PriorityQueue) FlushUnschedulableLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for k, p := range q.unschedulable {
		if now.Sub(p.Timestamp) > q.maxInUnschedulable {
			delete(q.unschedulable, k)
			q.moveLocked(p)
		}
	}
	q.recordLocked()
}

// Gated returns the number of pods waiting for scheduling gates.
func (q *PriorityQueue) Gated() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.gated)
}

// Lengths returns the sizes of active, backoff and unschedulable.
func (q *PriorityQueue) Lengths() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len(), len(q.unschedulable)
}
