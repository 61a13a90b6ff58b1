package handler

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-lite/kube-lite/pkg/api"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/configmap"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// memStore keeps configmaps in a map: enough storage for the create path.
type memStore struct {
	mu      sync.Mutex
	objs    map[string]*corev1.ConfigMap
	creates int
}

func (s *memStore) Create(_ context.Context, key string, obj, out runtime.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creates++
	if _, ok := s.objs[key]; ok {
		return storage.NewError(storage.ErrKeyExists, key, "")
	}
	cm := obj.(*corev1.ConfigMap).DeepCopy()
	cm.ResourceVersion = "1"
	s.objs[key] = cm
	*out.(*corev1.ConfigMap) = *cm.DeepCopy()
	return nil
}

func (s *memStore) Get(_ context.Context, key string, out runtime.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cm, ok := s.objs[key]
	if !ok {
		return storage.NewError(storage.ErrKeyNotFound, key, "")
	}
	*out.(*corev1.ConfigMap) = *cm.DeepCopy()
	return nil
}

func (s *memStore) List(context.Context, string, storage.ListOptions, runtime.Object) error {
	panic("not used")
}

func (s *memStore) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	panic("not used")
}

func (s *memStore) GuaranteedUpdate(context.Context, string, runtime.Object, bool, *storage.Preconditions, storage.UpdateFunc) error {
	panic("not used")
}

func (s *memStore) Delete(context.Context, string, runtime.Object, *storage.Preconditions, storage.ValidateDeletionFunc) error {
	panic("not used")
}

func (s *memStore) CurrentRevision(context.Context) (int64, error) { return 1, nil }

// testHandler serves configmaps from mem, drawing random numbers from rnd.
func testHandler(mem *memStore, rnd func(int) int) *Handler {
	clk := clocktesting.NewFakeClock(metav1.Now().Time)
	st := &Store{Resource: configmap.Resource(clk), Storage: mem, Prefix: "/configmaps/"}
	return New(Config{Scheme: api.NewScheme(), Clock: clk, Stores: []*Store{st}, Rand: rnd})
}

// serve sends one request and decodes the answer's Status (on errors) or
// object metadata (on success).
func serve(t *testing.T, h *Handler, method, path, body string) (int, metav1.Status, metav1.ObjectMeta) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var status metav1.Status
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &status)
	_ = json.Unmarshal(w.Body.Bytes(), &obj)
	return w.Code, status, obj.Metadata
}

// TestGenerateNameRetries: a generated name that is taken is replaced by
// another, up to 8 tries, before the create fails with upstream's 409.
func TestGenerateNameRetries(t *testing.T) {
	const path = "/api/v1/namespaces/default/configmaps"
	const body = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"cm-"}}`
	taken := func() *memStore {
		return &memStore{objs: map[string]*corev1.ConfigMap{
			"/configmaps/default/cm-bbbbb": {ObjectMeta: metav1.ObjectMeta{Name: "cm-bbbbb", Namespace: "default"}},
		}}
	}

	t.Run("second name free", func(t *testing.T) {
		mem := taken()
		calls := 0
		// The first five characters draw 0 ("bbbbb", taken), the next 1.
		h := testHandler(mem, func(int) int { calls++; return (calls - 1) / 5 })
		code, status, m := serve(t, h, http.MethodPost, path, body)
		if code != http.StatusCreated || m.Name != "cm-ccccc" {
			t.Fatalf("create = %d %q (%s), want 201 cm-ccccc", code, m.Name, status.Message)
		}
	})

	t.Run("every name taken", func(t *testing.T) {
		mem := taken()
		h := testHandler(mem, func(int) int { return 0 })
		code, status, _ := serve(t, h, http.MethodPost, path, body)
		want := `configmaps "cm-bbbbb" already exists, the server was not able to generate a unique name for the object`
		if code != http.StatusConflict || status.Reason != metav1.StatusReasonAlreadyExists || status.Message != want {
			t.Fatalf("create = %d %s %q, want 409 AlreadyExists %q", code, status.Reason, status.Message, want)
		}
		if status.Details == nil || status.Details.RetryAfterSeconds != 1 {
			t.Errorf("details = %+v, want retryAfterSeconds 1", status.Details)
		}
		if mem.creates != maxNameGenerationAttempts {
			t.Errorf("tried %d names, want %d", mem.creates, maxNameGenerationAttempts)
		}
	})

	t.Run("chosen name taken is not retried", func(t *testing.T) {
		mem := taken()
		h := testHandler(mem, func(int) int { return 1 })
		code, status, _ := serve(t, h, http.MethodPost, path, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-bbbbb"}}`)
		if want := `configmaps "cm-bbbbb" already exists`; code != http.StatusConflict || status.Message != want || mem.creates != 1 {
			t.Fatalf("create = %d %q after %d tries, want 409 %q after 1", code, status.Message, mem.creates, want)
		}
	})

	t.Run("name held by an object being deleted", func(t *testing.T) {
		mem := taken()
		mem.objs["/configmaps/default/cm-bbbbb"].DeletionTimestamp = &metav1.Time{}
		h := testHandler(mem, func(int) int { return 1 })
		code, status, _ := serve(t, h, http.MethodPost, path, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-bbbbb"}}`)
		if want := `object is being deleted: configmaps "cm-bbbbb" already exists`; code != http.StatusConflict || status.Message != want {
			t.Fatalf("create = %d %q, want 409 %q", code, status.Message, want)
		}
	})

	t.Run("long prefix cut to fit 63 characters", func(t *testing.T) {
		mem := taken()
		h := testHandler(mem, func(int) int { return 1 })
		prefix := strings.Repeat("a", 62) + "-"
		code, status, m := serve(t, h, http.MethodPost, path, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"`+prefix+`"}}`)
		if want := strings.Repeat("a", 58) + "ccccc"; code != http.StatusCreated || m.Name != want {
			t.Fatalf("create = %d %q (%s), want 201 %q", code, m.Name, status.Message, want)
		}
	})
}
