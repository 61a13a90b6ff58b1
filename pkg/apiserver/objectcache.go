package apiserver

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// objectCache mirrors every object of one resource from a storage watch, so
// that admission reads namespaces, service accounts, limit ranges and quotas
// without an etcd round trip per request. Like upstream's informer-fed
// admission, it may lag a write by the watch latency; readers that must not
// miss a fresh object fall back to storage on a miss. Its watch-list is
// served by the resource's watch cache, so the objects it holds are that
// cache's own, shared with every watcher of the resource: nothing may
// modify them (get and list hand out copies, peek and peekList do not).
type objectCache struct {
	st     *handler.Store
	synced atomic.Bool
	// seen is the revision the cache reflects; written the newest revision
	// this server wrote to the resource. Reads wait until seen catches up,
	// so that a quota or limit range created here applies to the very next
	// request.
	seen    atomic.Int64
	written atomic.Int64
	caught  chan struct{} // closed and replaced whenever seen advances
	caughtM sync.Mutex

	mu   sync.RWMutex
	objs map[string]map[string]runtime.Object // namespace → name → object
}

func newObjectCache(st *handler.Store) *objectCache {
	c := &objectCache{objs: map[string]map[string]runtime.Object{}, caught: make(chan struct{})}
	// Writes go through a recorder so that reads know what to wait for.
	st.Storage = &recordingStorage{Interface: st.Storage, cache: c}
	c.st = st
	return c
}

// advance records that the cache reflects revision rev.
func (c *objectCache) advance(rev int64) {
	if rev <= c.seen.Load() {
		return
	}
	c.seen.Store(rev)
	c.caughtM.Lock()
	close(c.caught)
	c.caught = make(chan struct{})
	c.caughtM.Unlock()
}

// maxCatchUp bounds how long a read waits for the watch; past it the
// reader falls back to storage.
const maxCatchUp = time.Second

// current reports whether the cache is synced and has seen this server's
// own writes, waiting briefly for the watch to deliver them.
func (c *objectCache) current() bool {
	if !c.synced.Load() {
		return false
	}
	if c.seen.Load() >= c.written.Load() {
		return true
	}
	deadline := time.NewTimer(maxCatchUp)
	defer deadline.Stop()
	for c.seen.Load() < c.written.Load() {
		c.caughtM.Lock()
		ch := c.caught
		c.caughtM.Unlock()
		if c.seen.Load() >= c.written.Load() {
			break
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
	return true
}

func (c *objectCache) noteWrite(obj runtime.Object) {
	rev := storage.RevisionOf(obj)
	for {
		cur := c.written.Load()
		if rev <= cur || c.written.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// recordingStorage tells its cache the revision of every successful write.
type recordingStorage struct {
	storage.Interface
	cache *objectCache
}

func (r *recordingStorage) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	err := r.Interface.Create(ctx, key, obj, out)
	if err == nil {
		r.cache.noteWrite(out)
	}
	return err
}

func (r *recordingStorage) GuaranteedUpdate(ctx context.Context, key string, out runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	err := r.Interface.GuaranteedUpdate(ctx, key, out, ignoreNotFound, preconditions, tryUpdate)
	if err == nil {
		r.cache.noteWrite(out)
	}
	return err
}

func (r *recordingStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validate storage.ValidateDeletionFunc) error {
	err := r.Interface.Delete(ctx, key, out, preconditions, validate)
	if err == nil {
		r.cache.noteWrite(out)
	}
	return err
}

// run keeps the cache fed until ctx ends, re-watching from scratch when a
// watch ends.
func (c *objectCache) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.watchOnce(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("admission cache watch ended", "resource", c.st.Name, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (c *objectCache) watchOnce(ctx context.Context) error {
	w, err := c.st.Storage.Watch(ctx, c.st.Prefix, storage.ListOptions{
		Recursive: true, AllowWatchBookmarks: true, InitialEventsEndBookmark: true,
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	// The initial state builds a fresh map; the old one serves until then.
	fresh := map[string]map[string]runtime.Object{}
	initial := true
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return apierrors.FromObject(ev.Object)
		case watch.Bookmark:
			if initial && storage.IsInitialEventsEnd(ev.Object) {
				c.mu.Lock()
				c.objs = fresh
				c.mu.Unlock()
				initial = false
				c.synced.Store(true)
			}
			if !initial {
				c.advance(storage.RevisionOf(ev.Object))
			}
			continue
		}
		m, err := meta.Accessor(ev.Object)
		if err != nil {
			continue
		}
		if initial {
			put(fresh, m.GetNamespace(), m.GetName(), ev.Object)
			continue
		}
		c.mu.Lock()
		if ev.Type == watch.Deleted {
			delete(c.objs[m.GetNamespace()], m.GetName())
		} else {
			put(c.objs, m.GetNamespace(), m.GetName(), ev.Object)
		}
		c.mu.Unlock()
		c.advance(storage.RevisionOf(ev.Object))
	}
	return nil
}

func put(objs map[string]map[string]runtime.Object, ns, name string, obj runtime.Object) {
	byName, ok := objs[ns]
	if !ok {
		byName = map[string]runtime.Object{}
		objs[ns] = byName
	}
	byName[name] = obj
}

// get returns a copy of the cached object; ok is false when the cache is not
// synced yet or has no such object.
func (c *objectCache) get(ns, name string) (runtime.Object, bool) {
	obj, ok := c.peek(ns, name)
	if !ok {
		return nil, false
	}
	return obj.DeepCopyObject(), true
}

// peek is get without the copy, for readers that only look: the cache
// replaces objects and never modifies one, so the object stays as it was
// when read, but the caller must not modify it either (the watch cache and
// its watchers share it).
func (c *objectCache) peek(ns, name string) (runtime.Object, bool) {
	if !c.current() {
		return nil, false
	}
	c.mu.RLock()
	obj, ok := c.objs[ns][name]
	c.mu.RUnlock()
	return obj, ok
}

// list returns copies of the namespace's cached objects; synced is false when
// the cache cannot answer yet.
func (c *objectCache) list(ns string) (objs []runtime.Object, synced bool) {
	objs, synced = c.peekList(ns)
	for i, obj := range objs {
		objs[i] = obj.DeepCopyObject()
	}
	return objs, synced
}

// peekList is list without the copies, for readers that only look (see
// peek).
func (c *objectCache) peekList(ns string) (objs []runtime.Object, synced bool) {
	if !c.current() {
		return nil, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, obj := range c.objs[ns] {
		objs = append(objs, obj)
	}
	return objs, true
}
