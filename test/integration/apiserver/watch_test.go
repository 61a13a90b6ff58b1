package apiserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func TestInformerSeesChanges(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	events := configMapInformer(t, ctx, s)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"a": "b"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "after", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectInformerEvents(t, events, "add before", "add after", "update after", "delete after")
}

// configMapInformer starts a client-go informer of every ConfigMap, as
// controllers run them (a watch-list first, client-go's default), waits
// until it has synced and returns what its handlers see: "add NAME",
// "update NAME", "delete NAME".
func configMapInformer(t *testing.T, ctx context.Context, s *framework.Server) <-chan string {
	t.Helper()
	factory := informers.NewSharedInformerFactory(s.Client, 0)
	inf := factory.Core().V1().ConfigMaps().Informer()
	events := make(chan string, 100)
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o interface{}) { events <- "add " + o.(*corev1.ConfigMap).Name },
		UpdateFunc: func(_, o interface{}) { events <- "update " + o.(*corev1.ConfigMap).Name },
		DeleteFunc: func(o interface{}) {
			if cm, ok := o.(*corev1.ConfigMap); ok {
				events <- "delete " + cm.Name
			}
		},
	})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer never synced")
	}
	return events
}

func expectInformerEvents(t *testing.T, events <-chan string, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got := <-events:
			if got != w {
				t.Fatalf("event: got %q, want %q", got, w)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("timed out waiting for %q", w)
		}
	}
}

func TestWatchResumesFromResourceVersion(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Changes made while nobody watches must all arrive, in order, once.
	var want []string
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("cm-%d", i)
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, "ADDED "+name)
	}
	if err := cms.Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "DELETED first")
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	lastRV := 0
	for _, wnt := range want {
		select {
		case ev := <-w.ResultChan():
			cm := ev.Object.(*corev1.ConfigMap)
			if got := string(ev.Type) + " " + cm.Name; got != wnt {
				t.Fatalf("got %q, want %q", got, wnt)
			}
			rv, _ := strconv.Atoi(cm.ResourceVersion)
			if rv <= lastRV {
				t.Fatalf("resourceVersion went backwards: %d after %d", rv, lastRV)
			}
			lastRV = rv
		case <-time.After(20 * time.Second):
			t.Fatalf("timed out waiting for %q", wnt)
		}
	}
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("unexpected extra event %s", ev.Type)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestWatchTooOldIsGone(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	old, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	latest, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rev, _ := strconv.ParseInt(latest.ResourceVersion, 10, 64)
	if _, err := s.Etcd.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	oldRV, _ := strconv.ParseInt(old.ResourceVersion, 10, 64)
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(oldRV-1, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Error {
			t.Fatalf("want an ERROR event, got %s", ev.Type)
		}
		st, ok := ev.Object.(*metav1.Status)
		if !ok || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
			t.Fatalf("want 410 Expired, got %#v", ev.Object)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no event")
	}
	// A paged list continued after compaction is gone too.
	for i := 0; i < 3; i++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatalf("first page: %v, continue %q", err, page.Continue)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cur, _ := cms.Get(ctx, "late", metav1.GetOptions{})
	rev, _ = strconv.ParseInt(cur.ResourceVersion, 10, 64)
	if _, err := s.Etcd.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	_, err = cms.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue})
	if code := statusCode(err); code != http.StatusGone {
		t.Fatalf("continue after compaction: want 410, got %v", err)
	}
	// As upstream: the 410 says why, without storage keys, and carries a
	// token that finishes the list at the latest revision.
	var gone *apierrors.StatusError
	if !errors.As(err, &gone) || !strings.HasPrefix(gone.ErrStatus.Message, "The provided continue parameter is too old") ||
		gone.ErrStatus.ListMeta.Continue == "" {
		t.Fatalf("continue after compaction: %#v, want upstream's message and a fresh continue token", err)
	}
	rest, err := cms.List(ctx, metav1.ListOptions{Continue: gone.ErrStatus.ListMeta.Continue})
	if err != nil || len(rest.Items) == 0 {
		t.Fatalf("list with the fresh token: %v", err)
	}
	_, err = cms.List(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) || err.Error() != "The resourceVersion for the provided list is too old." {
		t.Errorf("exact list of a compacted revision: %v, want 410 The resourceVersion for the provided list is too old.", err)
	}
	// A resourceVersion from the future: TestReadAtAFutureResourceVersion
	// (client-go retries that 504 as its Retry-After says, ten times).
}

func TestWatchBookmarks(t *testing.T) {
	s := framework.StartAPIServer(t, framework.WithBookmarkInterval(200*time.Millisecond))
	ctx := ctxT(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Bookmark {
				t.Fatalf("want only bookmarks on an idle watch, got %s", ev.Type)
			}
			b := ev.Object.(*corev1.ConfigMap)
			rv, _ := strconv.Atoi(b.ResourceVersion)
			base, _ := strconv.Atoi(cm.ResourceVersion)
			if rv < base {
				t.Fatalf("bookmark resourceVersion %d older than the watch start %d", rv, base)
			}
			return
		case <-deadline:
			t.Fatal("no bookmark arrived")
		}
	}
}

// TestInformerWatchListIsServedFromTheWatchCache: a client-go informer
// starts with a watch-list (sendInitialEvents, on by default in client-go),
// which the configmaps' watch cache serves instead of a watch of its own on
// etcd; it syncs with what was there and then sees changes.
func TestInformerWatchListIsServedFromTheWatchCache(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	metrics := func() string { return scrapeMetrics(t, ctx, s) }
	// Started with the server, the cache is ready by now; a watch that
	// came sooner would wait for it (up to a bound, then go to etcd).
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(metrics(), `apiserver_watch_cache_initializations_total{group="",resource="configmaps"} 1`), nil
	}); err != nil {
		t.Fatal("the configmaps watch cache never initialized")
	}
	cms := s.Client.CoreV1().ConfigMaps("default")
	before, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	events := configMapInformer(t, ctx, s)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "after", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectInformerEvents(t, events, "add before", "add after", "delete after")

	// The same request through the API: the initial state, then the
	// bookmark marking its end, at least as new as what was written.
	w, err := cms.Watch(ctx, metav1.ListOptions{
		SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var initial []string
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended early")
			}
			cm := ev.Object.(*corev1.ConfigMap)
			switch ev.Type {
			case watch.Added:
				initial = append(initial, cm.Name)
			case watch.Bookmark:
				if cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
					t.Fatalf("bookmark without %s: %v", metav1.InitialEventsAnnotationKey, cm.Annotations)
				}
				rv, _ := strconv.Atoi(cm.ResourceVersion)
				if base, _ := strconv.Atoi(before.ResourceVersion); rv < base {
					t.Fatalf("initial events end at %d, older than the write at %d", rv, base)
				}
				done = true
			default:
				t.Fatalf("got %s during the initial events", ev.Type)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no initial-events-end bookmark")
		}
	}
	if len(initial) != 1 || initial[0] != "before" {
		t.Fatalf("initial events %v, want [before]", initial)
	}

	m := metrics()
	cached := regexp.MustCompile(`apiserver_watch_cache_watches_total\{group="",resource="configmaps",source="cache"\} (\d+)`).FindStringSubmatch(m)
	if cached == nil || cached[1] == "0" {
		t.Errorf("the configmaps watches were not served from the watch cache:\n%s", grepLines(m, "apiserver_watch_cache_watches_total"))
	}
	if strings.Contains(m, `apiserver_watch_cache_watches_total{group="",resource="configmaps",source="storage"}`) {
		t.Errorf("a configmaps watch went to etcd:\n%s", grepLines(m, "apiserver_watch_cache_watches_total"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestAdmissionCachesAreFedFromTheWatchCache: what admission reads on every
// create (namespaces, service accounts, limit ranges, quotas, priority
// classes) and the webhook configurations are mirrored from the watch
// caches, not from etcd watches of their own that decode and hold every
// object a second time.
func TestAdmissionCachesAreFedFromTheWatchCache(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	resources := []string{
		`group="",resource="namespaces"`, `group="",resource="serviceaccounts"`,
		`group="",resource="limitranges"`, `group="",resource="resourcequotas"`,
		`group="scheduling.k8s.io",resource="priorityclasses"`,
		`group="admissionregistration.k8s.io",resource="mutatingwebhookconfigurations"`,
		`group="admissionregistration.k8s.io",resource="validatingwebhookconfigurations"`,
	}
	var m string
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		m = scrapeMetrics(t, ctx, s)
		for _, r := range resources {
			if !strings.Contains(m, "apiserver_watch_cache_watches_total{"+r+`,source="cache"} 1`) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the admission caches' watches were not all served from the watch cache:\n%s", grepLines(m, "apiserver_watch_cache_watches_total"))
	}
	for _, r := range resources {
		if strings.Contains(m, "apiserver_watch_cache_watches_total{"+r+`,source="storage"}`) {
			t.Errorf("%s: a watch went to etcd:\n%s", r, grepLines(m, "apiserver_watch_cache_watches_total"))
		}
	}
}

// scrapeMetrics returns the server's /metrics page.
func scrapeMetrics(t *testing.T, ctx context.Context, s *framework.Server) string {
	t.Helper()
	b, err := s.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	return string(b)
}

// The deprecated /watch/ paths are watches, as upstream still serves them
// (a name in the path selects that object), while ?watch=true on an
// object's own path is a plain get, as upstream's.
func TestLegacyWatchPaths(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	for _, name := range []string{"a", "b"} {
		if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rc := s.Client.CoreV1().RESTClient()
	// Each watch ends after a second; its initial events are all it sends.
	watched := func(path string, params ...string) []string {
		t.Helper()
		req := rc.Get().AbsPath(path).Param("timeoutSeconds", "1")
		for i := 0; i < len(params); i += 2 {
			req = req.Param(params[i], params[i+1])
		}
		body, err := req.DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s %v: %v", path, params, err)
		}
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			var ev struct {
				Type   string
				Object corev1.ConfigMap
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: %v in %q", path, err, line)
			}
			names = append(names, ev.Type+" "+ev.Object.Name)
		}
		return names
	}
	for _, tc := range []struct {
		path   string
		params []string
		want   []string
	}{
		{"/api/v1/watch/namespaces/default/configmaps", []string{"watch", "false"}, []string{"ADDED a", "ADDED b"}},
		{"/api/v1/watch/namespaces/default/configmaps/b", nil, []string{"ADDED b"}},
		{"/api/v1/watch/configmaps", []string{"fieldSelector", "metadata.name=a"}, []string{"ADDED a"}},
	} {
		if got := watched(tc.path, tc.params...); !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: events %q, want %q", tc.path, tc.params, got, tc.want)
		}
	}
	err := rc.Get().AbsPath("/api/v1/watch/namespaces/default/configmaps/a").Param("fieldSelector", "metadata.name=b").Do(ctx).Error()
	if !apierrors.IsBadRequest(err) || err.Error() != "fieldSelector metadata.name doesn't match requested name" {
		t.Errorf("watch of a with a selector naming b: %v, want upstream's 400", err)
	}
	var cm corev1.ConfigMap
	if err := rc.Get().AbsPath("/api/v1/namespaces/default/configmaps/a").Param("watch", "true").Do(ctx).Into(&cm); err != nil || cm.Name != "a" {
		t.Errorf("GET configmaps/a?watch=true: %v %q, want the object", err, cm.Name)
	}
}
