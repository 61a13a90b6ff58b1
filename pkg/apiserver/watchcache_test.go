package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/pkg/etcd"
)

// TestWatchesAreServedFromTheWatchCache: watches from a resourceVersion
// are fanned out from the resource's watch cache, concurrently in every
// output format (run with -race: they share the objects), and each gets
// the change.
func TestWatchesAreServedFromTheWatchCache(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		cancel()
		t.Fatalf("start etcd: %v", err)
	}
	client := e.InProcessClient()
	t.Cleanup(func() {
		cancel()
		_ = client.Close()
		e.Stop()
	})
	// Client watches over gRPC, the caches' own watches in-process, as
	// the embedded etcd's server runs them.
	grpcClient, err := etcd.NewClient(ctx, etcd.Config{Endpoints: e.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = grpcClient.Close() })
	srv, err := apiserver.New(ctx, apiserver.Config{Etcd: grpcClient, EtcdCacheWatch: client})
	if err != nil {
		t.Fatalf("assemble apiserver: %v", err)
	}
	if err := srv.Bootstrap(ctx); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)

	metric := func(name string) bool {
		resp, err := http.Get(hs.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), name)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !metric(`apiserver_watch_cache_initializations_total{group="",resource="configmaps"} 1`) {
		if time.Now().After(deadline) {
			t.Fatal("the configmaps watch cache never initialized")
		}
		time.Sleep(10 * time.Millisecond)
	}

	const base = "/api/v1/namespaces/default/configmaps"
	post := func(name string) string {
		resp, err := http.Post(hs.URL+base, "application/json", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var obj struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
		}
		if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&obj) != nil {
			t.Fatalf("create %s: %d", name, resp.StatusCode)
		}
		return obj.Metadata.ResourceVersion
	}
	rv := post("first")

	accepts := []string{
		"application/json",
		"application/vnd.kubernetes.protobuf",
		"application/json;as=Table;v=v1;g=meta.k8s.io",
		"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
	}
	// A watch that misses the change fails the test instead of hanging it.
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	t.Cleanup(wcancel)
	var bodies []*bufio.Reader
	for range 3 {
		for _, accept := range accepts {
			req, _ := http.NewRequestWithContext(wctx, http.MethodGet, hs.URL+base+"?watch=1&includeObject=Object&resourceVersion="+rv, nil)
			req.Header.Set("Accept", accept)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			bodies = append(bodies, bufio.NewReader(resp.Body))
		}
	}
	post("second")
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Enough of the stream to hold the name, in any format.
			buf := make([]byte, 0, 4096)
			chunk := make([]byte, 512)
			for !strings.Contains(string(buf), "second") {
				n, err := b.Read(chunk)
				if err != nil {
					t.Errorf("watch %d (%s): %v after %q", i, accepts[i%len(accepts)], err, buf)
					return
				}
				buf = append(buf, chunk[:n]...)
			}
		}()
	}
	wg.Wait()
	if !metric(`apiserver_watch_cache_watches_total{group="",resource="configmaps",source="cache"} 12`) {
		t.Error("the watches were not served from the watch cache")
	}

	// Events have no watch cache, as upstream's: their watches go to etcd
	// and still see what is written.
	eventsCache := `apiserver_watch_cache_watches_total{group="",resource="events"`
	if metric(eventsCache) {
		t.Error("events have a watch cache")
	}
	const events = "/api/v1/namespaces/default/events"
	req, _ := http.NewRequestWithContext(wctx, http.MethodGet, hs.URL+events+"?watch=1&resourceVersion="+rv, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ev, err := http.Post(hs.URL+events, "application/json", strings.NewReader(
		`{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev1"},"involvedObject":{"kind":"ConfigMap","name":"first","namespace":"default"},"reason":"Test"}`))
	if err != nil {
		t.Fatal(err)
	}
	ev.Body.Close()
	if ev.StatusCode != http.StatusCreated {
		t.Fatalf("create event: %d", ev.StatusCode)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"ev1"`) {
		t.Errorf("events watch: %q, %v", line, err)
	}
	if metric(eventsCache) {
		t.Error("the events watch went through a watch cache")
	}
}
