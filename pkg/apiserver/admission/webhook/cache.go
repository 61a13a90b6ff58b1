package webhook

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// WatchFunc opens a watch on every configuration object of one kind, from
// the current state: ADDED events for what exists, then a BOOKMARK
// annotated metav1.InitialEventsAnnotationKey, then the changes.
type WatchFunc func(ctx context.Context) (watch.Interface, error)

// Cache holds the configuration objects of one kind, kept current by a
// watch, so admission reads no storage per request.
type Cache[T runtime.Object] struct {
	watch WatchFunc
	clock clock.Clock

	// items is nil until the first sync. Every request of every kind reads
	// it (twice, mutating and validating), from all cores: an atomic load
	// keeps that off a shared lock word.
	items  atomic.Pointer[[]T]
	synced chan struct{}
	once   sync.Once
}

// NewCache returns a cache fed by w; Run starts it.
func NewCache[T runtime.Object](w WatchFunc, clk clock.Clock) *Cache[T] {
	return &Cache[T]{watch: w, clock: clk, synced: make(chan struct{})}
}

// NewStaticCache returns a synced cache holding items (for tests).
func NewStaticCache[T runtime.Object](items ...T) *Cache[T] {
	c := &Cache[T]{synced: make(chan struct{})}
	c.set(items)
	return c
}

func (c *Cache[T]) set(items []T) {
	sort.Slice(items, func(i, j int) bool { return nameOf(items[i]) < nameOf(items[j]) })
	c.items.Store(&items)
	c.once.Do(func() { close(c.synced) })
}

func nameOf(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}

// List returns the objects sorted by name, waiting for the first sync.
func (c *Cache[T]) List(ctx context.Context) ([]T, error) {
	if items := c.items.Load(); items != nil {
		return *items, nil
	}
	select {
	case <-c.synced:
		return *c.items.Load(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Run keeps the cache current until ctx ends, reopening the watch (and
// starting again from the full state) whenever it breaks.
func (c *Cache[T]) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.watchOnce(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("admission webhook configuration watch failed, retrying", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-c.clock.After(time.Second):
		}
	}
}

func (c *Cache[T]) watchOnce(ctx context.Context) error {
	w, err := c.watch(ctx)
	if err != nil {
		return err
	}
	defer w.Stop()
	byName := map[string]T{}
	initial := true
	publish := func() {
		items := make([]T, 0, len(byName))
		for _, it := range byName {
			items = append(items, it)
		}
		c.set(items)
	}
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return apiError(ev.Object)
		case watch.Bookmark:
			if initial {
				if m, err := meta.Accessor(ev.Object); err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					initial = false
					publish()
				}
			}
			continue
		}
		obj, ok := ev.Object.(T)
		if !ok {
			continue
		}
		if ev.Type == watch.Deleted {
			delete(byName, nameOf(obj))
		} else {
			byName[nameOf(obj)] = obj
		}
		if !initial {
			publish()
		}
	}
	return nil
}

type watchError struct{ status *metav1.Status }

func (e watchError) Error() string { return "watch error: " + e.status.Message }

func apiError(obj runtime.Object) error {
	if st, ok := obj.(*metav1.Status); ok {
		return watchError{st}
	}
	return watchError{&metav1.Status{Message: "unknown"}}
}
