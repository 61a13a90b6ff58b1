package cacher

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// listOpts are what a client-go informer's watch-list asks for.
func listOpts(rv string) storage.ListOptions {
	return storage.ListOptions{ResourceVersion: rv, Recursive: true, AllowWatchBookmarks: true, InitialEventsEndBookmark: true}
}

// patient lets watches wait for the cache as long as the test runs: only
// the catching up decides how they are served, never the machine's speed.
func patient(cfg *Config) { cfg.FreshnessBound = time.Hour }

// watchStepping starts a watch that may wait for the cache, stepping the
// fake clock by step while it waits, so that its progress requests are
// retried and its freshness bound runs.
func watchStepping(t *testing.T, c *testCacher, key string, opts storage.ListOptions, step time.Duration) watch.Interface {
	t.Helper()
	type result struct {
		w   watch.Interface
		err error
	}
	ctx := testCtx(t)
	done := make(chan result, 1)
	go func() {
		w, err := c.Watch(ctx, key, opts)
		done <- result{w, err}
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("watch %s: %v", key, r.err)
			}
			t.Cleanup(r.w.Stop)
			return r.w
		case <-time.After(5 * time.Millisecond):
			c.clock.Step(step)
		case <-deadline:
			t.Fatal("the watch did not start")
		}
	}
}

// expectInitialEventsEnd reads the bookmark ending the initial events and
// returns its revision.
func expectInitialEventsEnd(t *testing.T, w watch.Interface) int64 {
	t.Helper()
	ev := next(t, w)
	if ev.Type != watch.Bookmark || !storage.IsInitialEventsEnd(ev.Object) {
		t.Fatalf("got %s, want the initial-events-end bookmark", desc(t, ev))
	}
	return rvOf(t, ev.Object)
}

func watchCount(t *testing.T, m *Metrics, source string) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.watches.WithLabelValues("", "configmaps", source).Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}

// TestInitialEventsWatchesAreServedFromTheCache: sendInitialEvents at "",
// "0" and N gets the current objects in key order, the annotated bookmark at
// the cache's revision, then what follows, all from the cache.
func TestInitialEventsWatchesAreServedFromTheCache(t *testing.T) {
	for _, from := range []string{"", "0", "N"} {
		t.Run("rv="+from, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			c := startCacher(t, newStore(t, sharedClient), func(cfg *Config) {
				patient(cfg)
				cfg.Metrics = m
			})
			b := mustCreate(t, c, configMap("ns", "b", nil))
			a := mustCreate(t, c, configMap("ns", "a", nil))
			mustCreate(t, c, configMap("ns", "gone", nil))
			mustDelete(t, c, "ns", "gone")
			last := mustCreate(t, c, configMap("other", "o", nil))
			// "0" takes whatever the cache has: let it have everything.
			c.waitRev(t, rvOf(t, last))
			rv := from
			if from == "N" {
				rv = a.ResourceVersion
			}
			w := watchStepping(t, c, "/configmaps/ns/", listOpts(rv), progressRetry)
			if !cached(w) {
				t.Fatal("not served from the cache")
			}
			expect(t, w, descObj(watch.Added, a), descObj(watch.Added, b))
			now, err := c.CurrentRevision(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			ev := next(t, w)
			if ev.Type != watch.Bookmark || !storage.IsInitialEventsEnd(ev.Object) {
				t.Fatalf("got %s, want the initial-events-end bookmark", desc(t, ev))
			}
			// The handler writes no kind into shared objects.
			if got, want := ev.Object.GetObjectKind().GroupVersionKind(), corev1.SchemeGroupVersion.WithKind("ConfigMap"); got != want {
				t.Fatalf("bookmark kind %v, want %v", got, want)
			}
			if got := rvOf(t, ev.Object); got < rvOf(t, last) || got > now {
				t.Fatalf("initial events end at %d, want the cache's revision (%s..%d)", got, last.ResourceVersion, now)
			}
			d := mustCreate(t, c, configMap("ns", "d", nil))
			a2 := mustUpdate(t, c, "ns", "a", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"k": "v"} })
			expect(t, w, descObj(watch.Added, d), descObj(watch.Modified, a2))
			if got := watchCount(t, m, "cache"); got != 1 {
				t.Errorf("watches counted from the cache: %v, want 1", got)
			}
			if got := watchCount(t, m, "storage"); got != 0 {
				t.Errorf("watches counted from storage: %v, want 0", got)
			}
		})
	}
}

// TestConsistentInitialEventsOnAnIdleResource: a resource nobody writes
// while another one moves etcd's revision on still gets a state at least as
// new as that revision from the cache: its source is asked for progress,
// since its periodic bookmarks (an hour apart here) would come too late.
func TestConsistentInitialEventsOnAnIdleResource(t *testing.T) {
	for _, from := range []string{"", "N"} {
		t.Run("rv="+from, func(t *testing.T) {
			c := startCacher(t, newStore(t, sharedClient), patient)
			a := mustCreate(t, c, configMap("ns", "a", nil))
			c.waitRev(t, rvOf(t, a))
			o := mustCreate(t, newStore(t, sharedClient), configMap("ns", "o", nil))
			rv := from
			if from == "N" {
				rv = o.ResourceVersion
			}
			w := watchStepping(t, c, "/configmaps/", listOpts(rv), progressRetry)
			if !cached(w) {
				t.Fatal("not served from the cache")
			}
			expect(t, w, descObj(watch.Added, a))
			if got := expectInitialEventsEnd(t, w); got < rvOf(t, o) {
				t.Fatalf("initial events end at %d, older than %s", got, o.ResourceVersion)
			}
		})
	}
}

// TestAcknowledgedWritesAreInTheInitialEvents: whatever the cache has seen
// yet, a consistent watch-list started after a write was acknowledged
// starts with that write.
func TestAcknowledgedWritesAreInTheInitialEvents(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), patient)
	for i := range 20 {
		cm := mustCreate(t, c.store, configMap("ns", fmt.Sprintf("c%02d", i), nil))
		w := watchStepping(t, c, cmKey("ns", cm.Name), storage.ListOptions{AllowWatchBookmarks: true, InitialEventsEndBookmark: true}, progressRetry)
		if !cached(w) {
			t.Fatal("not served from the cache")
		}
		expect(t, w, descObj(watch.Added, cm))
		if got := expectInitialEventsEnd(t, w); got < rvOf(t, cm) {
			t.Fatalf("initial events end at %d, older than the write at %s", got, cm.ResourceVersion)
		}
		w.Stop()
	}
}

// deafSource never gets an answer to its progress requests.
type deafSource struct {
	storage.Interface
	requests atomic.Int32
}

func (d *deafSource) SupportsWatchProgress(context.Context) bool { return true }

func (d *deafSource) RequestWatchProgress(context.Context) error {
	d.requests.Add(1)
	return nil
}

// oldEtcdSource is a source on an etcd whose answers to progress requests
// cannot be trusted, so it sends none (etcd3.ErrWatchProgressUnsupported).
type oldEtcdSource struct{ deafSource }

func (o *oldEtcdSource) SupportsWatchProgress(context.Context) bool { return false }

// TestInitialEventsFallBackToStorageWhenTheCacheCannotCatchUp: past the
// freshness bound the storage serves the watch, with the same sequence;
// and a source that cannot request progress sends it there at once.
func TestInitialEventsFallBackToStorageWhenTheCacheCannotCatchUp(t *testing.T) {
	t.Run("bound", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		src := &deafSource{Interface: newStore(t, sharedClient)}
		c := startCacher(t, src, func(cfg *Config) { cfg.Metrics = m })
		a := mustCreate(t, c, configMap("ns", "a", nil))
		c.waitRev(t, rvOf(t, a))
		o := mustCreate(t, newStore(t, sharedClient), configMap("ns", "o", nil))
		w := watchStepping(t, c, "/configmaps/", listOpts(""), DefaultFreshnessBound)
		if cached(w) {
			t.Fatal("served from a cache behind the consistent revision")
		}
		if src.requests.Load() == 0 {
			t.Fatal("no progress was requested")
		}
		expect(t, w, descObj(watch.Added, a))
		if got := expectInitialEventsEnd(t, w); got < rvOf(t, o) {
			t.Fatalf("initial events end at %d, older than %s", got, o.ResourceVersion)
		}
		if got := watchCount(t, m, "storage"); got != 1 {
			t.Errorf("watches counted from storage: %v, want 1", got)
		}
		if got := watchCount(t, m, "cache"); got != 0 {
			t.Errorf("watches counted from the cache: %v, want 0", got)
		}
	})
	t.Run("an etcd that cannot answer progress", func(t *testing.T) {
		src := &oldEtcdSource{deafSource{Interface: newStore(t, sharedClient)}}
		c := startCacher(t, src, patient)
		a := mustCreate(t, c, configMap("ns", "a", nil))
		c.waitRev(t, rvOf(t, a))
		o := mustCreate(t, newStore(t, sharedClient), configMap("ns", "o", nil))
		// The cache is behind o and nothing would move it: the storage
		// serves the watch at once instead of after the (hour-long) bound.
		w := mustWatch(t, c, "/configmaps/", listOpts(o.ResourceVersion))
		if cached(w) {
			t.Fatal("served from a cache behind the requested revision")
		}
		if n := src.requests.Load(); n != 0 {
			t.Fatalf("%d progress requests sent to an etcd that cannot answer them", n)
		}
		expect(t, w, descObj(watch.Added, a))
		if got := expectInitialEventsEnd(t, w); got < rvOf(t, o) {
			t.Fatalf("initial events end at %d, older than %s", got, o.ResourceVersion)
		}
	})
	t.Run("no progress requests", func(t *testing.T) {
		// breakable's source cannot request progress.
		c := startCacher(t, &breakable{Interface: newStore(t, sharedClient)}, patient)
		a := mustCreate(t, c, configMap("ns", "a", nil))
		c.waitRev(t, rvOf(t, a))
		o := mustCreate(t, newStore(t, sharedClient), configMap("ns", "o", nil))
		w := mustWatch(t, c, "/configmaps/", listOpts(o.ResourceVersion))
		if cached(w) {
			t.Fatal("served from a cache behind the requested revision")
		}
		expect(t, w, descObj(watch.Added, a))
		if got := expectInitialEventsEnd(t, w); got < rvOf(t, o) {
			t.Fatalf("initial events end at %d, older than %s", got, o.ResourceVersion)
		}
		// Caught up: the cache serves it.
		w = mustWatch(t, c, "/configmaps/", listOpts(a.ResourceVersion))
		if !cached(w) {
			t.Fatal("not served from the cache")
		}
		expect(t, w, descObj(watch.Added, a))
		if got := expectInitialEventsEnd(t, w); got != rvOf(t, a) {
			t.Fatalf("initial events end at %d, want %s", got, a.ResourceVersion)
		}
	})
}

// TestInitialEventsWithASelector: only the selected objects at first, then
// updates moving objects in and out of the selection as ADDED and DELETED.
func TestInitialEventsWithASelector(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), patient)
	a := mustCreate(t, c, configMap("ns", "a", map[string]string{"app": "x"}))
	mustCreate(t, c, configMap("ns", "b", map[string]string{"app": "y"}))
	cm := mustCreate(t, c, configMap("ns", "c", map[string]string{"app": "x"}))
	c.waitRev(t, rvOf(t, cm))
	opts := listOpts("0")
	opts.Predicate = labelPredicate(t, "app=x")
	w := mustWatch(t, c, "/configmaps/", opts)
	if !cached(w) {
		t.Fatal("not served from the cache")
	}
	expect(t, w, descObj(watch.Added, a), descObj(watch.Added, cm))
	if got := expectInitialEventsEnd(t, w); got != rvOf(t, cm) {
		t.Fatalf("initial events end at %d, want %s", got, cm.ResourceVersion)
	}
	in := mustUpdate(t, c, "ns", "b", func(cm *corev1.ConfigMap) { cm.Labels["app"] = "x" })
	out := mustUpdate(t, c, "ns", "a", func(cm *corev1.ConfigMap) { cm.Labels["app"] = "y" })
	expect(t, w, descObj(watch.Added, in), "DELETED a@"+out.ResourceVersion)
}

// TestInitialEventsBookmarkIsNotRepeated: the periodic bookmark at the
// revision the initial events ended at is not sent again.
func TestInitialEventsBookmarkIsNotRepeated(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	w := mustWatch(t, c, "/configmaps/", listOpts("0"))
	expect(t, w, descObj(watch.Added, a))
	expectInitialEventsEnd(t, w)
	c.bookmark(0)
	b := mustCreate(t, c, configMap("ns", "b", nil))
	expect(t, w, descObj(watch.Added, b))
	c.bookmark(0)
	ev := next(t, w)
	if ev.Type != watch.Bookmark || storage.IsInitialEventsEnd(ev.Object) || ev.Object.(*corev1.ConfigMap).ResourceVersion != b.ResourceVersion {
		t.Fatalf("got %s %v, want a plain BOOKMARK @%s", desc(t, ev), ev.Object.(metav1.Object).GetAnnotations(), b.ResourceVersion)
	}
}

// TestInitialEventsWaitForARestartingCache: a watch-list that comes while
// the cache reloads after its storage watch failed waits for it instead of
// opening an etcd watch of its own for its whole life.
func TestInitialEventsWaitForARestartingCache(t *testing.T) {
	b := &breakable{Interface: newStore(t, sharedClient)}
	c := startCacher(t, b, patient)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	old := mustWatch(t, c, "/configmaps/", listOpts("0"))
	b.fail()
	for range old.ResultChan() { // ended by the restart
	}
	w := watchStepping(t, c, "/configmaps/", listOpts("0"), restartDelay)
	if !cached(w) {
		t.Fatal("not served from the restarted cache")
	}
	expect(t, w, descObj(watch.Added, a))
	expectInitialEventsEnd(t, w)
}

// TestWaitingWatchEndsWithItsContext: a client that goes away while its
// watch waits for the cache does not leave it waiting.
func TestWaitingWatchEndsWithItsContext(t *testing.T) {
	src := &deafSource{Interface: newStore(t, sharedClient)}
	c := startCacher(t, src, patient)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	mustCreate(t, newStore(t, sharedClient), configMap("ns", "o", nil))
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan watch.Interface, 1)
	go func() {
		w, err := c.Watch(ctx, "/configmaps/", listOpts(""))
		if err != nil {
			t.Errorf("watch: %v", err)
		}
		done <- w
	}()
	poll(t, "a progress request", func() bool { return src.requests.Load() > 0 })
	cancel()
	select {
	case w := <-done:
		if w != nil {
			defer w.Stop()
			if cached(w) {
				t.Fatal("served from a cache behind the consistent revision")
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch still waits after its context ended")
	}
}

// refusingSource refuses its first progress requests, as the storage does
// while none of its watches can be reached yet.
type refusingSource struct {
	storage.Interface
	refusals atomic.Int32
}

func (r *refusingSource) SupportsWatchProgress(ctx context.Context) bool {
	return r.Interface.(progressRequester).SupportsWatchProgress(ctx)
}

func (r *refusingSource) RequestWatchProgress(ctx context.Context) error {
	if r.refusals.Add(-1) >= 0 {
		return errors.New("no watch to reach yet")
	}
	return r.Interface.(progressRequester).RequestWatchProgress(ctx)
}

// TestRefusedProgressRequestsAreRetried: a refused progress request is
// retried as a dropped one is; the watch is still served from the cache.
func TestRefusedProgressRequestsAreRetried(t *testing.T) {
	src := &refusingSource{Interface: newStore(t, sharedClient)}
	src.refusals.Store(3)
	c := startCacher(t, src, patient)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	o := mustCreate(t, newStore(t, sharedClient), configMap("ns", "o", nil))
	w := watchStepping(t, c, "/configmaps/", listOpts(""), progressRetry)
	if !cached(w) {
		t.Fatal("not served from the cache")
	}
	if src.refusals.Load() >= 0 {
		t.Fatal("the refusals were not all met")
	}
	expect(t, w, descObj(watch.Added, a))
	if got := expectInitialEventsEnd(t, w); got < rvOf(t, o) {
		t.Fatalf("initial events end at %d, older than %s", got, o.ResourceVersion)
	}
}
