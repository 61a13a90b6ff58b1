// Package pleg is the pod lifecycle event generator: it relists the
// runtime's sandboxes and containers on a period and wakes the pods whose
// containers changed state (started, exited, removed).
package pleg

import (
	"context"
	"log/slog"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Lister lists what the runtime has.
type Lister interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// PodUIDLabel is the CRI label that carries a sandbox's or container's pod UID.
const PodUIDLabel = "io.kubernetes.pod.uid"

// Snapshot is one relist's result.
type Snapshot struct {
	Sandboxes  []*runtimeapi.PodSandbox
	Containers []*runtimeapi.Container
}

// PLEG relists and reports changes.
type PLEG struct {
	lister   Lister
	clock    clock.WithTicker
	period   time.Duration
	onChange func(podUID string)

	mu         sync.Mutex
	states     map[string]string // sandbox or container id -> pod uid + state
	lastRelist time.Time
	snapshot   Snapshot
}

// New returns a PLEG that calls onChange for each pod whose runtime state
// changed between two relists.
func New(l Lister, c clock.WithTicker, period time.Duration, onChange func(podUID string)) *PLEG {
	return &PLEG{lister: l, clock: c, period: period, onChange: onChange}
}

// Run relists every period until ctx ends.
func (p *PLEG) Run(ctx context.Context) {
	t := p.clock.NewTicker(p.period)
	defer t.Stop()
	for {
		if err := p.Relist(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("PLEG relist", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// Relist lists once and reports the pods that changed since the last time.
func (p *PLEG) Relist(ctx context.Context) error {
	sandboxes, err := p.lister.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	containers, err := p.lister.ListContainers(ctx, nil)
	if err != nil {
		return err
	}
	next := make(map[string]string, len(sandboxes)+len(containers))
	for _, s := range sandboxes {
		next["s/"+s.Id] = s.Labels[PodUIDLabel] + "/" + s.State.String()
	}
	for _, c := range containers {
		next["c/"+c.Id] = c.Labels[PodUIDLabel] + "/" + c.State.String()
	}
	p.mu.Lock()
	prev := p.states
	p.states = next
	p.lastRelist = p.clock.Now()
	p.snapshot = Snapshot{Sandboxes: sandboxes, Containers: containers}
	p.mu.Unlock()
	if prev == nil {
		return nil
	}
	changed := map[string]bool{}
	for id, v := range next {
		if prev[id] != v {
			changed[podOf(v)] = true
		}
	}
	for id, v := range prev {
		if _, ok := next[id]; !ok {
			changed[podOf(v)] = true
		}
	}
	for uid := range changed {
		if uid != "" {
			p.onChange(uid)
		}
	}
	return nil
}

func podOf(v string) string {
	for i := len(v) - 1; i >= 0; i-- {
		if v[i] == '/' {
			return v[:i]
		}
	}
	return v
}

// Healthy reports whether a relist succeeded within threshold.
func (p *PLEG) Healthy(threshold time.Duration) (bool, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.lastRelist.IsZero() && p.clock.Since(p.lastRelist) <= threshold, p.lastRelist
}

// Last is the latest relist's result.
func (p *PLEG) Last() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snapshot
}
