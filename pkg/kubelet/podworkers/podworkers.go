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
// (0: only when woken).
type SyncFunc func(ctx context.Context, key string) (retryAfter time.Duration, done bool)

// Workers owns the per-pod goroutines.
type Workers struct {
	sync  SyncFunc
	clock clock.WithTicker

	mu      sync.Mutex
	workers map[string]chan struct{}
	wg      sync.WaitGroup
}

// New returns an empty set of workers.
func New(c clock.WithTicker, sync SyncFunc) *Workers {
	return &Workers{sync: sync, clock: c, workers: map[string]chan struct{}{}}
}

// Update wakes key's worker, starting one if it has none. Wake-ups that
// arrive during a sync collapse into one more sync.
func (w *Workers) Update(ctx context.Context, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.workers[key]
	if !ok {
		ch = make(chan struct{}, 1)
		w.workers[key] = ch
		w.wg.Add(1)
		go w.run(ctx, key, ch)
	}
	select {
	case ch <- struct{}{}:
	default:
	}
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

func (w *Workers) run(ctx context.Context, key string, wake chan struct{}) {
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
		case <-wake:
		case <-timerC:
		}
		retryAfter, done := w.sync(ctx, key)
		if done {
			w.mu.Lock()
			if len(wake) == 0 {
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
