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
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// progressRequester is a source that can make its watches report how far
// they are now, instead of at the next periodic bookmark: the etcd3 store.
// A resource nobody writes only moves the cache's revision with them.
type progressRequester interface {
	RequestWatchProgress(ctx context.Context) error
}

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
	// GroupVersionKind is set on every cached object once, when it comes
	// in: objects are shared by every watcher, so nobody may write to them
	// later.
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

// state is one stored version of an object: the bytes the storage holds
// until a watcher first needs the object, then the object decoded from
// them, shared read-only by every watcher.
type state struct {
	data []byte // read and dropped inside once
	// of is set for an object's last state carrying a later revision (a
	// deletion, or an update that takes it out of a watcher's selection):
	// that state's object, copied, at rev.
	of  *state
	rev int64 // the object's resourceVersion

	once sync.Once
	obj  runtime.Object
	err  error
}

// object decodes s once.
func (c *Cacher) object(s *state) (runtime.Object, error) {
	s.once.Do(func() {
		if s.of != nil {
			last, err := c.object(s.of)
			if err != nil {
				s.err = err
				return
			}
			obj := last.DeepCopyObject()
			if m, err := meta.Accessor(obj); err == nil {
				m.SetResourceVersion(strconv.FormatInt(s.rev, 10))
			}
			s.obj = obj
			return
		}
		s.obj, s.err = c.cfg.Decode(s.data, s.rev)
		s.data = nil
		if s.err == nil {
			s.obj.GetObjectKind().SetGroupVersionKind(c.cfg.GroupVersionKind)
		}
	})
	return s.obj, s.err
}

// event is one change, shared read-only by every watcher.
type event struct {
	typ watch.EventType // Bookmark for bookmarks
	key string
	rev int64
	// cur is the object as the change leaves it; for DELETED, its last
	// state carrying the deletion's revision, as clients receive it.
	cur *state
	// prev is the object's previous state (nil for ADDED).
	prev *state
	// mark is a bookmark's object.
	mark runtime.Object

	// left is prev carrying this event's revision, what a watcher whose
	// selection the object leaves receives as DELETED; made once.
	leftOnce sync.Once
	left     *state
}

func (e *event) leaving() *state {
	e.leftOnce.Do(func() { e.left = &state{of: e.prev, rev: e.rev} })
	return e.left
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
	obj := c.cfg.NewFunc()
	m, err := meta.Accessor(obj)
	if err != nil {
		return // a type without metadata cannot carry a bookmark
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	obj.GetObjectKind().SetGroupVersionKind(c.cfg.GroupVersionKind)
	c.dispatch(ws, &event{typ: watch.Bookmark, rev: rev, mark: obj})
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

// Watch implements storage.Interface: from the cache when it can serve
// exactly what the storage would, from the storage otherwise.
func (c *Cacher) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if !opts.Predicate.Empty() && opts.Predicate.GetAttrs == nil {
		return c.fromStorage(ctx, key, opts) // it answers with the error
	}
	if opts.InitialEventsEndBookmark {
		return c.watchList(ctx, key, opts)
	}
	// "" without initial events is a consistent watch from now on: the
	// storage's, as upstream's.
	if opts.ResourceVersion == "" {
		return c.fromStorage(ctx, key, opts)
	}
	n, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil || n < 0 {
		return c.fromStorage(ctx, key, opts) // it answers with the error
	}
	if n != 0 && c.compacted(ctx, n) {
		return c.fromStorage(ctx, key, opts)
	}
	w := c.newWatcher(key, opts)
	c.decodeReplay(w, n)
	c.mu.Lock()
	if !c.ready || (n != 0 && n < c.oldest) {
		// Older than the ring: the storage replays it or answers 410.
		c.mu.Unlock()
		return c.fromStorage(ctx, key, opts)
	}
	var first []watch.Event
	if n == 0 {
		first = c.initialLocked(w)
	} else {
		w.last.rev = n
		for _, e := range c.sinceLocked(n, w) {
			if ev, ok := w.next(e); ok {
				first = append(first, ev)
				if w.failed {
					break
				}
			}
		}
	}
	return c.registerLocked(ctx, w, first), nil
}

// watchList serves a watch that asked for its initial events and the
// bookmark marking their end (sendInitialEvents, what every client-go
// informer starts with): the cache's objects once it is at least as new as
// the resourceVersion asks ("" a consistent read: etcd's current revision),
// then that bookmark at the cache's revision, then what follows. A cache
// that cannot get there within the freshness bound leaves the watch to the
// storage: a client must never start from a state older than a write it has
// seen acknowledged.
func (c *Cacher) watchList(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if !opts.AllowWatchBookmarks {
		return c.initialFromStorage(ctx, key, opts)
	}
	var need int64
	switch opts.ResourceVersion {
	case "", "0":
	default:
		n, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
		if err != nil || n < 0 {
			return c.fromStorage(ctx, key, opts) // it answers with the error
		}
		need = n
	}
	if opts.ResourceVersion == "" {
		rev, err := c.Interface.CurrentRevision(ctx)
		if err != nil {
			return c.initialFromStorage(ctx, key, opts)
		}
		need = rev
	}
	if !c.waitFresh(ctx, need) {
		return c.initialFromStorage(ctx, key, opts)
	}
	w := c.newWatcher(key, opts)
	c.decodeReplay(w, 0)
	c.mu.Lock()
	if !c.ready || c.rev < need { // restarted since
		c.mu.Unlock()
		return c.initialFromStorage(ctx, key, opts)
	}
	first := c.initialLocked(w)
	if !w.failed {
		end, err := c.initialEventsEnd(c.rev)
		if err != nil {
			c.mu.Unlock()
			return c.initialFromStorage(ctx, key, opts)
		}
		first = append(first, end)
		w.last.bookmark = c.rev
	}
	return c.registerLocked(ctx, w, first), nil
}

// initialFromStorage leaves a watch with initial events to the storage,
// which sends them only from "" or "0": for a resourceVersion N it reads
// the latest state, which is at least as new as N.
func (c *Cacher) initialFromStorage(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if opts.ResourceVersion != "0" {
		opts.ResourceVersion = ""
	}
	return c.fromStorage(ctx, key, opts)
}

// waitFresh waits, within the freshness bound and while ctx lasts, until
// the cache is ready at revision need or newer. A cache behind need asks its
// source for progress: the revision of a resource nobody writes moves only
// with the source's bookmarks, which otherwise come once an interval.
func (c *Cacher) waitFresh(ctx context.Context, need int64) bool {
	var bound clock.Timer
	var retry clock.Ticker
	var retryC <-chan time.Time
	for {
		c.mu.Lock()
		ready, rev := c.ready, c.rev
		if ready && rev >= need {
			c.mu.Unlock()
			return true
		}
		if c.advanced == nil {
			c.advanced = make(chan struct{})
		}
		advanced := c.advanced
		c.mu.Unlock()
		if bound == nil {
			bound = c.cfg.Clock.NewTimer(c.cfg.FreshnessBound)
			defer bound.Stop()
		}
		if ready && retry == nil {
			p, ok := c.cfg.Source.(progressRequester)
			if !ok || p.RequestWatchProgress(ctx) != nil {
				return false
			}
			retry = c.cfg.Clock.NewTicker(progressRetry)
			defer retry.Stop()
			retryC = retry.C()
		}
		select {
		case <-ctx.Done():
			return false
		case <-bound.C():
			return false
		case <-advanced:
		case <-retryC:
			// A failure here is as a dropped request: the next one retries.
			_ = c.cfg.Source.(progressRequester).RequestWatchProgress(ctx)
		}
	}
}

// initialEventsEnd is the bookmark at rev that tells a sendInitialEvents
// client its initial state is complete.
func (c *Cacher) initialEventsEnd(rev int64) (watch.Event, error) {
	obj := c.cfg.NewFunc()
	m, err := meta.Accessor(obj)
	if err != nil {
		return watch.Event{}, fmt.Errorf("cacher: initial events end bookmark: %w", err)
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	obj.GetObjectKind().SetGroupVersionKind(c.cfg.GroupVersionKind)
	return watch.Event{Type: watch.Bookmark, Object: obj}, nil
}

func (c *Cacher) newWatcher(key string, opts storage.ListOptions) *cacheWatcher {
	if !strings.HasPrefix(key, "/") {
		key = "/" + key
	}
	if opts.Recursive && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	return &cacheWatcher{
		c:         c,
		key:       key,
		recursive: opts.Recursive,
		pred:      opts.Predicate,
		filter:    !opts.Predicate.Empty(),
		bookmarks: opts.AllowWatchBookmarks,
		done:      make(chan struct{}),
	}
}

// initialLocked starts w at the cache's revision with its current objects
// as ADDED events, in key order.
func (c *Cacher) initialLocked(w *cacheWatcher) []watch.Event {
	w.last.rev = c.rev
	var first []watch.Event
	for _, st := range c.currentLocked(w) {
		obj, err := c.object(st)
		match := false
		if err == nil {
			match, err = w.matches(obj)
		}
		if err != nil {
			w.failed = true
			return append(first, watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus})
		}
		if match {
			first = append(first, watch.Event{Type: watch.Added, Object: obj})
		}
	}
	return first
}

// registerLocked queues what w starts with, in room made for it, so that
// the dispatcher can deliver what follows straight after it, and adds w to
// the watchers (unless it failed already). It releases c.mu.
func (c *Cacher) registerLocked(ctx context.Context, w *cacheWatcher, first []watch.Event) watch.Interface {
	w.result = make(chan watch.Event, len(first)+c.cfg.WatcherBuffer)
	for _, ev := range first {
		w.result <- ev
	}
	if w.failed {
		c.mu.Unlock()
		w.closed = true
		close(w.result)
		return w
	}
	ws := make([]*cacheWatcher, len(c.watchers), len(c.watchers)+1)
	copy(ws, c.watchers)
	c.watchers = append(ws, w)
	c.mu.Unlock()
	context.AfterFunc(ctx, w.end)
	c.cfg.Metrics.watch(c.gr, "cache")
	return w
}

// compacted reports whether etcd no longer has the revisions a watch from
// n needs (or cannot tell): one empty read at n+1, which for a watch from
// etcd's latest revision is in the future, and so not compacted. A revision
// newer than the cache's is checked too: the cache may lag a compaction
// that followed a write it has not seen yet.
func (c *Cacher) compacted(ctx context.Context, n int64) bool {
	err := c.listAt(ctx, n+1)
	return err != nil && !errors.Is(err, storage.ErrTooLargeResourceVers)
}

// listAt reads nothing at exactly revision rev, to learn whether etcd still
// has it: a key no object has ("\x00" sorts before every name) makes etcd
// check the revision and find nothing to decode. Without NewListFunc it
// cannot tell and answers nil.
func (c *Cacher) listAt(ctx context.Context, rev int64) error {
	if c.cfg.NewListFunc == nil {
		return nil
	}
	return c.Interface.List(ctx, c.cfg.Prefix+"\x00", storage.ListOptions{
		ResourceVersion: strconv.FormatInt(rev, 10), Exact: true, Limit: 1,
	}, c.cfg.NewListFunc())
}

func (c *Cacher) fromStorage(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	c.cfg.Metrics.watch(c.gr, "storage")
	return c.Interface.Watch(ctx, key, opts)
}

// currentLocked returns w's current objects in key order.
func (c *Cacher) currentLocked(w *cacheWatcher) []*state {
	keys := make([]string, 0)
	for k := range c.objects {
		if w.matchesKey(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	states := make([]*state, len(keys))
	for i, k := range keys {
		states[i] = c.objects[k]
	}
	return states
}

// decodeReplay decodes what a watch of w from revision n starts with (the
// current objects for 0, the ring's later events otherwise) before Watch
// takes the lock that holds back every change: the first watch of a
// resource finds none of it decoded yet.
func (c *Cacher) decodeReplay(w *cacheWatcher, n int64) {
	var states []*state
	c.mu.RLock()
	if !c.ready || (n != 0 && n < c.oldest) { // the storage will serve it
		c.mu.RUnlock()
		return
	}
	if n == 0 {
		states = c.currentLocked(w)
	} else {
		for _, e := range c.sinceLocked(n, w) {
			states = append(states, e.cur)
			if e.prev != nil && w.filter {
				states = append(states, e.prev)
			}
		}
	}
	c.mu.RUnlock()
	for _, st := range states {
		_, _ = c.object(st) // an error is the watch's to report, under the lock
	}
}

// sinceLocked returns the ring's events after rev under w's key.
func (c *Cacher) sinceLocked(rev int64, w *cacheWatcher) []*event {
	at := func(i int) *event { return c.ring[(c.head+i)%len(c.ring)] }
	first := sort.Search(c.size, func(i int) bool { return at(i).rev > rev })
	var out []*event
	for i := first; i < c.size; i++ {
		if e := at(i); w.matchesKey(e.key) {
			out = append(out, e)
		}
	}
	return out
}

func (c *Cacher) remove(w *cacheWatcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.watchers {
		if x == w {
			ws := make([]*cacheWatcher, 0, len(c.watchers)-1)
			ws = append(ws, c.watchers[:i]...)
			c.watchers = append(ws, c.watchers[i+1:]...)
			return
		}
	}
}

// Metrics counts what the watch caches do.
type Metrics struct {
	watches      *prometheus.CounterVec
	terminations *prometheus.CounterVec
	inits        *prometheus.CounterVec
}

// NewMetrics registers the watch cache metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		watches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_watches_total",
			Help: "Counter of watches started, broken out by group, resource and whether the watch cache or storage (etcd) serves them.",
		}, []string{"group", "resource", "source"}),
		terminations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_terminated_watchers_total",
			Help: "Counter of watchers closed due to unresponsiveness broken by group and resource.",
		}, []string{"group", "resource"}),
		inits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_initializations_total",
			Help: "Counter of watch cache initializations broken down by group and resource.",
		}, []string{"group", "resource"}),
	}
	reg.MustRegister(m.watches, m.terminations, m.inits)
	return m
}

func (m *Metrics) watch(gr []string, source string) {
	if m != nil {
		m.watches.WithLabelValues(gr[0], gr[1], source).Inc()
	}
}

func (m *Metrics) terminated(gr []string) {
	if m != nil {
		m.terminations.WithLabelValues(gr...).Inc()
	}
}

func (m *Metrics) initialized(gr []string) {
	if m != nil {
		m.inits.WithLabelValues(gr...).Inc()
	}
}
