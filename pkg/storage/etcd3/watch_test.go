package etcd3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/etcd/etcdtest"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// liveness bounds how long a test waits for an event that must come; it
// only turns a hang into a failure and asserts nothing about speed.
const liveness = 30 * time.Second

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed, want an event")
		}
		return ev
	case <-time.After(liveness):
		t.Fatalf("no event within %v", liveness)
	}
	return watch.Event{}
}

// nextNonBookmark skips bookmarks.
func nextNonBookmark(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	for {
		if ev := nextEvent(t, w); ev.Type != watch.Bookmark {
			return ev
		}
	}
}

// expectClosed waits for the end of the watch. Events already queued when a
// watch is stopped may still be read before the channel ends; pending says
// whether there may be any.
func expectClosed(t *testing.T, w watch.Interface, pending bool) {
	t.Helper()
	deadline := time.After(liveness)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if ev.Type != watch.Bookmark && !pending {
				t.Fatalf("got %s event, want the watch closed", ev.Type)
			}
		case <-deadline:
			t.Fatalf("watch not closed within %v", liveness)
		}
	}
}

func startWatch(t *testing.T, s storage.Interface, key string, opts storage.ListOptions) watch.Interface {
	t.Helper()
	w, err := s.Watch(testCtx(t), key, opts)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

type seen struct {
	typ  watch.EventType
	name string
	rv   string
	data string
}

func describe(t *testing.T, ev watch.Event) seen {
	t.Helper()
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("%s event carries %T, want *ConfigMap (%v)", ev.Type, ev.Object, ev.Object)
	}
	return seen{ev.Type, cm.Name, cm.ResourceVersion, cm.Data["v"]}
}

func TestWatchFromResourceVersionUnderConcurrentWrites(t *testing.T) {
	bothClients(t, testWatchFromResourceVersionUnderConcurrentWrites)
}

func testWatchFromResourceVersionUnderConcurrentWrites(t *testing.T, c *clientv3.Client) {
	s := newConfigMapStore(t, c)
	ctx := testCtx(t)
	before := mustCreate(t, s, configMap("ns", "before", nil, nil))
	w := startWatch(t, s, "/configmaps", storage.ListOptions{ResourceVersion: before.ResourceVersion, Recursive: true})

	const writers, updates = 5, 20
	var mu sync.Mutex
	var written []seen // every write, with the revision it got
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w%d", i)
			record := func(typ watch.EventType, cm *corev1.ConfigMap) {
				mu.Lock()
				defer mu.Unlock()
				written = append(written, seen{typ, cm.Name, cm.ResourceVersion, cm.Data["v"]})
			}
			out := &corev1.ConfigMap{}
			if err := s.Create(ctx, cmKey("ns", name), configMap("ns", name, nil, map[string]string{"v": "0"}), out); err != nil {
				t.Errorf("create: %v", err)
				return
			}
			record(watch.Added, out)
			for u := 1; u <= updates; u++ {
				out := &corev1.ConfigMap{}
				err := s.GuaranteedUpdate(ctx, cmKey("ns", name), out, false, nil, func(cur kruntime.Object) (kruntime.Object, error) {
					cm := cur.(*corev1.ConfigMap)
					cm.Data["v"] = fmt.Sprint(u)
					return cm, nil
				})
				if err != nil {
					t.Errorf("update: %v", err)
					return
				}
				record(watch.Modified, out)
			}
			out = &corev1.ConfigMap{}
			if err := s.Delete(ctx, cmKey("ns", name), out, nil, nil); err != nil {
				t.Errorf("delete: %v", err)
				return
			}
			record(watch.Deleted, out)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	want := map[string]seen{}
	for _, s := range written {
		want[s.rv] = s
	}
	if len(want) != len(written) {
		t.Fatalf("%d writes share revisions: %v", len(written)-len(want), written)
	}
	var last int64
	for range len(written) {
		got := describe(t, nextEvent(t, w))
		rv := rvOf(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: got.name, ResourceVersion: got.rv}})
		if rv <= last {
			t.Fatalf("event %+v at revision %d after revision %d: out of order or duplicate", got, rv, last)
		}
		last = rv
		if w, ok := want[got.rv]; !ok || w != got {
			t.Fatalf("event %+v, but the write at that revision was %+v", got, w)
		}
		delete(want, got.rv)
	}
	if len(want) != 0 {
		t.Fatalf("writes never seen: %v", want)
	}
}

func TestWatchSendsInitialState(t *testing.T) {
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			s := newConfigMapStore(t, sharedClient)
			ctx := testCtx(t)
			for _, n := range []string{"a", "b", "c"} {
				mustCreate(t, s, configMap("ns", n, nil, map[string]string{"v": n}))
			}
			mustCreate(t, s, configMap("other", "d", nil, nil))
			w := startWatch(t, s, "/configmaps/ns", storage.ListOptions{ResourceVersion: rv, Recursive: true})
			single := startWatch(t, s, cmKey("ns", "b"), storage.ListOptions{ResourceVersion: rv})

			var got []string
			var last string
			for range 3 {
				ev := describe(t, nextEvent(t, w))
				if ev.typ != watch.Added {
					t.Fatalf("initial event %+v, want ADDED", ev)
				}
				got = append(got, ev.name)
				last = ev.rv
			}
			if strings.Join(got, ",") != "a,b,c" {
				t.Errorf("initial events for %v, want a,b,c", got)
			}
			if ev := describe(t, nextEvent(t, single)); ev.typ != watch.Added || ev.name != "b" {
				t.Errorf("single-key watch started with %+v, want ADDED b", ev)
			}

			upd := &corev1.ConfigMap{}
			if err := s.GuaranteedUpdate(ctx, cmKey("ns", "b"), upd, false, nil, setAnnotation("x", "y")); err != nil {
				t.Fatal(err)
			}
			want := seen{watch.Modified, "b", upd.ResourceVersion, "b"}
			ev := describe(t, nextEvent(t, w))
			lastRV, _ := strconv.ParseInt(last, 10, 64)
			if ev != want || rvOf(t, upd) <= lastRV {
				t.Errorf("after initial state got %+v, want %+v", ev, want)
			}
			if ev := describe(t, nextEvent(t, single)); ev != want {
				t.Errorf("single-key watch got %+v, want %+v", ev, want)
			}
		})
	}
}

func TestWatchPredicateTransitions(t *testing.T) {
	s := newConfigMapStore(t, sharedClient)
	ctx := testCtx(t)
	start := mustCreate(t, s, configMap("ns", "start", nil, nil))
	w := startWatch(t, s, "/configmaps", storage.ListOptions{
		ResourceVersion: start.ResourceVersion, Recursive: true, Predicate: labelPredicate(t, "app=web")})

	relabel := func(name, app string) storage.UpdateFunc {
		return func(cur kruntime.Object) (kruntime.Object, error) {
			cm := cur.(*corev1.ConfigMap)
			cm.Labels = map[string]string{"app": app}
			cm.Data = map[string]string{"v": app}
			return cm, nil
		}
	}
	steps := []struct {
		name string
		do   func() *corev1.ConfigMap // returns the write's result
		// want is the event the watch must show; zero when the write is
		// invisible to the selection.
		want     watch.EventType
		wantData string // the state the event carries
	}{
		{"create outside", func() *corev1.ConfigMap {
			return mustCreate(t, s, configMap("ns", "x", map[string]string{"app": "db"}, nil))
		}, "", ""},
		{"create inside", func() *corev1.ConfigMap {
			return mustCreate(t, s, configMap("ns", "y", map[string]string{"app": "web"}, map[string]string{"v": "web"}))
		}, watch.Added, "web"},
		{"update moves in", func() *corev1.ConfigMap { return update(t, s, "x", relabel("x", "web")) }, watch.Added, "web"},
		{"update stays in", func() *corev1.ConfigMap { return update(t, s, "x", setAnnotation("a", "b")) }, watch.Modified, "web"},
		{"update moves out", func() *corev1.ConfigMap { return update(t, s, "x", relabel("x", "cache")) }, watch.Deleted, "web"},
		{"update stays out", func() *corev1.ConfigMap { return update(t, s, "x", relabel("x", "db")) }, "", ""},
		{"delete outside", func() *corev1.ConfigMap { return remove(t, ctx, s, "x") }, "", ""},
		{"delete inside", func() *corev1.ConfigMap { return remove(t, ctx, s, "y") }, watch.Deleted, "web"},
	}
	var pending []string // invisible writes since the last event
	for _, st := range steps {
		res := st.do()
		if st.want == "" {
			pending = append(pending, st.name)
			continue
		}
		got := describe(t, nextEvent(t, w))
		want := seen{st.want, res.Name, res.ResourceVersion, st.wantData}
		if got != want {
			t.Fatalf("after %q (and invisible %v) got %+v, want %+v", st.name, pending, got, want)
		}
		pending = nil
	}
}

func update(t *testing.T, s storage.Interface, name string, f storage.UpdateFunc) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdate(testCtx(t), cmKey("ns", name), out, false, nil, f); err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
	return out
}

func remove(t *testing.T, ctx context.Context, s storage.Interface, name string) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Delete(ctx, cmKey("ns", name), out, nil, nil); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
	return out
}

func TestCompactedHistoryIsGone(t *testing.T) {
	c := etcdtest.Start(t)
	s := newConfigMapStore(t, c)
	ctx := testCtx(t)
	old := mustCreate(t, s, configMap("ns", "a", nil, nil))
	mustCreate(t, s, configMap("ns", "b", nil, nil))
	page := &corev1.ConfigMapList{}
	if err := s.List(ctx, "/configmaps", storage.ListOptions{Limit: 1}, page); err != nil || page.Continue == "" {
		t.Fatalf("list first page: %v (continue %q)", err, page.Continue)
	}
	for range 3 {
		update(t, s, "b", setAnnotation("n", fmt.Sprint(time.Now().UnixNano())))
	}
	rev, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := Compact(ctx, c, rev); err != nil {
		t.Fatalf("compact: %v", err)
	}

	w := startWatch(t, s, "/configmaps", storage.ListOptions{ResourceVersion: old.ResourceVersion, Recursive: true})
	ev := nextEvent(t, w)
	st, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok {
		t.Fatalf("watch from a compacted revision: got %s %T, want an ERROR Status", ev.Type, ev.Object)
	}
	if st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired || !strings.Contains(st.Message, "too old resource version: "+old.ResourceVersion) {
		t.Errorf("status = %d %s %q, want 410 Expired too old resource version", st.Code, st.Reason, st.Message)
	}
	expectClosed(t, w, false)

	lists := map[string]storage.ListOptions{
		"exact":    {ResourceVersion: old.ResourceVersion, Exact: true},
		"continue": {Continue: page.Continue, Limit: 1},
	}
	for name, opts := range lists {
		err := s.List(ctx, "/configmaps", opts, &corev1.ConfigMapList{})
		if !errors.Is(err, storage.ErrResourceVersionGone) {
			t.Errorf("%s list of compacted revision: error %v, want ErrResourceVersionGone", name, err)
		}
	}
	// The 410 of a compacted continue token hands out one that finishes the
	// list at the latest revision, from where the first page ended.
	var gone *storage.Error
	err = s.List(ctx, "/configmaps", lists["continue"], &corev1.ConfigMapList{})
	if !errors.As(err, &gone) || gone.Continue == "" || !strings.Contains(gone.Message, "use the continue token in this response") {
		t.Fatalf("continue of a compacted list: %v, want a 410 with a fresh continue token", err)
	}
	rest := &corev1.ConfigMapList{}
	if err := s.List(ctx, "/configmaps", storage.ListOptions{Continue: gone.Continue, Limit: 1}, rest); err != nil {
		t.Fatalf("list with the fresh token: %v", err)
	}
	if got := names(rest); len(got) != 1 || got[0] != "b" || rest.ResourceVersion != fmt.Sprint(rev) {
		t.Errorf("fresh token listed %v at %s, want [b] at %d", got, rest.ResourceVersion, rev)
	}
	// The latest state is still there, and a watch from the revision just
	// before the compacted one works: it only asks for what is kept.
	w = startWatch(t, s, "/configmaps", storage.ListOptions{ResourceVersion: fmt.Sprint(rev - 1), Recursive: true})
	if got := describe(t, nextEvent(t, w)); got.typ != watch.Modified || got.name != "b" || got.rv != fmt.Sprint(rev) {
		t.Errorf("watch from %d got %+v, want MODIFIED b at %d", rev-1, got, rev)
	}
	res := update(t, s, "a", setAnnotation("after", "compaction"))
	if got := describe(t, nextEvent(t, w)); got.typ != watch.Modified || got.rv != res.ResourceVersion {
		t.Errorf("watch after compaction got %+v, want MODIFIED at %s", got, res.ResourceVersion)
	}
}

func TestWatchBookmarks(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			bothClients(t, func(t *testing.T, c *clientv3.Client) {
				opt := WithBookmarkInterval(50 * time.Millisecond)
				if !shared {
					testWatchBookmarks(t, newConfigMapStore(t, c, opt))
					return
				}
				// Two stores, one requester: a watch on each gets bookmarks.
				opt = SharedBookmarks(c, 50*time.Millisecond)
				other := newConfigMapStore(t, c, opt)
				ow := startWatch(t, other, "/configmaps", storage.ListOptions{Recursive: true, AllowWatchBookmarks: true})
				testWatchBookmarks(t, newConfigMapStore(t, c, opt))
				if ev := nextEvent(t, ow); ev.Type != watch.Bookmark {
					t.Errorf("watch on the other store got %s, want BOOKMARK", ev.Type)
				}
			})
		})
	}
}

func testWatchBookmarks(t *testing.T, s storage.Interface) {
	start := mustCreate(t, s, configMap("ns", "start", nil, nil))
	opts := storage.ListOptions{ResourceVersion: start.ResourceVersion, Recursive: true}
	plain := startWatch(t, s, "/configmaps", opts)
	opts.AllowWatchBookmarks = true
	w := startWatch(t, s, "/configmaps", opts)

	created := mustCreate(t, s, configMap("ns", "a", nil, nil))
	if ev := describe(t, nextEvent(t, w)); ev.typ != watch.Added || ev.name != "a" {
		t.Fatalf("got %+v, want ADDED a", ev)
	}
	ev := nextEvent(t, w)
	if ev.Type != watch.Bookmark {
		t.Fatalf("idle watch got %s, want BOOKMARK", ev.Type)
	}
	bm, ok := ev.Object.(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("bookmark carries %T, want an empty *ConfigMap", ev.Object)
	}
	if bm.Name != "" || bm.Data != nil {
		t.Errorf("bookmark object %+v, want only a resourceVersion", bm)
	}
	if rvOf(t, bm) < rvOf(t, created) {
		t.Errorf("bookmark at %s is older than the last event (%s)", bm.ResourceVersion, created.ResourceVersion)
	}

	// A bookmark promises every change up to its revision was sent: the next
	// change comes after it.
	next := mustCreate(t, s, configMap("ns", "b", nil, nil))
	got := describe(t, nextNonBookmark(t, w))
	if got.name != "b" || rvOf(t, next) <= rvOf(t, bm) {
		t.Errorf("after bookmark %s got %+v", bm.ResourceVersion, got)
	}
	// A watch that did not ask gets none.
	for _, want := range []string{"a", "b"} {
		if ev := nextEvent(t, plain); ev.Type != watch.Added || describe(t, ev).name != want {
			t.Fatalf("watch without bookmarks got %s %v, want ADDED %s", ev.Type, ev.Object, want)
		}
	}
}

func TestWatchStops(t *testing.T) { bothClients(t, testWatchStops) }

func testWatchStops(t *testing.T, c *clientv3.Client) {
	s := newConfigMapStore(t, c)
	before := runtime.NumGoroutine()

	tests := []struct {
		name string
		stop func(w watch.Interface, cancel context.CancelFunc)
	}{
		{"Stop", func(w watch.Interface, _ context.CancelFunc) { w.Stop() }},
		{"context cancelled", func(_ watch.Interface, cancel context.CancelFunc) { cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, opts := range []storage.ListOptions{
				{Recursive: true, AllowWatchBookmarks: true},
				{ResourceVersion: "1", Recursive: true},
			} {
				ctx, cancel := context.WithCancel(context.Background())
				w, err := s.Watch(ctx, "/configmaps", opts)
				if err != nil {
					t.Fatal(err)
				}
				mustCreate(t, s, configMap("ns", fmt.Sprintf("n%d", time.Now().UnixNano()), nil, nil))
				nextEvent(t, w)
				// The consumer stops reading with events still pending.
				mustCreate(t, s, configMap("ns", fmt.Sprintf("n%d", time.Now().UnixNano()), nil, nil))
				tt.stop(w, cancel)
				expectClosed(t, w, true)
				w.Stop() // idempotent
				cancel()
			}
		})
	}

	// Everything a watch started ends with it (etcd's client winds its
	// streams down asynchronously, so give it time).
	deadline := time.Now().Add(liveness)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Errorf("%d goroutines after the watches ended, %d before:\n%s", n, before, stacks.String())
	}
}

func TestWatchInitialStateSpansPages(t *testing.T) {
	s := newConfigMapStore(t, sharedLocal)
	n := initialPage + initialPage/2
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			mustCreate(t, s, configMap("ns", fmt.Sprintf("cm-%05d", i), nil, nil))
		}()
	}
	wg.Wait()
	w := startWatch(t, s, "/configmaps", storage.ListOptions{ResourceVersion: "0", Recursive: true})
	// A write while the initial state is being sent comes after it, once.
	late := mustCreate(t, s, configMap("ns", "late", nil, nil))
	for i := range n {
		got := describe(t, nextEvent(t, w))
		if want := fmt.Sprintf("cm-%05d", i); got.typ != watch.Added || got.name != want {
			t.Fatalf("initial event %d = %+v, want ADDED %s", i, got, want)
		}
	}
	if got := describe(t, nextEvent(t, w)); got.name != "late" || got.rv != late.ResourceVersion {
		t.Fatalf("after the initial state got %+v, want ADDED late at %s", got, late.ResourceVersion)
	}
}

func TestWatchMarksTheEndOfInitialEvents(t *testing.T) {
	s := newConfigMapStore(t, sharedClient)
	for _, n := range []string{"a", "b"} {
		mustCreate(t, s, configMap("ns", n, nil, nil))
	}
	tests := []struct {
		name string
		opts storage.ListOptions
		want []watch.EventType // the events before the next change
	}{
		{"asked", storage.ListOptions{Recursive: true, InitialEventsEndBookmark: true},
			[]watch.EventType{watch.Added, watch.Added, watch.Bookmark}},
		{"not asked", storage.ListOptions{Recursive: true},
			[]watch.EventType{watch.Added, watch.Added}},
		// From a given revision there are no initial events to end.
		{"from a revision", storage.ListOptions{Recursive: true, InitialEventsEndBookmark: true, ResourceVersion: "1"},
			[]watch.EventType{watch.Added, watch.Added}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := startWatch(t, s, "/configmaps", tt.opts)
			var last string
			for i, want := range tt.want {
				ev := nextEvent(t, w)
				if ev.Type != want {
					t.Fatalf("event %d is %s, want %s", i, ev.Type, want)
				}
				m, err := meta.Accessor(ev.Object)
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type == watch.Bookmark {
					if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" || m.GetName() != "" {
						t.Errorf("end bookmark %+v, want only the annotation and a resourceVersion", ev.Object)
					}
					if rvOf(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: m.GetResourceVersion()}}) <
						rvOf(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: last}}) {
						t.Errorf("end bookmark at %s, before the last initial object (%s)", m.GetResourceVersion(), last)
					}
				}
				last = m.GetResourceVersion()
			}
			// The next event is the next change, nothing else.
			next := mustCreate(t, s, configMap("ns", "next-"+strings.ReplaceAll(tt.name, " ", "-"), nil, nil))
			for {
				got := describe(t, nextEvent(t, w))
				if got.rv == next.ResourceVersion {
					break
				}
				// Only the earlier subtests' writes may come first.
				if !strings.HasPrefix(got.name, "next-") {
					t.Fatalf("got %+v, want the next change", got)
				}
			}
		})
	}
}

func TestWatchBookmarksInAnIdleCluster(t *testing.T) {
	bothClients(t, func(t *testing.T, c *clientv3.Client) {
		s := newConfigMapStore(t, c, WithBookmarkInterval(50*time.Millisecond))
		mustCreate(t, s, configMap("ns", "a", nil, nil))
		rev, err := s.CurrentRevision(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		// Nothing is written after this watch starts at the latest revision:
		// the bookmark must not wait for a write.
		w := startWatch(t, s, "/configmaps", storage.ListOptions{
			ResourceVersion: fmt.Sprint(rev), Recursive: true, AllowWatchBookmarks: true})
		ev := nextEvent(t, w)
		if ev.Type != watch.Bookmark {
			t.Fatalf("got %s, want BOOKMARK", ev.Type)
		}
		if got := ev.Object.(*corev1.ConfigMap).ResourceVersion; got != fmt.Sprint(rev) {
			t.Errorf("bookmark at %s, want %d", got, rev)
		}
	})
}

// An encoded watch hands on what etcd holds, keyed as callers name
// objects, and what NewDecoder makes of it is what a decoded watch sends.
func TestEncodedWatch(t *testing.T) { bothClients(t, testEncodedWatch) }

func testEncodedWatch(t *testing.T, c *clientv3.Client) {
	s := newConfigMapStore(t, c)
	decode := NewDecoder(NewStorageCodec(apiScheme, corev1.SchemeGroupVersion), func() kruntime.Object { return &corev1.ConfigMap{} })
	ctx := testCtx(t)
	a := mustCreate(t, s, configMap("ns", "a", nil, map[string]string{"v": "1"}))
	if _, err := s.Watch(ctx, "/configmaps/", storage.ListOptions{Recursive: true, Encoded: true, Predicate: labelPredicate(t, "x=y")}); err == nil {
		t.Fatal("an encoded watch with a selector was accepted")
	}
	w := startWatch(t, s, "/configmaps/", storage.ListOptions{Recursive: true, Encoded: true, AllowWatchBookmarks: true, InitialEventsEndBookmark: true})

	type change struct {
		typ watch.EventType
		key string
		rev int64
		cm  *corev1.ConfigMap // nil: no value
	}
	next := func() change {
		t.Helper()
		ev := nextNonBookmark(t, w)
		enc, ok := ev.Object.(*storage.Encoded)
		if !ok {
			t.Fatalf("%s event carries a %T, want *storage.Encoded", ev.Type, ev.Object)
		}
		ch := change{typ: ev.Type, key: enc.Key, rev: enc.Rev}
		if enc.Data != nil {
			obj, err := decode(enc.Data, enc.Rev)
			if err != nil {
				t.Fatalf("decode %s: %v", enc.Key, err)
			}
			ch.cm = obj.(*corev1.ConfigMap)
		}
		return ch
	}
	check := func(got change, typ watch.EventType, want *corev1.ConfigMap) {
		t.Helper()
		if got.typ != typ || got.key != cmKey(want.Namespace, want.Name) || got.rev != rvOf(t, want) {
			t.Fatalf("got %s %s@%d, want %s %s@%s", got.typ, got.key, got.rev, typ, cmKey(want.Namespace, want.Name), want.ResourceVersion)
		}
		if typ == watch.Deleted {
			if got.cm != nil {
				t.Fatalf("deletion carries a value: %+v", got.cm)
			}
			return
		}
		if got.cm == nil || got.cm.Data["v"] != want.Data["v"] || got.cm.ResourceVersion != want.ResourceVersion {
			t.Fatalf("decoded %+v, want %+v", got.cm, want)
		}
	}
	check(next(), watch.Added, a)
	b := mustCreate(t, s, configMap("ns", "b", nil, map[string]string{"v": "2"}))
	check(next(), watch.Added, b)
	b2 := update(t, s, "b", func(cur kruntime.Object) (kruntime.Object, error) {
		cm := cur.(*corev1.ConfigMap)
		cm.Data["v"] = "3"
		return cm, nil
	})
	check(next(), watch.Modified, b2)
	gone := remove(t, ctx, s, "a")
	check(next(), watch.Deleted, gone)
}
