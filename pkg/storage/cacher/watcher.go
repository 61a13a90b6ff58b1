package cacher

import (
	"context"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// cacheWatcher is one client watch served from the cache. The dispatcher
// queues every event under its key on input; its own goroutine filters
// them with the predicate and delivers them, so that a slow client only
// fills its own buffer.
type cacheWatcher struct {
	c         *Cacher
	key       string
	recursive bool
	pred      storage.SelectionPredicate
	filter    bool
	bookmarks bool

	// initial: current objects to send as ADDED first (rv "0"); replay:
	// ring events after fromRev to send before the live ones.
	initial []runtime.Object
	replay  []*event
	fromRev int64

	input  chan *event
	result chan watch.Event
	// done is closed to end the watch (Stop, ctx, slowness or a cache
	// restart); finished once ResultChan is closed.
	done     chan struct{}
	endOnce  sync.Once
	finished chan struct{}
}

// Stop ends the watch and waits until ResultChan is closed.
func (w *cacheWatcher) Stop() {
	w.end()
	<-w.finished
}

func (w *cacheWatcher) ResultChan() <-chan watch.Event { return w.result }

func (w *cacheWatcher) end() {
	w.endOnce.Do(func() {
		close(w.done)
		w.c.remove(w)
	})
}

func (w *cacheWatcher) matchesKey(key string) bool {
	if w.recursive {
		return strings.HasPrefix(key, w.key)
	}
	return key == w.key
}

// wants reports whether the dispatcher should queue e for w.
func (w *cacheWatcher) wants(e *event) bool {
	if e.typ == watch.Bookmark {
		return w.bookmarks
	}
	return w.matchesKey(e.key)
}

func (w *cacheWatcher) run(ctx context.Context) {
	defer close(w.finished)
	defer close(w.result)
	defer w.end()

	for _, obj := range w.initial {
		match, err := w.matches(obj)
		if err != nil {
			w.sendError(ctx, err)
			return
		}
		if match && !w.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
			return
		}
	}
	w.initial = nil
	last := progress{rev: w.fromRev}
	for _, e := range w.replay {
		if !w.process(ctx, e, &last) {
			return
		}
	}
	w.replay = nil
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.done:
			return
		case e := <-w.input:
			if !w.process(ctx, e, &last) {
				return
			}
		}
	}
}

// progress is how far a watcher's client is: the revision it has every
// change up to, and the last bookmark it got.
type progress struct {
	rev, bookmark int64
}

// process delivers e if w has not had its revision yet (a watch may start
// after revisions the cache has not seen) and it concerns w's selection. A
// bookmark goes out once per revision, never behind what w has sent.
func (w *cacheWatcher) process(ctx context.Context, e *event, last *progress) bool {
	if e.typ == watch.Bookmark {
		if e.rev < last.rev || e.rev <= last.bookmark {
			return true
		}
		last.rev, last.bookmark = e.rev, e.rev
		return w.send(ctx, watch.Event{Type: watch.Bookmark, Object: e.obj})
	}
	if e.rev <= last.rev {
		return true
	}
	ev, ok, err := w.convert(e)
	if err != nil {
		w.sendError(ctx, err)
		return false
	}
	last.rev = e.rev
	if !ok {
		return true
	}
	return w.send(ctx, ev)
}

// convert turns a change into what a client of the predicate's selection
// sees: an update moving an object into the selection is ADDED, one moving
// it out is DELETED (of the old state, at the event's revision), and one
// outside it before and after is nothing (ok false).
func (w *cacheWatcher) convert(e *event) (watch.Event, bool, error) {
	curMatch, err := w.matches(e.obj)
	if err != nil {
		return watch.Event{}, false, err
	}
	if e.typ != watch.Modified || !w.filter {
		return watch.Event{Type: e.typ, Object: e.obj}, curMatch, nil
	}
	oldMatch := false
	if e.prev != nil {
		if oldMatch, err = w.matches(e.prev); err != nil {
			return watch.Event{}, false, err
		}
	}
	switch {
	case curMatch && oldMatch:
		return watch.Event{Type: watch.Modified, Object: e.obj}, true, nil
	case curMatch:
		return watch.Event{Type: watch.Added, Object: e.obj}, true, nil
	case oldMatch:
		return watch.Event{Type: watch.Deleted, Object: e.deletedPrev()}, true, nil
	}
	return watch.Event{}, false, nil
}

func (w *cacheWatcher) matches(obj runtime.Object) (bool, error) {
	if !w.filter {
		return true, nil
	}
	ok, err := w.pred.Matches(obj)
	if err != nil {
		return false, fmt.Errorf("cacher: watch: match: %w", err)
	}
	return ok, nil
}

func (w *cacheWatcher) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	case <-ctx.Done():
		return false
	}
}

func (w *cacheWatcher) sendError(ctx context.Context, err error) {
	w.send(ctx, watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus})
}
