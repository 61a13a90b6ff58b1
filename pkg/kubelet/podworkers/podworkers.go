// Package podworkers runs one goroutine per pod so that a pod's syncs never
// overlap while different pods sync in parallel.
package podworkers

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// SyncFunc syncs one pod. done means the pod is finished on this node and
// its worker can go; otherwise the pod is synced again after retryAfter
// (0: only when woken). ctx ends when the sync returns, or earlier when it
// is interrupted: work that must outlive the sync needs a context of its own.
type SyncFunc func(ctx context.Context, key string) (retryAfter time.Duration, done bool)

// Workers owns the per-pod goroutines.
type Workers struct {
	sync  SyncFunc
	clock clock.WithTicker

	mu      sync.Mutex
	workers map[string]*worker
	wg      sync.WaitGroup
}

type worker struct {
	wake chan struct{}
	// cancel ends the sync in progress; nil between syncs.
	cancel context.CancelFunc
}

// New returns an empty set of workers.
func New(c clock.WithTicker, sync SyncFunc) *Workers {
	return &Workers{sync: sync, clock: c, workers: map[string]*worker{}}
}

// Update wakes key's worker, starting one if it has none. Wake-ups that
// arrive during a sync collapse into one more sync.
func (w *Workers) Update(ctx context.Context, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wakeLocked(ctx, key)
}

func (w *Workers) wakeLocked(ctx context.Context, key string) {
	wk, ok := w.workers[key]
	if !ok {
		wk = &worker{wake: make(chan struct{}, 1)}
		w.workers[key] = wk
		w.wg.Add(1)
		go w.run(ctx, key, wk)
	}
	select {
	case wk.wake <- struct{}{}:
	default:
	}
}

// Interrupt cancels key's sync in progress, if any, and has it synced again
// at once. A pod that is being deleted must not wait for a sync still busy
// starting it (an image pull can take minutes) before it is stopped.
func (w *Workers) Interrupt(ctx context.Context, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wk, ok := w.workers[key]; ok && wk.cancel != nil {
		wk.cancel()
	}
	w.wakeLocked(ctx, key)
}

// Keys lists the pods that have a worker.
func (w *Workers) Keys() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]string, 0, len(w.workers))
	for k := range w.workers {
		keys = append(keys, k)
	}
	return keys
}

// Has reports whether key has a worker.
func (w *Workers) Has(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.workers[key]
	return ok
}

// Wait blocks until every worker has returned (after ctx is cancelled).
func (w *Workers) Wait() { w.wg.Wait() }

func (w *Workers) run(ctx context.Context, key string, wk *worker) {
	defer w.wg.Done()
	var timer clock.Timer
	var timerC <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wk.wake:
		case <-timerC:
		}
		retryAfter, done := w.syncOnce(ctx, key, wk)
		if done {
			w.mu.Lock()
			if len(wk.wake) == 0 {
				delete(w.workers, key)
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			continue
		}
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		if retryAfter > 0 {
			timer = w.clock.NewTimer(retryAfter)
			timerC = timer.C()
		}
	}
}

// syncOnce runs one sync under a context Interrupt can cancel.
func (w *Workers) syncOnce(ctx context.Context, key string, wk *worker) (time.Duration, bool) {
	sctx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	wk.cancel = cancel
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		wk.cancel = nil
		w.mu.Unlock()
		cancel()
	}()
	return w.sync(sctx, key)
}
