package cacher

import (
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// cacheWatcher is one client watch served from the cache. It has no
// goroutine of its own: Watch queues what it replays, then the cache's
// dispatcher converts each change for it and puts it straight on the
// channel the client reads. On a small machine every goroutine an event
// passes through is a wake-up, often of another CPU, so the cache adds
// one hop, not two.
type cacheWatcher struct {
	c         *Cacher
	key       string
	recursive bool
	pred      storage.SelectionPredicate
	filter    bool
	bookmarks bool

	// last is what the client has been sent. Only the goroutine that
	// delivers to the watcher touches it: Watch until the watcher is
	// registered, then the dispatcher.
	last progress
	// failed: a change could not be converted; the watch ends after
	// reporting it.
	failed bool

	// mu orders sends on result with its close. A send may wait for room
	// under it; end closes done first, which releases that wait.
	mu     sync.Mutex
	closed bool
	result chan watch.Event
	// done is closed to end the watch (Stop, ctx, slowness or a cache
	// restart).
	done    chan struct{}
	endOnce sync.Once
}

// progress is how far a watcher's client is: the revision it has every
// change up to, and the last bookmark it got.
type progress struct {
	rev, bookmark int64
}

// Stop ends the watch; ResultChan is closed when it returns.
func (w *cacheWatcher) Stop() { w.end() }

func (w *cacheWatcher) ResultChan() <-chan watch.Event { return w.result }

// SharesObjects implements storage.SharedWatch: every watcher of the cache
// gets the same objects.
func (w *cacheWatcher) SharesObjects() {}

var _ storage.SharedWatch = (*cacheWatcher)(nil)

func (w *cacheWatcher) end() {
	w.endOnce.Do(func() {
		close(w.done)
		w.c.remove(w)
		w.mu.Lock()
		if !w.closed { // a watch that failed as it started is closed already
			w.closed = true
			close(w.result)
		}
		w.mu.Unlock()
	})
}

func (w *cacheWatcher) matchesKey(key string) bool {
	if w.recursive {
		return strings.HasPrefix(key, w.key)
	}
	return key == w.key
}

// next is what w's client gets for e, if anything, and moves w's progress:
// a change it has not had yet (a watch may start after revisions the cache
// has not seen) that concerns its selection, or a bookmark it asked for,
// once per revision and never behind what it has.
func (w *cacheWatcher) next(e *event) (watch.Event, bool) {
	if e.typ == watch.Bookmark {
		if !w.bookmarks || e.rev < w.last.rev || e.rev <= w.last.bookmark {
			return watch.Event{}, false
		}
		w.last.rev, w.last.bookmark = e.rev, e.rev
		return watch.Event{Type: watch.Bookmark, Object: e.mark}, true
	}
	if e.rev <= w.last.rev || !w.matchesKey(e.key) {
		return watch.Event{}, false
	}
	ev, ok, err := w.convert(e)
	if err != nil {
		w.failed = true
		return watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}, true
	}
	w.last.rev = e.rev
	return ev, ok
}

// convert turns a change into what a client of the predicate's selection
// sees: an update moving an object into the selection is ADDED, one moving
// it out is DELETED (of the old state, at the event's revision), and one
// outside it before and after is nothing (ok false).
func (w *cacheWatcher) convert(e *event) (watch.Event, bool, error) {
	cur, curMatch, err := w.matchesState(e.cur)
	if err != nil {
		return watch.Event{}, false, err
	}
	if e.typ != watch.Modified || !w.filter {
		return watch.Event{Type: e.typ, Object: cur}, curMatch, nil
	}
	oldMatch := false
	if e.prev != nil {
		if _, oldMatch, err = w.matchesState(e.prev); err != nil {
			return watch.Event{}, false, err
		}
	}
	switch typ, ok := storage.SelectionChange(oldMatch, curMatch); {
	case !ok:
		return watch.Event{}, false, nil
	case typ == watch.Deleted:
		left, err := w.c.object(e.leaving())
		if err != nil {
			return watch.Event{}, false, err
		}
		return watch.Event{Type: typ, Object: left}, true, nil
	default:
		return watch.Event{Type: typ, Object: cur}, true, nil
	}
}

// matchesState is s's object (decoded once for every watcher) and whether
// w's selection holds it.
func (w *cacheWatcher) matchesState(s *state) (runtime.Object, bool, error) {
	obj, err := w.c.object(s)
	if err != nil {
		return nil, false, err
	}
	ok, err := w.matches(obj)
	return obj, ok, err
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

// send queues ev and reports whether it did (an ended watch takes and
// drops everything). With expire nil it does not wait for room; otherwise
// it waits until expire fires.
func (w *cacheWatcher) send(ev watch.Event, expire <-chan time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return true
	}
	if expire == nil {
		select {
		case w.result <- ev:
			return true
		default:
			return false
		}
	}
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return true
	case <-expire:
		return false
	}
}
