package cacher

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/etcd/etcdtest"
	"github.com/kube-lite/kube-lite/pkg/storage"
	"github.com/kube-lite/kube-lite/pkg/storage/etcd3"
)

func TestWatchFromRVInsideRingGetsExactlyTheLaterEvents(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	b := mustCreate(t, c, configMap("ns", "b", nil))
	a2 := mustUpdate(t, c, "ns", "a", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"k": "v"} })
	bDel := mustDelete(t, c, "ns", "b")
	mustCreate(t, c, configMap("other", "x", nil))
	c.waitRev(t, rvOf(t, bDel))

	w := mustWatch(t, c, "/configmaps/ns", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true})
	if !cached(w) {
		t.Fatal("a watch from a revision the ring holds was not served from the cache")
	}
	// Only what follows a, only in ns; then the next change (nothing more
	// was queued in between).
	d := mustCreate(t, c, configMap("ns", "d", nil))
	expect(t, w, descObj(watch.Added, b), descObj(watch.Modified, a2), "DELETED b@"+bDel.ResourceVersion, descObj(watch.Added, d))
}

func TestObjectsCarryTheirKind(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	rev, err := c.CurrentRevision(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	w := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: strconv.FormatInt(rev, 10), Recursive: true})
	mustCreate(t, c, configMap("ns", "a", nil))
	ev := next(t, w)
	// The handler only writes the kind when it differs: shared objects
	// must arrive with it.
	if got, want := ev.Object.GetObjectKind().GroupVersionKind(), corev1.SchemeGroupVersion.WithKind("ConfigMap"); got != want {
		t.Fatalf("kind %v, want %v", got, want)
	}
}

func TestWatchFromRVNewerThanTheCacheWaitsForLaterEvents(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	other := newStore(t, sharedClient)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	// A revision of another resource: the cache has seen nothing at it.
	o := mustCreate(t, other, configMap("ns", "o", nil))
	w := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: o.ResourceVersion, Recursive: true})
	if !cached(w) {
		t.Fatal("not served from the cache")
	}
	b := mustCreate(t, c, configMap("ns", "b", nil))
	expect(t, w, descObj(watch.Added, b))
}

func TestWatchFromRVOlderThanTheRingFallsBackToStorage(t *testing.T) {
	st := newStore(t, sharedClient)
	before := mustCreate(t, st, configMap("ns", "before", nil))
	c := startCacher(t, st, func(cfg *Config) { cfg.Capacity = 2 })
	var made []*corev1.ConfigMap
	for i := range 4 {
		made = append(made, mustCreate(t, c, configMap("ns", fmt.Sprintf("c%d", i), nil)))
	}
	c.waitRev(t, rvOf(t, made[3]))

	// Evicted from the ring: the storage replays it.
	w := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: made[0].ResourceVersion, Recursive: true})
	if cached(w) {
		t.Fatal("a revision older than the ring was served from the cache")
	}
	expect(t, w, descObj(watch.Added, made[1]), descObj(watch.Added, made[2]), descObj(watch.Added, made[3]))

	// Older than the cache itself.
	w = mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: before.ResourceVersion, Recursive: true})
	if cached(w) {
		t.Fatal("a revision older than the cache was served from the cache")
	}
	expect(t, w, descObj(watch.Added, made[0]), descObj(watch.Added, made[1]))

	// The ring's oldest revision itself is served.
	w = mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: made[1].ResourceVersion, Recursive: true})
	if !cached(w) {
		t.Fatal("the ring's oldest revision was not served from the cache")
	}
	expect(t, w, descObj(watch.Added, made[2]), descObj(watch.Added, made[3]))
}

func TestCompactedRVStillGets410(t *testing.T) {
	client := etcdtest.Start(t)
	st := newStore(t, client)
	a := mustCreate(t, st, configMap("ns", "a", nil))
	mustCreate(t, st, configMap("ns", "b", nil))
	cm := mustCreate(t, st, configMap("ns", "c", nil))
	if _, err := client.Compact(testCtx(t), rvOf(t, cm)); err != nil {
		t.Fatalf("compact: %v", err)
	}
	c := startCacher(t, st, nil)
	w := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true})
	expect410(t, w)
}

func TestCompactedRVInsideTheRingStillGets410(t *testing.T) {
	client := etcdtest.Start(t)
	st := newStore(t, client)
	c := startCacher(t, st, nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	mustCreate(t, c, configMap("ns", "b", nil))
	cm := mustCreate(t, c, configMap("ns", "c", nil))
	c.waitRev(t, rvOf(t, cm))
	if _, err := client.Compact(testCtx(t), rvOf(t, cm)); err != nil {
		t.Fatalf("compact: %v", err)
	}
	// The ring still has what follows a, but a client of etcd would get
	// 410: so does this one.
	w := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true})
	if cached(w) {
		t.Fatal("a compacted revision was served from the cache")
	}
	expect410(t, w)
}

// TestWatcherBehindACompactionGets410WhenTheCacheFails: a cached watch
// whose resume point etcd has compacted, ended because the cache's own
// watch failed, is told 410 as the storage would tell it; one that is
// still resumable just ends.
func TestWatcherBehindACompactionGets410WhenTheCacheFails(t *testing.T) {
	client := etcdtest.Start(t)
	b := &breakable{Interface: newStore(t, client)}
	c := startCacher(t, b, nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	behind := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true})
	if !cached(behind) {
		t.Fatal("not served from the cache")
	}
	// The watch is at a; etcd moves on and compacts past it.
	other := newStore(t, client)
	o := mustCreate(t, other, configMap("ns", "o", nil))
	mustCreate(t, other, configMap("ns", "p", nil))
	current := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: o.ResourceVersion, Recursive: true})
	if _, err := client.Compact(testCtx(t), rvOf(t, o)+1); err != nil {
		t.Fatalf("compact: %v", err)
	}
	b.fail()
	expect410(t, behind)
	if ev, ok := <-behind.ResultChan(); ok {
		t.Fatalf("got %s after the 410, want the end", desc(t, ev))
	}
	select {
	case ev, ok := <-current.ResultChan():
		if ok {
			t.Fatalf("the resumable watch got %s, want the end", desc(t, ev))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the resumable watch was not ended")
	}
}

func expect410(t *testing.T, w watch.Interface) {
	t.Helper()
	ev := next(t, w)
	st410, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || st410.Code != 410 || st410.Reason != metav1.StatusReasonExpired {
		t.Fatalf("got %s %+v, want ERROR 410 Expired", ev.Type, ev.Object)
	}
}

func TestSelectorMovesBecomeAddedAndDeleted(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	a := mustCreate(t, c, configMap("ns", "a", map[string]string{"app": "x"}))
	c.waitRev(t, rvOf(t, a))
	w := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true, Predicate: labelPredicate(t, "app=x")})
	if !cached(w) {
		t.Fatal("not served from the cache")
	}
	out := mustUpdate(t, c, "ns", "a", func(cm *corev1.ConfigMap) { cm.Labels["app"] = "y" })
	ev := next(t, w)
	// Leaving the selection: DELETED of the old state, at the update's revision.
	if got, want := desc(t, ev), "DELETED a@"+out.ResourceVersion; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := ev.Object.(*corev1.ConfigMap).Labels["app"]; got != "x" {
		t.Fatalf("DELETED carries label app=%q, want the old state's x", got)
	}
	mustUpdate(t, c, "ns", "a", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"still": "out"} })
	back := mustUpdate(t, c, "ns", "a", func(cm *corev1.ConfigMap) { cm.Labels["app"] = "x" })
	mod := mustUpdate(t, c, "ns", "a", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"in": "yes"} })
	mustCreate(t, c, configMap("ns", "unselected", nil))
	gone := mustDelete(t, c, "ns", "a")
	expect(t, w, descObj(watch.Added, back), descObj(watch.Modified, mod), "DELETED a@"+gone.ResourceVersion)
}

func TestNonRecursiveWatchSeesOnlyItsKey(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	w := mustWatch(t, c, cmKey("ns", "a"), storage.ListOptions{ResourceVersion: a.ResourceVersion})
	if !cached(w) {
		t.Fatal("not served from the cache")
	}
	mustCreate(t, c, configMap("ns", "ab", nil))
	mustCreate(t, c, configMap("ns", "b", nil))
	a2 := mustUpdate(t, c, "ns", "a", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"k": "v"} })
	expect(t, w, descObj(watch.Modified, a2))
}

func TestBookmarksOnlyToWatchersThatAskAndOnlyForward(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	// A revision of another resource, which this cache never sees.
	o := mustCreate(t, newStore(t, sharedClient), configMap("ns", "o", nil))
	opts := storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true, AllowWatchBookmarks: true}
	withBM := mustWatch(t, c, "/configmaps/", opts)
	future := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: o.ResourceVersion, Recursive: true, AllowWatchBookmarks: true})
	opts.AllowWatchBookmarks = false
	without := mustWatch(t, c, "/configmaps/", opts)

	// At the cache's revision a: once to withBM; never to future, which
	// starts after it; never to without.
	c.bookmark(0)
	c.bookmark(0)
	b := mustCreate(t, c, configMap("ns", "b", nil))
	expect(t, withBM, "BOOKMARK @"+a.ResourceVersion, descObj(watch.Added, b))
	expect(t, future, descObj(watch.Added, b))
	expect(t, without, descObj(watch.Added, b))

	c.bookmark(0)
	d := mustCreate(t, c, configMap("ns", "d", nil))
	expect(t, withBM, "BOOKMARK @"+b.ResourceVersion, descObj(watch.Added, d))
	expect(t, future, "BOOKMARK @"+b.ResourceVersion, descObj(watch.Added, d))
	expect(t, without, descObj(watch.Added, d))
}

func TestIdleWatchersGetBookmarksEveryInterval(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	w := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true, AllowWatchBookmarks: true})
	// The storage reported a's revision before this watch began: the
	// cache's own ticker brings the bookmark.
	c.clock.Step(DefaultBookmarkInterval)
	expect(t, w, "BOOKMARK @"+a.ResourceVersion)
}

func TestStorageBookmarksReachCachedWatchers(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient, etcd3.WithBookmarkInterval(50*time.Millisecond)), nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	w := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true, AllowWatchBookmarks: true})
	if !cached(w) {
		t.Fatal("not served from the cache")
	}
	// Another resource moves the revision on; this one stays idle.
	o := mustCreate(t, newStore(t, sharedClient), configMap("ns", "o", nil))
	// The storage may report a's revision once more before o's; bookmarks
	// only move forward, and the watcher hears nothing else.
	for last := rvOf(t, a); last < rvOf(t, o); {
		ev := next(t, w)
		if ev.Type != watch.Bookmark || rvOf(t, ev.Object) < last {
			t.Fatalf("got %s after a BOOKMARK @%d, want a BOOKMARK at or after %s", desc(t, ev), last, o.ResourceVersion)
		}
		last = rvOf(t, ev.Object)
	}
}

func TestWatchFromZeroSendsCurrentStateFromTheCache(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	b := mustCreate(t, c, configMap("ns", "b", nil))
	a := mustCreate(t, c, configMap("ns", "a", nil))
	mustCreate(t, c, configMap("gone", "g", nil))
	x := mustDelete(t, c, "gone", "g")
	mustCreate(t, c, configMap("other", "o", nil))
	c.waitRev(t, rvOf(t, x))
	w := mustWatch(t, c, "/configmaps/ns/", storage.ListOptions{ResourceVersion: "0", Recursive: true})
	if !cached(w) {
		t.Fatal("rv=0 was not served from the cache")
	}
	d := mustCreate(t, c, configMap("ns", "d", nil))
	expect(t, w, descObj(watch.Added, a), descObj(watch.Added, b), descObj(watch.Added, d))
}

// TestFallsBackForConsistentWatchesWithoutInitialEvents: rv "" without
// sendInitialEvents is a consistent watch from now on, which upstream's
// cache does not serve either; sendInitialEvents without bookmarks cannot
// end its initial events, and the storage answers it.
func TestFallsBackForConsistentWatchesWithoutInitialEvents(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	if w := mustWatch(t, c, "/configmaps/", storage.ListOptions{Recursive: true}); cached(w) {
		t.Fatal(`rv "" was served from the cache`)
	}
	w := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: "0", Recursive: true, InitialEventsEndBookmark: true})
	if cached(w) {
		t.Fatal("sendInitialEvents without bookmarks was served from the cache")
	}
	expect(t, w, descObj(watch.Added, a))
}

func TestSlowWatcherIsEndedWhileOthersKeepReceiving(t *testing.T) {
	const buffer = 2
	c := startCacher(t, newStore(t, sharedClient), func(cfg *Config) { cfg.WatcherBuffer = buffer })
	rev, err := c.CurrentRevision(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	from := strconv.FormatInt(rev, 10)
	slow := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: from, Recursive: true})
	fast := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: from, Recursive: true})

	// Enough to fill the slow watcher's buffer several times over. Each
	// write waits until the fast watcher has it; while it waits, a
	// dispatcher blocked on the slow watcher gets its bound from the fake
	// clock.
	const n = 3 * (buffer + 1)
	var made []*corev1.ConfigMap
	for i := range n {
		cm := mustCreate(t, c, configMap("ns", fmt.Sprintf("c%03d", i), nil))
		made = append(made, cm)
		deadline := time.Now().Add(30 * time.Second)
		for got := false; !got; {
			select {
			case ev, ok := <-fast.ResultChan():
				if !ok {
					t.Fatalf("the fast watcher ended at event %d", i)
				}
				if want := descObj(watch.Added, cm); desc(t, ev) != want {
					t.Fatalf("fast watcher: got %s, want %s", desc(t, ev), want)
				}
				got = true
			case <-time.After(5 * time.Millisecond):
				if c.clock.HasWaiters() {
					c.clock.Step(DefaultSlowWatcherBound)
				}
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for event %d", i)
				}
			}
		}
	}

	// The slow watcher got a prefix of the events, then its channel closed.
	var last string
	got := 0
	for ev := range slow.ResultChan() {
		if want := descObj(watch.Added, made[got]); desc(t, ev) != want {
			t.Fatalf("slow watcher event %d: got %s, want %s", got, desc(t, ev), want)
		}
		last = made[got].ResourceVersion
		got++
	}
	if got == n {
		t.Fatal("the slow watcher was not ended")
	}
	// Its client re-watches from the last resourceVersion it has: the ring
	// serves the rest.
	if last == "" {
		last = from
	}
	again := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: last, Recursive: true})
	if !cached(again) {
		t.Fatal("the re-watch was not served from the cache")
	}
	for _, cm := range made[got:] {
		expect(t, again, descObj(watch.Added, cm))
	}
}

func TestManyWatchersGetEveryEventExactlyOnce(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	rev, err := c.CurrentRevision(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	const watchers, events = 30, 40
	ws := make([]watch.Interface, watchers)
	for i := range ws {
		ws[i] = mustWatch(t, c, "/configmaps/ns/", storage.ListOptions{ResourceVersion: strconv.FormatInt(rev, 10), Recursive: true})
		if !cached(ws[i]) {
			t.Fatal("not served from the cache")
		}
	}
	var want []string
	var wg sync.WaitGroup
	for i := range events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mustCreate(t, c.store, configMap("ns", fmt.Sprintf("c%03d", i), nil))
		}()
	}
	wg.Wait()
	// Their order is etcd's: read it back.
	list := &corev1.ConfigMapList{}
	if err := c.List(testCtx(t), "/configmaps/ns/", storage.ListOptions{}, list); err != nil {
		t.Fatal(err)
	}
	byRev := map[int64]string{}
	for i := range list.Items {
		byRev[rvOf(t, &list.Items[i])] = descObj(watch.Added, &list.Items[i])
	}
	for r := rev + 1; len(want) < events; r++ {
		if d, ok := byRev[r]; ok {
			want = append(want, d)
		}
	}
	last := mustCreate(t, c, configMap("ns", "zzz-last", nil))
	want = append(want, descObj(watch.Added, last))
	var check sync.WaitGroup
	for _, w := range ws {
		check.Add(1)
		go func() {
			defer check.Done()
			for i, d := range want {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Errorf("watch ended at event %d", i)
						return
					}
					if got := desc(t, ev); got != d {
						t.Errorf("event %d: got %q, want %q", i, got, d)
						return
					}
				case <-time.After(30 * time.Second):
					t.Errorf("timed out at event %d", i)
					return
				}
			}
		}()
	}
	check.Wait()
}

func TestStorageWatchFailureEndsCachedWatchersAndTheCacheRestarts(t *testing.T) {
	b := &breakable{Interface: newStore(t, sharedClient)}
	c := startCacher(t, b, nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	w := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true})
	if !cached(w) {
		t.Fatal("not served from the cache")
	}
	b.fail()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("got %s, want the watch to end", desc(t, ev))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cached watcher was not ended")
	}

	// While the cache restarts, watches go to the storage and miss nothing.
	during := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true})
	if cached(during) {
		t.Fatal("served from a cache that is restarting")
	}
	// The restart waits for its delay. (A fake ticker stays a waiter after
	// Stop, so the waiters do not tell when the restart timer exists.)
	poll(t, "the cache restarted", func() bool {
		c.mu.RLock()
		ready := c.ready
		c.mu.RUnlock()
		if !ready {
			c.clock.Step(restartDelay)
		}
		return ready
	})
	d := mustCreate(t, c, configMap("ns", "d", nil))
	c.waitRev(t, rvOf(t, d))
	after := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: d.ResourceVersion, Recursive: true})
	if !cached(after) {
		t.Fatal("not served from the restarted cache")
	}
	e := mustCreate(t, c, configMap("ns", "e", nil))
	expect(t, during, descObj(watch.Added, d), descObj(watch.Added, e))
	expect(t, after, descObj(watch.Added, e))
}

func TestStoppedWatcherLeavesTheCache(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	w, err := c.Watch(testCtx(t), "/configmaps/", storage.ListOptions{ResourceVersion: "0", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("ResultChan still open after Stop")
	}
	c.mu.RLock()
	n := len(c.watchers)
	c.mu.RUnlock()
	if n != 0 {
		t.Fatalf("%d watchers left after Stop", n)
	}
}

// TestSelectorErrorEndsTheWatch: an object the selector cannot be applied
// to is reported as an internal error and ends that watch, whether it is
// in the initial state or a later change; other watches go on.
func TestSelectorErrorEndsTheWatch(t *testing.T) {
	c := startCacher(t, newStore(t, sharedClient), nil)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	c.waitRev(t, rvOf(t, a))
	broken := storage.SelectionPredicate{
		Label: labelPredicate(t, "x=y").Label,
		GetAttrs: func(runtime.Object) (labels.Set, fields.Set, error) {
			return nil, nil, fmt.Errorf("no attributes")
		},
	}
	expectErrorThenEnd := func(w watch.Interface) {
		t.Helper()
		ev := next(t, w)
		if st, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || st.Code != 500 {
			t.Fatalf("got %s, want a 500 ERROR", desc(t, ev))
		}
		if ev, ok := <-w.ResultChan(); ok {
			t.Fatalf("got %s after the error, want the end", desc(t, ev))
		}
		w.Stop() // after the end, harmless
	}

	atStart := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: broken})
	expectErrorThenEnd(atStart)

	later := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true, Predicate: broken})
	fine := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true})
	b := mustCreate(t, c, configMap("ns", "b", nil))
	expectErrorThenEnd(later)
	expect(t, fine, descObj(watch.Added, b))
}

// countingDecoder counts what the cache decodes, and fails for objects in
// namespace "bad".
type countingDecoder struct {
	decode func([]byte, int64) (runtime.Object, error)
	n      atomic.Int64
}

func (d *countingDecoder) Decode(data []byte, rev int64) (runtime.Object, error) {
	d.n.Add(1)
	obj, err := d.decode(data, rev)
	if err == nil && obj.(*corev1.ConfigMap).Namespace == "bad" {
		return nil, errors.New("undecodable")
	}
	return obj, err
}

// startCountingCacher is startCacher with its decodes counted.
func startCountingCacher(t *testing.T) (*testCacher, *countingDecoder) {
	t.Helper()
	dec := &countingDecoder{}
	c := startCacher(t, newStore(t, sharedClient), func(cfg *Config) {
		dec.decode = cfg.Decode
		cfg.Decode = dec.Decode
	})
	return c, dec
}

func TestObjectsAreDecodedOnlyForWatchersOnce(t *testing.T) {
	c, dec := startCountingCacher(t)
	a := mustCreate(t, c, configMap("ns", "a", nil))
	b := mustCreate(t, c, configMap("ns", "b", nil))
	b = mustUpdate(t, c, "ns", "b", func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"v": "2"} })
	c.waitRev(t, rvOf(t, b))
	if n := dec.n.Load(); n != 0 {
		t.Fatalf("the cache decoded %d objects with nobody watching, want 0", n)
	}

	// Each current object once, for every watcher that starts from it.
	w1 := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: "0", Recursive: true})
	w2 := mustWatch(t, c, "/configmaps/", storage.ListOptions{ResourceVersion: "0", Recursive: true})
	expect(t, w1, descObj(watch.Added, a), descObj(watch.Added, b))
	expect(t, w2, descObj(watch.Added, a), descObj(watch.Added, b))
	if n := dec.n.Load(); n != 2 {
		t.Fatalf("two watchers of two objects took %d decodes, want 2", n)
	}
	// A change once, however many watchers get it; a deletion is the last
	// state at its own revision, copied rather than decoded.
	d := mustCreate(t, c, configMap("ns", "d", nil))
	expect(t, w1, descObj(watch.Added, d))
	expect(t, w2, descObj(watch.Added, d))
	x := mustDelete(t, c, "ns", "a")
	expect(t, w1, descObj(watch.Deleted, x))
	expect(t, w2, descObj(watch.Deleted, x))
	if n := dec.n.Load(); n != 3 {
		t.Fatalf("after a create and a delete seen by two watchers: %d decodes, want 3", n)
	}
}

func TestAnUndecodableObjectEndsOnlyTheWatchersItReaches(t *testing.T) {
	c, _ := startCountingCacher(t)
	a := mustCreate(t, c, configMap("good", "a", nil))
	c.waitRev(t, rvOf(t, a))
	bad := mustWatch(t, c, "/configmaps/bad/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true})
	good := mustWatch(t, c, "/configmaps/good/", storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true})
	mustCreate(t, c, configMap("bad", "x", nil))
	ev := next(t, bad)
	if st, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || st.Code != 500 {
		t.Fatalf("the watcher of the undecodable object got %s %+v, want ERROR 500", ev.Type, ev.Object)
	}
	if _, open := <-bad.ResultChan(); open {
		t.Fatal("the watcher of the undecodable object goes on after its error")
	}
	b := mustCreate(t, c, configMap("good", "b", nil))
	expect(t, good, descObj(watch.Added, b))
}
