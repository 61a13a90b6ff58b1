package controllerutil

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Queue is the rate-limited queue of object keys every controller uses.
type Queue = workqueue.TypedRateLimitingInterface[string]

// NewQueue returns a named rate-limited queue; the name labels its metrics.
// mp may be nil (no metrics).
func NewQueue(name string, mp workqueue.MetricsProvider) Queue {
	cfg := workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: mp}
	if mp == nil {
		cfg.MetricsProvider = noMetrics{}
	}
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), cfg)
}

// SyncFunc reconciles the object behind key; an error requeues it with back-off.
type SyncFunc func(ctx context.Context, key string) error

// RunWorkers processes q with n workers until ctx ends, then shuts q down
// and waits for the workers.
func RunWorkers(ctx context.Context, name string, q Queue, n int, syncFn SyncFunc) {
	if n < 1 {
		n = 1
	}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext(ctx, name, q, syncFn) {
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func processNext(ctx context.Context, name string, q Queue, sync SyncFunc) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	err := sync(ctx, key)
	switch {
	case err == nil:
		q.Forget(key)
	case errors.IsNotFound(err) && ctx.Err() == nil:
		// The object went away under us; its delete event will bring us back.
		slog.Debug("sync: object gone", "controller", name, "key", key, "err", err)
		q.Forget(key)
	default:
		if ctx.Err() == nil {
			lvl := slog.LevelInfo
			if errors.IsConflict(err) {
				lvl = slog.LevelDebug // stale cache; the next try sees the new version
			}
			slog.Log(ctx, lvl, "sync failed, will retry", "controller", name, "key", key, "err", err)
		}
		q.AddRateLimited(key)
	}
	return true
}

// KeyFunc is the namespace/name key, tolerant of tombstones.
func KeyFunc(obj any) (string, bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return "", false
	}
	return key, true
}

// EnqueueHandler adds the key of every added, updated or deleted object to q.
func EnqueueHandler(q Queue) cache.ResourceEventHandler {
	add := func(obj any) {
		if key, ok := KeyFunc(obj); ok {
			q.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: add,
	}
}

// WaitForSync waits for the informers' caches; false when ctx ended first.
func WaitForSync(ctx context.Context, name string, synced ...cache.InformerSynced) bool {
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return false
	}
	slog.Info("caches synced", "controller", name)
	return true
}

type noMetrics struct{}

type noMetric struct{}

func (noMetric) Inc()            {}
func (noMetric) Dec()            {}
func (noMetric) Set(float64)     {}
func (noMetric) Observe(float64) {}

func (noMetrics) NewDepthMetric(string) workqueue.GaugeMetric            { return noMetric{} }
func (noMetrics) NewAddsMetric(string) workqueue.CounterMetric           { return noMetric{} }
func (noMetrics) NewLatencyMetric(string) workqueue.HistogramMetric      { return noMetric{} }
func (noMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric { return noMetric{} }
func (noMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}
func (noMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}
func (noMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return noMetric{} }

// ResyncAfter is how long a controller waits before re-checking a time-based
// condition (availability after minReadySeconds, deadlines) it cannot watch.
func ResyncAfter(d time.Duration) time.Duration {
	if d < time.Second {
		return time.Second
	}
	return d
}
