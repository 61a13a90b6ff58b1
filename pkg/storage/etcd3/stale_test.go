package etcd3

import (
	"context"
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// staleKV answers serializable reads as a lagging etcd follower would: at an
// old revision.
type staleKV struct {
	clientv3.KV
	rev int64
}

func (s staleKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if clientv3.OpGet(key, opts...).IsSerializable() {
		opts = append(opts, clientv3.WithRev(s.rev))
	}
	return s.KV.Get(ctx, key, opts...)
}

func TestWritesDoNotAnswerFromStaleReads(t *testing.T) {
	uidOf := func(cm *corev1.ConfigMap) *storage.Preconditions {
		return &storage.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion}
	}
	tests := []struct {
		name string
		// write runs against a store whose serializable reads see the state
		// before "before" was created and "obj" was last updated.
		write func(s storage.Interface, obj *corev1.ConfigMap) error
	}{
		{"update with the latest resourceVersion as precondition", func(s storage.Interface, obj *corev1.ConfigMap) error {
			return s.GuaranteedUpdate(testCtx(t), cmKey("ns", "obj"), &corev1.ConfigMap{}, false, uidOf(obj), setAnnotation("b", "2"))
		}},
		{"update of an object the stale read does not have", func(s storage.Interface, _ *corev1.ConfigMap) error {
			return s.GuaranteedUpdate(testCtx(t), cmKey("ns", "new"), &corev1.ConfigMap{}, false, nil, setAnnotation("b", "2"))
		}},
		{"update that changes nothing", func(s storage.Interface, obj *corev1.ConfigMap) error {
			out := &corev1.ConfigMap{}
			err := s.GuaranteedUpdate(testCtx(t), cmKey("ns", "obj"), out, false, nil, setAnnotation("a", "1"))
			if err == nil && out.ResourceVersion != obj.ResourceVersion {
				return errors.New("unchanged object answered with resourceVersion " + out.ResourceVersion + ", want " + obj.ResourceVersion)
			}
			return err
		}},
		{"delete with the latest resourceVersion as precondition", func(s storage.Interface, obj *corev1.ConfigMap) error {
			return s.Delete(testCtx(t), cmKey("ns", "obj"), &corev1.ConfigMap{}, uidOf(obj), nil)
		}},
		{"delete of an object the stale read does not have", func(s storage.Interface, _ *corev1.ConfigMap) error {
			return s.Delete(testCtx(t), cmKey("ns", "new"), &corev1.ConfigMap{}, nil, nil)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fresh := newConfigMapStore(t, sharedClient)
			before := mustCreate(t, fresh, configMap("ns", "obj", nil, nil))
			mustCreate(t, fresh, configMap("ns", "new", nil, nil))
			obj := update(t, fresh, "obj", setAnnotation("a", "1"))

			lagging := clientv3.NewCtxClient(context.Background())
			lagging.KV = staleKV{KV: sharedClient.KV, rev: rvOf(t, before) - 1}
			stale := New(lagging, NewStorageCodec(apiScheme, corev1.SchemeGroupVersion), storePrefix(fresh),
				func() kruntime.Object { return &corev1.ConfigMap{} })
			if err := tt.write(stale, obj); err != nil {
				t.Fatalf("write through a store with stale reads: %v", err)
			}
		})
	}
}
