package drain

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// fakeServer answers discovery, pod GETs and evictions. budget refuses
// evictions with the 429 a PodDisruptionBudget gives; otherwise an
// eviction removes the pod.
type fakeServer struct {
	mu        sync.Mutex
	budget    bool
	pods      map[string]bool
	evictions []policyv1.Eviction
}

func (s *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/api/v1":
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true, Kind: "Pod"},
			{Name: "pods/eviction", Namespaced: true, Group: "policy", Version: "v1", Kind: "Eviction"},
		}})
	case strings.HasSuffix(r.URL.Path, "/eviction") && r.Method == http.MethodPost:
		var ev policyv1.Eviction
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &ev)
		s.evictions = append(s.evictions, ev)
		if s.budget {
			w.WriteHeader(http.StatusTooManyRequests)
			_ = json.NewEncoder(w).Encode(metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
				Message: "Cannot evict pod as it would violate the pod's disruption budget.",
				Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "DisruptionBudget", Message: "The disruption budget pdb needs 1 healthy pods and has 1 currently"}}},
			})
			return
		}
		delete(s.pods, ev.Name)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusSuccess})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/ns/pods/"):
		name := strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/ns/pods/")
		if !s.pods[name] {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
				Message: `pods "` + name + `" not found`,
			})
			return
		}
		_ = json.NewEncoder(w).Encode(corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-" + "x"}})
	default:
		http.NotFound(w, r)
	}
}

func testOptions(t *testing.T, s *fakeServer) (*Options, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	o := newOptions(genericiooptions.IOStreams{Out: out, ErrOut: errOut})
	cfg := &rest.Config{Host: srv.URL}
	var err error
	if o.core, err = coreClient(cfg); err != nil {
		t.Fatal(err)
	}
	if o.discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return o, out, errOut
}

func TestEvictionRefusedByBudgetRetriesUntilTimeout(t *testing.T) {
	s := &fakeServer{budget: true, pods: map[string]bool{"p": true}}
	o, out, errOut := testOptions(t, s)
	o.retryDelay = 300 * time.Millisecond
	o.Timeout = 500 * time.Millisecond
	o.GracePeriodSeconds = 7
	start := time.Now()
	err := o.removePods(context.Background(), []corev1.Pod{pod("p", rs)})
	if err == nil || err.Error() != `error when evicting pods/"p" -n "ns": global timeout reached: 500ms` {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %v; --timeout is 500ms", d)
	}
	wantErr := `error when evicting pods/"p" -n "ns" (will retry after 300ms): Cannot evict pod as it would violate the pod's disruption budget.` + "\n"
	if !strings.HasPrefix(errOut.String(), wantErr) {
		t.Errorf("stderr %q, want it to start with %q", errOut, wantErr)
	}
	if !strings.HasPrefix(out.String(), "evicting pod ns/p\nevicting pod ns/p\n") {
		t.Errorf("stdout %q: each attempt says evicting", out)
	}
	if len(s.evictions) < 2 {
		t.Fatalf("%d evictions, want a retry", len(s.evictions))
	}
	if g := s.evictions[0].DeleteOptions.GracePeriodSeconds; g == nil || *g != 7 {
		t.Errorf("eviction grace period %v, want 7", g)
	}
}

func TestEvictionWaitsForThePodToGo(t *testing.T) {
	s := &fakeServer{pods: map[string]bool{"a": true, "b": true}}
	o, out, errOut := testOptions(t, s)
	if err := o.removePods(context.Background(), []corev1.Pod{pod("a", rs), pod("b", rs)}); err != nil {
		t.Fatal(err)
	}
	got := lines(out.String())
	for _, want := range []string{"evicting pod ns/a", "evicting pod ns/b", "pod/a evicted", "pod/b evicted"} {
		if !got[want] {
			t.Errorf("stdout %q lacks %q", out, want)
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr %q", errOut)
	}
	if s.evictions[0].DeleteOptions.GracePeriodSeconds != nil {
		t.Errorf("eviction sets a grace period without --grace-period")
	}
}

func lines(s string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		m[l] = true
	}
	return m
}
