package cacher

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// progressRequester is a source that can make its watches report how far
// they are now, instead of at the next periodic bookmark: the etcd3 store.
// A resource nobody writes only moves the cache's revision with them.
type progressRequester interface {
	// SupportsWatchProgress says whether a request can be answered at
	// all: the etcd3 store sends none to an etcd version that answers
	// wrongly.
	SupportsWatchProgress(ctx context.Context) bool
	RequestWatchProgress(ctx context.Context) error
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
	case "0":
	case "":
		rev, err := c.Interface.CurrentRevision(ctx)
		if err != nil {
			return c.initialFromStorage(ctx, key, opts)
		}
		need = rev
	default:
		n, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
		if err != nil || n < 0 {
			return c.fromStorage(ctx, key, opts) // it answers with the error
		}
		need = n
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
	asker, canAsk := c.cfg.Source.(progressRequester)
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
			// Without progress only a write of this resource moves the
			// cache: the storage serves a consistent read at once rather
			// than after the freshness bound.
			if !canAsk || !asker.SupportsWatchProgress(ctx) {
				return false
			}
			// A failure is as a dropped request: the ticker retries.
			_ = asker.RequestWatchProgress(ctx)
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
			_ = asker.RequestWatchProgress(ctx)
		}
	}
}

// initialEventsEnd is the bookmark at rev that tells a sendInitialEvents
// client its initial state is complete.
func (c *Cacher) initialEventsEnd(rev int64) (watch.Event, error) {
	obj, err := c.bookmarkObject(rev, map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	if err != nil {
		return watch.Event{}, err
	}
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
		obj, match, err := w.matchesState(st)
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
		for k, st := range c.objects { // in any order: only decoded here
			if w.matchesKey(k) {
				states = append(states, st)
			}
		}
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
