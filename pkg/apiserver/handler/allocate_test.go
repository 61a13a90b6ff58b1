package handler

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

// recordingAllocator notes what the handler asked of it.
type recordingAllocator struct{ calls []string }

type recordedAllocation struct{ a *recordingAllocator }

func (r *recordingAllocator) Allocate(_ context.Context, obj, old runtime.Object, dry bool) (registry.Allocation, error) {
	r.calls = append(r.calls, fmt.Sprintf("allocate dry=%v old=%v", dry, old != nil))
	obj.(*corev1.ConfigMap).Data = map[string]string{"claimed": "yes"}
	return recordedAllocation{r}, nil
}

func (r *recordingAllocator) Release(context.Context, runtime.Object) {
	r.calls = append(r.calls, "release")
}

func (a recordedAllocation) Finish(_ context.Context, written bool) {
	a.a.calls = append(a.a.calls, fmt.Sprintf("finish written=%v", written))
}

// TestCreateSettlesAllocations: a create claims after validation and keeps
// the claim only when the object was stored.
func TestCreateSettlesAllocations(t *testing.T) {
	const path = "/api/v1/namespaces/default/configmaps"
	tests := []struct {
		name, path, body string
		code             int
		calls            []string
	}{
		{"stored", path, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}`, http.StatusCreated,
			[]string{"allocate dry=false old=false", "finish written=true"}},
		{"name taken", path, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"old"}}`, http.StatusConflict,
			[]string{"allocate dry=false old=false", "finish written=false"}},
		{"dry run", path + "?dryRun=All", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}`, http.StatusCreated,
			[]string{"allocate dry=true old=false", "finish written=false"}},
		{"invalid: nothing claimed", path, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}`, http.StatusUnprocessableEntity, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := &memStore{objs: map[string]*corev1.ConfigMap{
				"/configmaps/default/old": {ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default"}},
			}}
			h := testHandler(mem, nil)
			rec := &recordingAllocator{}
			for _, st := range h.stores {
				st.Allocator = rec
			}
			code, status, _ := serve(t, h, http.MethodPost, tt.path, tt.body)
			if code != tt.code || fmt.Sprint(rec.calls) != fmt.Sprint(tt.calls) {
				t.Errorf("create = %d (%s), calls %v; want %d, %v", code, status.Message, rec.calls, tt.code, tt.calls)
			}
			if tt.code == http.StatusCreated && tt.calls[0] == "allocate dry=false old=false" && mem.objs["/configmaps/default/new"].Data["claimed"] != "yes" {
				t.Errorf("the stored object lacks what the allocator filled in")
			}
		})
	}
}
