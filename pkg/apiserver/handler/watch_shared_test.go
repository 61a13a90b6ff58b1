package handler

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// sharedWatchStore hands every watch the same object, as the watch cache
// does: one decoded object fanned out to every watcher.
type sharedWatchStore struct {
	memStore
	obj *corev1.ConfigMap
}

func (s *sharedWatchStore) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(2, false)
	w.Add(s.obj)
	w.Action(watch.Bookmark, s.obj)
	w.Stop()
	return sharedFakeWatch{w}, nil
}

// TestWatchesDoNotWriteToSharedObjects: concurrent watches in every output
// format encode one shared object without writing to it (run with -race).
func TestWatchesDoNotWriteToSharedObjects(t *testing.T) {
	obj := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default", ResourceVersion: "7"},
		Data:       map[string]string{"k": "v"},
	}
	h := testHandler(&memStore{}, nil)
	st, _ := h.Store(corev1.Resource("configmaps"))
	st.Storage = &sharedWatchStore{obj: obj}

	accepts := []string{
		"application/json",
		"application/vnd.kubernetes.protobuf",
		"application/json;as=Table;v=v1;g=meta.k8s.io",
		"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
	}
	var wg sync.WaitGroup
	for range 4 {
		for _, accept := range accepts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=5&includeObject=Object", nil)
				r.Header.Set("Accept", accept)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "cm") {
					t.Errorf("%s: %d %q", accept, w.Code, w.Body.String())
				}
			}()
		}
	}
	wg.Wait()
	if obj.Kind != "ConfigMap" || obj.APIVersion != "v1" {
		t.Fatalf("shared object's kind changed to %s %s", obj.APIVersion, obj.Kind)
	}
}
