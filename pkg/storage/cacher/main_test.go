package cacher

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-lite/kube-lite/pkg/api"
	"github.com/kube-lite/kube-lite/pkg/etcd"
	"github.com/kube-lite/kube-lite/pkg/etcd/etcdtest"
	"github.com/kube-lite/kube-lite/pkg/storage"
	"github.com/kube-lite/kube-lite/pkg/storage/etcd3"
)

// sharedClient talks to one etcd for the whole package; each test keeps to
// its own prefix. Tests that compact start their own etcd.
var sharedClient *clientv3.Client

var storeSeq atomic.Int64

func TestMain(m *testing.M) {
	os.Exit(etcdtest.Run(func(_ *etcd.Embedded, c *clientv3.Client) int {
		sharedClient = c
		return m.Run()
	}))
}

var apiScheme = api.NewScheme()

const resourcePrefix = "/configmaps/"

func newStore(t testing.TB, c *clientv3.Client, opts ...etcd3.Option) storage.Interface {
	t.Helper()
	// Unique per store, so that -count=N runs start from nothing. A long
	// bookmark interval keeps the storage's own bookmarks out of tests
	// that do not ask for them.
	prefix := fmt.Sprintf("/registry-%s-%d", strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()), storeSeq.Add(1))
	opts = append([]etcd3.Option{etcd3.WithBookmarkInterval(time.Hour)}, opts...)
	return etcd3.New(c, etcd3.NewStorageCodec(apiScheme, corev1.SchemeGroupVersion), prefix, newConfigMap, opts...)
}

func newConfigMap() runtime.Object { return &corev1.ConfigMap{} }

func cmKey(ns, name string) string { return resourcePrefix + ns + "/" + name }

type testCacher struct {
	*Cacher
	store storage.Interface
	clock *clocktesting.FakeClock
}

// startCacher runs a cacher around st until the test ends and waits until
// it is ready.
func startCacher(t *testing.T, st storage.Interface, tune func(*Config)) *testCacher {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now())
	cfg := Config{
		Storage:          st,
		Prefix:           resourcePrefix,
		Decode:           etcd3.NewDecoder(etcd3.NewStorageCodec(apiScheme, corev1.SchemeGroupVersion), newConfigMap),
		NewFunc:          func() runtime.Object { return &corev1.ConfigMap{} },
		NewListFunc:      func() runtime.Object { return &corev1.ConfigMapList{} },
		GroupVersionKind: corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Clock:            clk,
	}
	if tune != nil {
		tune(&cfg)
	}
	c := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	tc := &testCacher{Cacher: c, store: st, clock: clk}
	tc.waitReady(t)
	return tc
}

func (c *testCacher) waitReady(t *testing.T) {
	t.Helper()
	poll(t, "cache ready", func() bool {
		c.mu.RLock()
		defer c.mu.RUnlock()
		return c.ready
	})
}

// waitRev waits until the cache reflects rev.
func (c *testCacher) waitRev(t *testing.T, rev int64) {
	t.Helper()
	poll(t, "cache at revision "+strconv.FormatInt(rev, 10), func() bool {
		c.mu.RLock()
		defer c.mu.RUnlock()
		return c.ready && c.rev >= rev
	})
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func configMap(ns, name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

func mustCreate(t testing.TB, s storage.Interface, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Create(testCtx(t), cmKey(cm.Namespace, cm.Name), cm, out); err != nil {
		t.Fatalf("create %s/%s: %v", cm.Namespace, cm.Name, err)
	}
	return out
}

func mustUpdate(t testing.TB, s storage.Interface, ns, name string, f func(*corev1.ConfigMap)) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	err := s.GuaranteedUpdate(testCtx(t), cmKey(ns, name), out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		cm := cur.(*corev1.ConfigMap).DeepCopy()
		f(cm)
		return cm, nil
	})
	if err != nil {
		t.Fatalf("update %s/%s: %v", ns, name, err)
	}
	return out
}

func mustDelete(t testing.TB, s storage.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Delete(testCtx(t), cmKey(ns, name), out, nil, nil); err != nil {
		t.Fatalf("delete %s/%s: %v", ns, name, err)
	}
	return out
}

func rvOf(t testing.TB, obj runtime.Object) int64 {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", m.GetResourceVersion(), err)
	}
	return rv
}

func mustWatch(t *testing.T, s storage.Interface, key string, opts storage.ListOptions) watch.Interface {
	t.Helper()
	w, err := s.Watch(testCtx(t), key, opts)
	if err != nil {
		t.Fatalf("watch %s: %v", key, err)
	}
	t.Cleanup(w.Stop)
	return w
}

func cached(w watch.Interface) bool {
	_, ok := w.(*cacheWatcher)
	return ok
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch ended early")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for a watch event")
	}
	return watch.Event{}
}

// desc is "TYPE name@rv" (name only for bookmarks: "BOOKMARK @rv").
func desc(t testing.TB, ev watch.Event) string {
	t.Helper()
	if ev.Type == watch.Error {
		return fmt.Sprintf("ERROR %v", ev.Object)
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %s@%s", ev.Type, m.GetName(), m.GetResourceVersion())
}

func descObj(typ watch.EventType, obj *corev1.ConfigMap) string {
	return fmt.Sprintf("%s %s@%s", typ, obj.Name, obj.ResourceVersion)
}

// expect reads len(want) events and compares them with want.
func expect(t *testing.T, w watch.Interface, want ...string) {
	t.Helper()
	for i, d := range want {
		if got := desc(t, next(t, w)); got != d {
			t.Fatalf("event %d: got %q, want %q", i, got, d)
		}
	}
}

func labelPredicate(t testing.TB, sel string) storage.SelectionPredicate {
	t.Helper()
	ls, err := labels.Parse(sel)
	if err != nil {
		t.Fatalf("parse selector %q: %v", sel, err)
	}
	return storage.SelectionPredicate{Label: ls, GetAttrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
		cm := obj.(*corev1.ConfigMap)
		return labels.Set(cm.Labels), fields.Set{"metadata.name": cm.Name}, nil
	}}
}

// breakable hands the cacher storage watches that the test can fail, as an
// etcd restart or leader loss would.
type breakable struct {
	storage.Interface
	mu      sync.Mutex
	current *proxyWatch
}

func (b *breakable) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := b.Interface.Watch(ctx, key, opts)
	if err != nil || !opts.InitialEventsEndBookmark {
		return w, err
	}
	p := &proxyWatch{inner: w, out: make(chan watch.Event), failed: make(chan struct{}), stopped: make(chan struct{})}
	go p.run()
	b.mu.Lock()
	b.current = p
	b.mu.Unlock()
	return p, nil
}

// fail ends the current storage watch of the cacher with an error.
func (b *breakable) fail() {
	b.mu.Lock()
	p := b.current
	b.mu.Unlock()
	p.failOnce.Do(func() { close(p.failed) })
}

type proxyWatch struct {
	inner    watch.Interface
	out      chan watch.Event
	failed   chan struct{}
	failOnce sync.Once
	stopped  chan struct{}
	stopOnce sync.Once
}

func (p *proxyWatch) run() {
	defer close(p.out)
	defer p.inner.Stop()
	for {
		select {
		case <-p.stopped:
			return
		case <-p.failed:
			select {
			case p.out <- watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 500, Message: "etcd went away"}}:
			case <-p.stopped:
			}
			return
		case ev, ok := <-p.inner.ResultChan():
			if !ok {
				return
			}
			select {
			case p.out <- ev:
			case <-p.stopped:
				return
			}
		}
	}
}

func (p *proxyWatch) Stop()                          { p.stopOnce.Do(func() { close(p.stopped) }) }
func (p *proxyWatch) ResultChan() <-chan watch.Event { return p.out }
