package etcd3

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-lite/kube-lite/pkg/api"
	"github.com/kube-lite/kube-lite/pkg/etcd"
	"github.com/kube-lite/kube-lite/pkg/etcd/etcdtest"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// sharedClient talks to one etcd for the whole package; each test keeps to
// its own prefix. Tests that compact start their own etcd.
var sharedClient *clientv3.Client

var storeSeq atomic.Int64

// sharedLocal is an in-process client of the same etcd, the embedded
// apiserver's default.
var sharedLocal *clientv3.Client

// bothClients runs f against the gRPC and the in-process client.
func bothClients(t *testing.T, f func(t *testing.T, c *clientv3.Client)) {
	t.Run("grpc", func(t *testing.T) { f(t, sharedClient) })
	t.Run("inprocess", func(t *testing.T) { f(t, sharedLocal) })
}

func TestMain(m *testing.M) {
	os.Exit(etcdtest.Run(func(e *etcd.Embedded, c *clientv3.Client) int {
		sharedClient = c
		sharedLocal = e.InProcessClient()
		defer sharedLocal.Close()
		return m.Run()
	}))
}

// apiScheme is read-only once built.
var apiScheme = api.NewScheme()

// storePrefix is the etcd prefix of a store built by newConfigMapStore.
func storePrefix(s storage.Interface) string { return s.(*store).prefix }

func newConfigMapStore(t testing.TB, c *clientv3.Client, opts ...Option) storage.Interface {
	t.Helper()
	s := apiScheme
	// Unique per store, so that -count=N runs start from nothing.
	prefix := fmt.Sprintf("/registry-%s-%d", strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()), storeSeq.Add(1))
	return New(c, NewStorageCodec(s, corev1.SchemeGroupVersion), prefix,
		func() runtime.Object { return &corev1.ConfigMap{} }, opts...)
}

func configMap(ns, name string, lbls map[string]string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, UID: types.UID("uid-" + name)},
		Data:       data,
	}
}

func cmKey(ns, name string) string { return "/configmaps/" + ns + "/" + name }

func configMapAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, nil, fmt.Errorf("not a ConfigMap: %T", obj)
	}
	return labels.Set(cm.Labels), fields.Set{"metadata.name": cm.Name, "metadata.namespace": cm.Namespace}, nil
}

func labelPredicate(t testing.TB, sel string) storage.SelectionPredicate {
	t.Helper()
	ls, err := labels.Parse(sel)
	if err != nil {
		t.Fatalf("parse selector %q: %v", sel, err)
	}
	return storage.SelectionPredicate{Label: ls, GetAttrs: configMapAttrs}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t testing.TB, s storage.Interface, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Create(testCtx(t), cmKey(cm.Namespace, cm.Name), cm, out); err != nil {
		t.Fatalf("create %s/%s: %v", cm.Namespace, cm.Name, err)
	}
	return out
}
