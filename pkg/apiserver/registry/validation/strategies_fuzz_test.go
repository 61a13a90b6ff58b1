package validation_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/randfill"

	"github.com/kube-lite/kube-lite/pkg/api/podqos"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/configmap"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/event"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/limitrange"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/namespace"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/node"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/pod"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/resourcequota"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/secret"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/service"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/serviceaccount"
)

// This file checks the promise the generic handler relies on: whatever a
// client sends, once decoded, the core strategies answer with errors, never
// a panic (nil pointers, empty lists, odd quantities, missing statuses).

func coreResources() []*registry.Resource {
	c := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return []*registry.Resource{
		pod.Resource(c), node.Resource(c), namespace.Resource(c), event.Resource(c), configmap.Resource(c),
		secret.Resource(c), serviceaccount.Resource(c), service.Resource(c), resourcequota.Resource(c), limitrange.Resource(c),
	}
}

// exercise runs every strategy step, the table and the field selectors.
func exercise(t *testing.T, r *registry.Resource, obj, old runtime.Object) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			data, _ := json.Marshal(obj)
			t.Fatalf("%s: panic %v on %s", r.Name, p, data)
		}
	}()
	ctx := context.Background()
	s := r.Strategy
	s.Default(obj)
	s.Default(old)
	s.PrepareForCreate(ctx, obj)
	_ = s.Validate(ctx, obj)
	s.PrepareForUpdate(ctx, obj, old)
	_ = s.ValidateUpdate(ctx, obj, old)
	if r.Status != nil {
		r.Status.PrepareForUpdate(ctx, obj, old)
		_ = r.Status.ValidateUpdate(ctx, obj, old)
	}
	if _, err := r.Table.Cells(obj); err != nil {
		t.Fatalf("%s: table: %v", r.Name, err)
	}
	if _, _, err := r.ObjectAttrs(obj); err != nil {
		t.Fatalf("%s: attrs: %v", r.Name, err)
	}
	if p, ok := obj.(*corev1.Pod); ok {
		_ = pod.GracePeriod(p)
		_ = podqos.Class(p)
	}
}

func TestStrategiesSurviveRandomObjects(t *testing.T) {
	for _, r := range coreResources() {
		t.Run(r.Name, func(t *testing.T) {
			f := randfill.NewWithSeed(1).NilChance(0.3).NumElements(0, 3).MaxDepth(12).Funcs(
				func(q *resource.Quantity, c randfill.Continue) {
					*q = *resource.NewMilliQuantity(c.Int63n(20000)-1000, resource.DecimalSI)
				},
				// RawExtension holds arbitrary JSON; random bytes there are not a decoded object.
				func(e *runtime.RawExtension, c randfill.Continue) {},
			)
			for i := 0; i < 200; i++ {
				obj, old := r.New(), r.New()
				f.Fill(obj)
				f.Fill(old)
				exercise(t, r, obj, old)
			}
		})
	}
}

func TestStrategiesSurviveEmptyObjects(t *testing.T) {
	for _, r := range coreResources() {
		exercise(t, r, r.New(), r.New())
	}
}

// FuzzPodStrategy feeds decoded JSON pods through the pod strategy. The
// seeds run with go test; `go test -fuzz FuzzPodStrategy` explores further.
func FuzzPodStrategy(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"spec":{"containers":[{}]}}`,
		`{"spec":{"containers":[{"name":"a","image":"b","livenessProbe":{},"lifecycle":{"preStop":{}},"env":[{"valueFrom":{}}]}],"volumes":[{"name":"v"}]}}`,
		`{"spec":{"initContainers":[{"restartPolicy":"Always","startupProbe":{"httpGet":{"port":"x"}}}],"tolerations":[{}]},"status":{"initContainerStatuses":[{"state":{"terminated":{}}}]}}`,
		`{"metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z"},"status":{"containerStatuses":[{"state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{}}}]}}`,
	} {
		f.Add([]byte(seed), []byte(`{}`))
	}
	r := coreResources()[0]
	f.Fuzz(func(t *testing.T, data, oldData []byte) {
		obj, old := &corev1.Pod{}, &corev1.Pod{}
		if json.Unmarshal(data, obj) != nil || json.Unmarshal(oldData, old) != nil {
			return
		}
		exercise(t, r, obj, old)
	})
}
