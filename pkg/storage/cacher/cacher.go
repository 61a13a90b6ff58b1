// Package cacher serves watches of one resource from memory: one storage
// watch per resource feeds the current objects and a ring of recent events,
// and every client watch it can serve exactly is fanned out from there
// instead of opening its own etcd watch and decoding every event again.
// This is upstream's watch cache idea (k8s.io/apiserver's cacher), kept
// small: what it cannot serve exactly goes to the storage unchanged.
package cacher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

const (
	// DefaultCapacity is how many recent events the ring keeps: a client
	// that re-watches from a resourceVersion at most this many changes of
	// the resource old is served from memory.
	DefaultCapacity = 1000
	// DefaultSlowWatcherBound is how long the cache waits for a watcher
	// whose buffer is full before it ends that watcher, as upstream's
	// dispatch time budget: one stuck client must not hold back the others.
	DefaultSlowWatcherBound = 100 * time.Millisecond
	// DefaultWatcherBuffer is how many events a watcher may fall behind
	// the cache before the slow-watcher bound applies.
	DefaultWatcherBuffer = 1000
	// DefaultBookmarkInterval matches the storage's.
	DefaultBookmarkInterval = 2 * time.Second
	// restartDelay spaces re-watches of the storage after a failure.
	restartDelay = time.Second
	// DefaultFreshnessBound is how long a watch that must start at a
	// revision the cache has not reached yet waits for it before the
	// storage serves it instead, as upstream's watch cache blocks (3 s).
	DefaultFreshnessBound = 3 * time.Second
	// progressRetry spaces progress requests while a watch waits: etcd
	// drops a request while any watch of the stream is still catching up,
	// so one request is not always answered.
	progressRetry = 100 * time.Millisecond
)

// Config builds a Cacher.
type Config struct {
	// Storage is the store of one resource; every call but Watch goes to it
	// unchanged.
	Storage storage.Interface
	// Source, if set, is the same store through another connection, for
	// the cache's own watch (default Storage). That watch asks for
	// storage.ListOptions.Encoded: the cache decodes an object only when a
	// watcher needs it, so that a resource nobody watches costs a write no
	// decode and the collector no objects to scan.
	Source storage.Interface
	// Decode turns a value the storage holds into the object at revision
	// rev (etcd3.NewDecoder).
	Decode func(data []byte, rev int64) (runtime.Object, error)
	// Prefix is the resource's storage key prefix ("/pods/").
	Prefix string
	// NewFunc returns an empty object of the resource, for bookmarks.
	NewFunc func() runtime.Object
	// NewListFunc returns an empty list of the resource. With it, a watch
	// from a revision etcd has compacted goes to the storage (which
	// answers 410) even when the ring still holds it, so that clients see
	// the same contract whether the cache serves them or not.
	NewListFunc func() runtime.Object
	// BookmarkInterval is how often watchers that allow bookmarks get one
	// at the cache's revision (default DefaultBookmarkInterval).
	BookmarkInterval time.Duration
	// GroupVersionKind is set on every cached object once, when it is
	// decoded: objects are shared by every watcher, so nobody may write to
	// them later.
	GroupVersionKind schema.GroupVersionKind
	// Clock times the slow-watcher bound, the freshness bound and restarts
	// (default real).
	Clock clock.WithTicker
	// FreshnessBound (default DefaultFreshnessBound) is how long a watch
	// waits for the cache to reach the revision it must start at.
	FreshnessBound time.Duration
	// Capacity of the event ring (default DefaultCapacity).
	Capacity int
	// WatcherBuffer is how many events a watcher may fall behind before
	// it counts as slow (default DefaultWatcherBuffer).
	WatcherBuffer int
	// SlowWatcherBound (default DefaultSlowWatcherBound).
	SlowWatcherBound time.Duration
	// Metrics, if set, counts watches and terminations.
	Metrics *Metrics
}

// Cacher is a storage.Interface serving watches from memory.
type Cacher struct {
	storage.Interface
	cfg Config
	gr  []string // metric labels: group, resource

	mu sync.RWMutex
	// ready: the cache holds the state at its storage watch's revision
	// and every change since; false while (re)starting.
	ready bool
	// rev is the revision the cache reflects.
	rev int64
	// advanced is closed whenever rev advances or ready changes, for
	// watches waiting for the cache to catch up; made by the first of them
	// (nil while nobody waits, so that a write costs no channel).
	advanced chan struct{}
	// oldest: the ring holds every event of the resource after it.
	oldest  int64
	objects map[string]*state
	ring    []*event // circular, ring[head] is the oldest entry
	head    int
	size    int
	// watchers is copied on write, so that dispatching reads it unlocked.
	watchers []*cacheWatcher
}

// New returns a Cacher around cfg.Storage; it serves watches from memory
// once Run has loaded the resource.
func New(cfg Config) *Cacher {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Source == nil {
		cfg.Source = cfg.Storage
	}
	if cfg.Capacity <= 0 {
		cfg.Capacity = DefaultCapacity
	}
	if cfg.WatcherBuffer <= 0 {
		cfg.WatcherBuffer = DefaultWatcherBuffer
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = DefaultBookmarkInterval
	}
	if cfg.SlowWatcherBound <= 0 {
		cfg.SlowWatcherBound = DefaultSlowWatcherBound
	}
	if cfg.FreshnessBound <= 0 {
		cfg.FreshnessBound = DefaultFreshnessBound
	}
	return &Cacher{
		Interface: cfg.Storage,
		cfg:       cfg,
		gr:        []string{cfg.GroupVersionKind.Group, strings.Trim(cfg.Prefix, "/")},
	}
}

// Run keeps the cache fed from one storage watch until ctx ends, starting
// over (and ending every cached watcher) whenever that watch ends.
func (c *Cacher) Run(ctx context.Context) {
	for {
		err := c.follow(ctx)
		c.reset(ctx)
		if ctx.Err() != nil {
			return
		}
		slog.Warn("watch cache: storage watch ended, restarting", "prefix", c.cfg.Prefix, "err", err)
		t := c.cfg.Clock.NewTimer(restartDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// follow loads the resource and applies its changes until the storage
// watch ends.
func (c *Cacher) follow(ctx context.Context) error {
	w, err := c.cfg.Source.Watch(ctx, c.cfg.Prefix, storage.ListOptions{
		Recursive: true, AllowWatchBookmarks: true, InitialEventsEndBookmark: true, Encoded: true,
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	// The storage reports each revision once; watchers that start later
	// still need their bookmarks, from the cache's own ticker.
	tick := c.cfg.Clock.NewTicker(c.cfg.BookmarkInterval)
	defer tick.Stop()
	initial := map[string]*state{}
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C():
			if initial == nil {
				c.bookmark(0)
			}
			continue
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return errors.New("storage watch closed")
		}
		switch ev.Type {
		case watch.Error:
			return apierrors.FromObject(ev.Object)
		case watch.Bookmark:
			rev := storage.RevisionOf(ev.Object)
			if initial != nil {
				if storage.IsInitialEventsEnd(ev.Object) {
					c.start(initial, rev)
					initial = nil
				}
				continue
			}
			c.bookmark(rev)
			continue
		}
		enc, ok := ev.Object.(*storage.Encoded)
		if !ok {
			return fmt.Errorf("storage watch sent a %T, not an encoded object", ev.Object)
		}
		if initial != nil {
			initial[enc.Key] = &state{data: enc.Data, rev: enc.Rev}
			continue
		}
		if err := c.apply(ev.Type, enc); err != nil {
			return err
		}
	}
}

func (c *Cacher) start(objects map[string]*state, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objects = objects
	c.rev, c.oldest = rev, rev
	c.ring = make([]*event, c.cfg.Capacity)
	c.head, c.size = 0, 0
	c.ready = true
	c.signalLocked()
	c.cfg.Metrics.initialized(c.gr)
}

// signalLocked wakes the watches waiting for the cache to move.
func (c *Cacher) signalLocked() {
	if c.advanced != nil {
		close(c.advanced)
		c.advanced = nil
	}
}

// reset forgets the state and ends every cached watcher, so that their
// clients re-watch (from the storage until the cache is back). A watcher
// whose resume point etcd has compacted first gets the 410 that re-watch
// would get, as a watch served by the storage would have: when compaction
// ended the cache's own watch, that is what its clients must hear.
func (c *Cacher) reset(ctx context.Context) {
	c.mu.Lock()
	ws := c.watchers
	c.watchers = nil
	c.ready = false
	c.objects, c.ring = nil, nil
	c.head, c.size = 0, 0
	c.signalLocked()
	c.mu.Unlock()
	for _, w := range ws {
		// Run's goroutine dispatches too, so w.last is ours to read.
		if ctx.Err() == nil && errors.Is(c.listAt(ctx, w.last.rev+1), storage.ErrResourceVersionGone) {
			msg := "too old resource version: " + strconv.FormatInt(w.last.rev, 10)
			w.send(watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired(msg).ErrStatus}, nil)
		}
		w.end()
	}
}

func (c *Cacher) apply(typ watch.EventType, enc *storage.Encoded) error {
	e := &event{typ: typ, key: enc.Key, rev: enc.Rev}
	c.mu.Lock()
	e.prev = c.objects[enc.Key]
	if typ == watch.Deleted {
		if e.prev == nil {
			c.mu.Unlock()
			return fmt.Errorf("deletion of %s, which the cache does not hold", enc.Key)
		}
		// The storage sends no value with a deletion: clients get the
		// last state the cache holds, at the deletion's revision.
		e.cur = &state{of: e.prev, rev: e.rev}
		delete(c.objects, enc.Key)
	} else {
		e.cur = &state{data: enc.Data, rev: e.rev}
		c.objects[enc.Key] = e.cur
	}
	if c.size == len(c.ring) {
		c.oldest = c.ring[c.head].rev
		c.ring[c.head] = nil
		c.head = (c.head + 1) % len(c.ring)
		c.size--
	}
	c.ring[(c.head+c.size)%len(c.ring)] = e
	c.size++
	c.rev = e.rev
	c.signalLocked()
	ws := c.watchers
	c.mu.Unlock()
	c.dispatch(ws, e)
	return nil
}

// bookmark tells the watchers that allow bookmarks that they have every
// change up to rev (the cache's revision if that is newer).
func (c *Cacher) bookmark(rev int64) {
	c.mu.Lock()
	if rev > c.rev {
		c.rev = rev
		c.signalLocked()
	}
	rev = c.rev
	ws := c.watchers
	c.mu.Unlock()
	if len(ws) == 0 {
		return
	}
	obj, err := c.bookmarkObject(rev, nil)
	if err != nil {
		return // a type without metadata cannot carry a bookmark
	}
	c.dispatch(ws, &event{typ: watch.Bookmark, rev: rev, mark: obj})
}

// bookmarkObject is what a bookmark at rev carries: an empty object of the
// resource with only its resourceVersion and annotations.
func (c *Cacher) bookmarkObject(rev int64, annotations map[string]string) (runtime.Object, error) {
	obj := c.cfg.NewFunc()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("cacher: bookmark: %w", err)
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	m.SetAnnotations(annotations)
	obj.GetObjectKind().SetGroupVersionKind(c.cfg.GroupVersionKind)
	return obj, nil
}

// dispatch hands e to every watcher it concerns. A watcher whose buffer is
// full gets until the slow-watcher bound (shared by all such watchers) to
// make room, and is ended after it: its client re-watches from the last
// resourceVersion it received, which the ring serves.
func (c *Cacher) dispatch(ws []*cacheWatcher, e *event) {
	type pending struct {
		w  *cacheWatcher
		ev watch.Event
	}
	var blocked []pending
	for _, w := range ws {
		ev, ok := w.next(e)
		if !ok {
			continue
		}
		if w.send(ev, nil) {
			if w.failed {
				w.end()
			}
		} else if ev.Type != watch.Bookmark { // a bookmark may be skipped, never waited for
			blocked = append(blocked, pending{w, ev})
		}
	}
	if len(blocked) == 0 {
		return
	}
	t := c.cfg.Clock.NewTimer(c.cfg.SlowWatcherBound)
	defer t.Stop()
	expired := false
	for _, p := range blocked {
		if !expired && p.w.send(p.ev, t.C()) {
			if p.w.failed {
				p.w.end()
			}
			continue
		}
		expired = true
		if !p.w.send(p.ev, nil) {
			slog.Info("watch cache: ending a watcher that does not keep up", "prefix", c.cfg.Prefix, "key", p.w.key)
			c.cfg.Metrics.terminated(c.gr)
		}
		p.w.end()
	}
}
