// Package prober runs containers' liveness, readiness and startup probes on
// their periods and keeps the latest result of each, so the kubelet can
// restart unhealthy containers and report readiness.
package prober

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/kubelet/events"
)

// Kind is which probe.
type Kind int

const (
	Liveness Kind = iota
	Readiness
	Startup
)

func (k Kind) String() string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	default:
		return "Startup"
	}
}

// Result of a probe, or of a run of probes once thresholds are applied.
type Result int

const (
	Unknown Result = iota
	Success
	Failure
)

// Target is the container a probe checks.
type Target struct {
	Pod         *v1.Pod
	Container   *v1.Container
	ContainerID string
	PodIP       string
}

// Runner runs one probe once.
type Runner interface {
	Run(ctx context.Context, target Target, probe *v1.Probe) (Result, string)
}

// Running describes a running container the kubelet wants probed.
type Running struct {
	Name      string
	ID        string
	StartedAt time.Time
}

// Manager owns one worker per probed container and probe kind.
type Manager struct {
	clock    clock.WithTicker
	runner   Runner
	recorder record.EventRecorder
	onChange func(podUID types.UID)

	mu      sync.Mutex
	workers map[key]*worker
	results map[key]Result
}

type key struct {
	containerID string
	kind        Kind
}

// NewManager returns a manager; onChange is called (from a worker goroutine)
// when a container's thresholded result changes, to resync its pod.
func NewManager(c clock.WithTicker, runner Runner, recorder record.EventRecorder, onChange func(types.UID)) *Manager {
	return &Manager{clock: c, runner: runner, recorder: recorder, onChange: onChange, workers: map[key]*worker{}, results: map[key]Result{}}
}

// Sync makes the set of workers for pod match its running containers:
// new containers get workers, containers no longer running lose theirs.
func (m *Manager) Sync(ctx context.Context, pod *v1.Pod, podIP string, running []Running) {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[key]bool{}
	for _, r := range running {
		c := findContainer(pod, r.Name)
		if c == nil {
			continue
		}
		for kind, probe := range map[Kind]*v1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
			if probe == nil {
				continue
			}
			k := key{r.ID, kind}
			want[k] = true
			if _, ok := m.workers[k]; ok {
				continue
			}
			w := newWorker(m, kind, probe, Target{Pod: pod, Container: c, ContainerID: r.ID, PodIP: podIP}, r.StartedAt)
			m.workers[k] = w
			if _, ok := m.results[k]; !ok {
				m.results[k] = w.initial()
			}
			go w.run(ctx)
		}
	}
	for k, w := range m.workers {
		if w.target.Pod.UID == pod.UID && !want[k] {
			w.stop()
			delete(m.workers, k)
			delete(m.results, k)
		}
	}
}

// RemovePod stops all of pod's workers.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.workers {
		if w.target.Pod.UID == uid {
			w.stop()
			delete(m.workers, k)
			delete(m.results, k)
		}
	}
}

// Result is the current thresholded result for a container's probe, and
// whether the container has such a probe.
func (m *Manager) Result(containerID string, kind Kind) (Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[key{containerID, kind}]
	return r, ok
}

func (m *Manager) set(k key, r Result) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.workers[k]; !ok {
		return false
	}
	old := m.results[k]
	m.results[k] = r
	return old != r
}

// findContainer is the probed container called name: an app container or a
// sidecar (plain init containers have no probes).
func findContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.Name == name && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			return c
		}
	}
	return nil
}

// worker probes one container with one probe.
type worker struct {
	m         *Manager
	kind      Kind
	probe     *v1.Probe
	target    Target
	startedAt time.Time
	stopCh    chan struct{}
	stopOnce  sync.Once

	last  Result
	count int
	// onHold stops a liveness or startup worker once it has failed: the
	// container is about to be killed and a new one gets a new worker.
	onHold bool
}

func newWorker(m *Manager, kind Kind, probe *v1.Probe, target Target, startedAt time.Time) *worker {
	return &worker{m: m, kind: kind, probe: probe, target: target, startedAt: startedAt, stopCh: make(chan struct{})}
}

// initial is what a container reports before its first probe: not ready,
// alive, not yet started.
func (w *worker) initial() Result {
	switch w.kind {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	default:
		return Unknown
	}
}

func (w *worker) stop() { w.stopOnce.Do(func() { close(w.stopCh) }) }

func (w *worker) run(ctx context.Context) {
	period := seconds(w.probe.PeriodSeconds, 10)
	ticker := w.m.clock.NewTicker(period)
	defer ticker.Stop()
	for {
		if !w.doProbe(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-w.stopCh:
			return
		case <-ticker.C():
		}
	}
}

// doProbe runs the probe once if it is due and records the outcome. It
// reports false when the worker should stop.
func (w *worker) doProbe(ctx context.Context) bool {
	select {
	case <-w.stopCh:
		return false
	default:
	}
	if w.onHold {
		return true
	}
	if w.kind != Startup && w.target.Container.StartupProbe != nil {
		if r, _ := w.m.Result(w.target.ContainerID, Startup); r != Success {
			return true
		}
	}
	if w.m.clock.Since(w.startedAt) < time.Duration(w.probe.InitialDelaySeconds)*time.Second {
		return true
	}
	if w.kind == Startup {
		if r, _ := w.m.Result(w.target.ContainerID, Startup); r == Success {
			return true
		}
	}
	timeout := seconds(w.probe.TimeoutSeconds, 1)
	pctx, cancel := context.WithTimeout(ctx, timeout)
	result, output := w.m.runner.Run(pctx, w.target, w.probe)
	cancel()
	if result == Failure && w.m.recorder != nil {
		w.m.recorder.Eventf(events.ContainerRef(w.target.Pod, w.target.Container.Name), v1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", w.kind, output)
	}
	if newResult, changed := w.observe(result); changed {
		if w.m.set(key{w.target.ContainerID, w.kind}, newResult) && w.m.onChange != nil {
			w.m.onChange(w.target.Pod.UID)
		}
	}
	return true
}

// observe applies the success and failure thresholds to one probe outcome:
// the reported result changes only after enough equal outcomes in a row.
func (w *worker) observe(r Result) (Result, bool) {
	if r == w.last {
		w.count++
	} else {
		w.last = r
		w.count = 1
	}
	failureThreshold := int(w.probe.FailureThreshold)
	if failureThreshold <= 0 {
		failureThreshold = 3
	}
	successThreshold := int(w.probe.SuccessThreshold)
	if successThreshold <= 0 || w.kind != Readiness {
		successThreshold = 1
	}
	switch {
	case r == Failure && w.count >= failureThreshold:
		if w.kind != Readiness {
			w.onHold = true
		}
		return Failure, true
	case r == Success && w.count >= successThreshold:
		return Success, true
	}
	return Unknown, false
}

func seconds(v int32, def int) time.Duration {
	if v <= 0 {
		return time.Duration(def) * time.Second
	}
	return time.Duration(v) * time.Second
}
