package etcd3

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

func rvOf(t testing.TB, cm *corev1.ConfigMap) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q of %s is not a number", cm.ResourceVersion, cm.Name)
	}
	return rv
}

func TestCreateAndGet(t *testing.T) {
	s := newConfigMapStore(t, sharedClient)
	ctx := testCtx(t)

	in := configMap("ns", "a", map[string]string{"app": "x"}, map[string]string{"k": "v"})
	in.ResourceVersion = "12345" // a client's resourceVersion is not stored
	out := mustCreate(t, s, in)
	if out.ResourceVersion == "" || out.ResourceVersion == "12345" {
		t.Fatalf("created object has resourceVersion %q, want the etcd revision", out.ResourceVersion)
	}
	if out.Data["k"] != "v" || out.Labels["app"] != "x" || out.Name != "a" {
		t.Errorf("created object = %+v, want the input's content", out)
	}

	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, cmKey("ns", "a"), got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if !equality.Semantic.DeepEqual(got, out) {
		t.Errorf("get = %+v, want what create returned %+v", got, out)
	}

	rev, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	if rev < rvOf(t, out) {
		t.Errorf("CurrentRevision %d is older than the object just created (%s)", rev, out.ResourceVersion)
	}
}

func TestCreateErrors(t *testing.T) { bothClients(t, testCreateErrors) }

func testCreateErrors(t *testing.T, c *clientv3.Client) {
	s := newConfigMapStore(t, c)
	ctx := testCtx(t)
	mustCreate(t, s, configMap("ns", "taken", nil, nil))

	tests := []struct {
		name string
		obj  *corev1.ConfigMap
		want error
	}{
		{"name already exists", configMap("ns", "taken", nil, nil), storage.ErrKeyExists},
		// 4 MiB does not fit in an etcd request (3.5 MiB).
		{"too large", configMap("ns", "big", nil, map[string]string{"k": strings.Repeat("x", 4<<20)}), storage.ErrObjectTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Create(ctx, cmKey(tt.obj.Namespace, tt.obj.Name), tt.obj, &corev1.ConfigMap{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("create: error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestCreateAcceptsThreeMiB(t *testing.T) { bothClients(t, testCreateAcceptsThreeMiB) }

func testCreateAcceptsThreeMiB(t *testing.T, c *clientv3.Client) {
	s := newConfigMapStore(t, c)
	big := configMap("ns", "big", nil, map[string]string{"k": strings.Repeat("x", 3<<20-1024)})
	out := mustCreate(t, s, big)
	if len(out.Data["k"]) != len(big.Data["k"]) {
		t.Errorf("stored %d bytes, want %d", len(out.Data["k"]), len(big.Data["k"]))
	}
}

func TestGetNotFound(t *testing.T) {
	s := newConfigMapStore(t, sharedClient)
	err := s.Get(testCtx(t), cmKey("ns", "missing"), &corev1.ConfigMap{})
	if !errors.Is(err, storage.ErrKeyNotFound) {
		t.Fatalf("get missing: error %v, want ErrKeyNotFound", err)
	}
}

func setAnnotation(key, value string) storage.UpdateFunc {
	return func(cur runtime.Object) (runtime.Object, error) {
		cm := cur.(*corev1.ConfigMap)
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[key] = value
		return cm, nil
	}
}

func TestGuaranteedUpdateConcurrentWriters(t *testing.T) {
	s := newConfigMapStore(t, sharedClient)
	ctx := testCtx(t)
	created := mustCreate(t, s, configMap("ns", "counter", nil, nil))

	const writers, perWriter = 10, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWriter {
				err := s.GuaranteedUpdate(ctx, cmKey("ns", "counter"), &corev1.ConfigMap{}, false, nil,
					func(cur runtime.Object) (runtime.Object, error) {
						cm := cur.(*corev1.ConfigMap)
						n, _ := strconv.Atoi(cm.Annotations["count"])
						return setAnnotation("count", strconv.Itoa(n+1))(cm)
					})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("update: %v", err)
	}
	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, cmKey("ns", "counter"), got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Annotations["count"] != strconv.Itoa(writers*perWriter) {
		t.Errorf("count = %s, want %d: an update was lost", got.Annotations["count"], writers*perWriter)
	}
	if rvOf(t, got) <= rvOf(t, created) {
		t.Errorf("resourceVersion %s did not move past %s", got.ResourceVersion, created.ResourceVersion)
	}
}

func TestGuaranteedUpdate(t *testing.T) {
	uid := func(s string) *types.UID { u := types.UID(s); return &u }
	str := func(s string) *string { return &s }
	tests := []struct {
		name           string
		exists         bool
		ignoreNotFound bool
		pre            func(created *corev1.ConfigMap) *storage.Preconditions
		update         storage.UpdateFunc
		wantErr        error
		wantNewRV      bool
		wantAnnotation string
	}{
		{name: "changes are written with a new resourceVersion", exists: true,
			update: setAnnotation("a", "1"), wantNewRV: true, wantAnnotation: "1"},
		{name: "an unchanged object is not written", exists: true,
			update: func(cur runtime.Object) (runtime.Object, error) { return cur, nil }},
		{name: "nil from tryUpdate leaves the object", exists: true,
			update: func(runtime.Object) (runtime.Object, error) { return nil, nil }},
		{name: "tryUpdate error aborts", exists: true, wantErr: storage.ErrConflict,
			update: func(runtime.Object) (runtime.Object, error) { return nil, storage.ErrConflict }},
		{name: "missing key", wantErr: storage.ErrKeyNotFound, update: setAnnotation("a", "1")},
		{name: "missing key with ignoreNotFound creates", ignoreNotFound: true, wantNewRV: true, wantAnnotation: "1",
			update: func(cur runtime.Object) (runtime.Object, error) {
				cm := cur.(*corev1.ConfigMap)
				cm.Namespace, cm.Name = "ns", "obj"
				return setAnnotation("a", "1")(cm)
			}},
		{name: "matching preconditions", exists: true, update: setAnnotation("a", "1"), wantNewRV: true, wantAnnotation: "1",
			pre: func(c *corev1.ConfigMap) *storage.Preconditions {
				return &storage.Preconditions{UID: &c.UID, ResourceVersion: &c.ResourceVersion}
			}},
		{name: "UID precondition fails", exists: true, update: setAnnotation("a", "1"), wantErr: storage.ErrConflict,
			pre: func(*corev1.ConfigMap) *storage.Preconditions { return &storage.Preconditions{UID: uid("other")} }},
		{name: "stale resourceVersion precondition fails", exists: true, update: setAnnotation("a", "1"), wantErr: storage.ErrConflict,
			pre: func(*corev1.ConfigMap) *storage.Preconditions {
				return &storage.Preconditions{ResourceVersion: str("1")}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newConfigMapStore(t, sharedClient)
			ctx := testCtx(t)
			var created *corev1.ConfigMap
			if tt.exists {
				created = mustCreate(t, s, configMap("ns", "obj", nil, nil))
			}
			var pre *storage.Preconditions
			if tt.pre != nil {
				pre = tt.pre(created)
			}
			out := &corev1.ConfigMap{}
			err := s.GuaranteedUpdate(ctx, cmKey("ns", "obj"), out, tt.ignoreNotFound, pre, tt.update)
			if !errors.Is(err, tt.wantErr) || (err != nil && tt.wantErr == nil) {
				t.Fatalf("GuaranteedUpdate: error %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got := &corev1.ConfigMap{}
			if err := s.Get(ctx, cmKey("ns", "obj"), got); err != nil {
				t.Fatalf("get: %v", err)
			}
			if got.ResourceVersion != out.ResourceVersion {
				t.Errorf("out has resourceVersion %s, stored object %s", out.ResourceVersion, got.ResourceVersion)
			}
			if got.Annotations["a"] != tt.wantAnnotation {
				t.Errorf("stored annotation a=%q, want %q", got.Annotations["a"], tt.wantAnnotation)
			}
			if created != nil {
				if moved := got.ResourceVersion != created.ResourceVersion; moved != tt.wantNewRV {
					t.Errorf("resourceVersion %s -> %s; want a new one: %v", created.ResourceVersion, got.ResourceVersion, tt.wantNewRV)
				}
			}
		})
	}
}

func TestDelete(t *testing.T) {
	uid := func(s string) *types.UID { u := types.UID(s); return &u }
	str := func(s string) *string { return &s }
	veto := errors.New("vetoed")
	tests := []struct {
		name     string
		exists   bool
		pre      func(created *corev1.ConfigMap) *storage.Preconditions
		validate storage.ValidateDeletionFunc
		wantErr  error
	}{
		{name: "deletes", exists: true},
		{name: "missing key", wantErr: storage.ErrKeyNotFound},
		{name: "matching preconditions", exists: true, pre: func(c *corev1.ConfigMap) *storage.Preconditions {
			return &storage.Preconditions{UID: &c.UID, ResourceVersion: &c.ResourceVersion}
		}},
		{name: "UID precondition fails", exists: true, wantErr: storage.ErrConflict,
			pre: func(*corev1.ConfigMap) *storage.Preconditions { return &storage.Preconditions{UID: uid("other")} }},
		{name: "resourceVersion precondition fails", exists: true, wantErr: storage.ErrConflict,
			pre: func(*corev1.ConfigMap) *storage.Preconditions {
				return &storage.Preconditions{ResourceVersion: str("1")}
			}},
		{name: "validation vetoes", exists: true, wantErr: veto,
			validate: func(context.Context, runtime.Object) error { return veto }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newConfigMapStore(t, sharedClient)
			ctx := testCtx(t)
			var created *corev1.ConfigMap
			if tt.exists {
				created = mustCreate(t, s, configMap("ns", "obj", nil, map[string]string{"k": "v"}))
			}
			var pre *storage.Preconditions
			if tt.pre != nil {
				pre = tt.pre(created)
			}
			out := &corev1.ConfigMap{}
			err := s.Delete(ctx, cmKey("ns", "obj"), out, pre, tt.validate)
			if !errors.Is(err, tt.wantErr) || (err != nil && tt.wantErr == nil) {
				t.Fatalf("Delete: error %v, want %v", err, tt.wantErr)
			}
			getErr := s.Get(ctx, cmKey("ns", "obj"), &corev1.ConfigMap{})
			if err != nil {
				if tt.exists && getErr != nil {
					t.Errorf("failed delete removed the object: get: %v", getErr)
				}
				return
			}
			if !errors.Is(getErr, storage.ErrKeyNotFound) {
				t.Errorf("get after delete: %v, want not found", getErr)
			}
			if out.Data["k"] != "v" {
				t.Errorf("deleted object = %+v, want its last state", out)
			}
			if rvOf(t, out) <= rvOf(t, created) {
				t.Errorf("deleted object resourceVersion %s, want the deletion's revision after %s", out.ResourceVersion, created.ResourceVersion)
			}
		})
	}
}

func TestDeleteRetriesValidationOnConflict(t *testing.T) {
	s := newConfigMapStore(t, sharedClient)
	ctx := testCtx(t)
	mustCreate(t, s, configMap("ns", "obj", nil, map[string]string{"k": "v1"}))

	var seen []string
	validate := func(ctx context.Context, cur runtime.Object) error {
		cm := cur.(*corev1.ConfigMap)
		seen = append(seen, cm.Data["k"])
		if len(seen) == 1 {
			// Someone else writes between our read and our delete.
			return s.GuaranteedUpdate(ctx, cmKey("ns", "obj"), &corev1.ConfigMap{}, false, nil,
				func(cur runtime.Object) (runtime.Object, error) {
					cm := cur.(*corev1.ConfigMap)
					cm.Data["k"] = "v2"
					return cm, nil
				})
		}
		return nil
	}
	out := &corev1.ConfigMap{}
	if err := s.Delete(ctx, cmKey("ns", "obj"), out, nil, validate); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if strings.Join(seen, ",") != "v1,v2" {
		t.Errorf("validate saw %v, want [v1 v2]: a conflicting write must be re-validated", seen)
	}
	if out.Data["k"] != "v2" {
		t.Errorf("deleted object has k=%s, want the state that was deleted (v2)", out.Data["k"])
	}
}

func TestCreateIntoTheSameObject(t *testing.T) {
	s := newConfigMapStore(t, sharedClient)
	ctx := testCtx(t)
	obj := configMap("ns", "same", map[string]string{"a": "b"}, map[string]string{"k": "v"})
	if err := s.Create(ctx, cmKey("ns", "same"), obj, obj); err != nil {
		t.Fatalf("create: %v", err)
	}
	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, cmKey("ns", "same"), got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if obj.ResourceVersion == "" || obj.ResourceVersion != got.ResourceVersion {
		t.Errorf("created object has resourceVersion %q, stored %q", obj.ResourceVersion, got.ResourceVersion)
	}
	if got.Data["k"] != "v" || got.Labels["a"] != "b" {
		t.Errorf("stored %+v, want the created content", got)
	}
}
