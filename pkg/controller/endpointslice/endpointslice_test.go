package endpointslice

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

type harness struct {
	c      *Controller
	client *fake.Clientset
	f      informers.SharedInformerFactory
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	client := controllertest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Nodes(), f.Discovery().V1().EndpointSlices(), 0, nil)
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Service:
			err = f.Core().V1().Services().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			err = f.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *corev1.Node:
			err = f.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		case *discoveryv1.EndpointSlice:
			err = f.Discovery().V1().EndpointSlices().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &harness{c: c, client: client, f: f}
}

// catchUp copies the stored slices into the informer cache.
func (h *harness) catchUp(t *testing.T) {
	t.Helper()
	list, err := h.client.DiscoveryV1().EndpointSlices("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, &list.Items[i])
	}
	if err := h.f.Discovery().V1().EndpointSlices().Informer().GetIndexer().Replace(items, ""); err != nil {
		t.Fatal(err)
	}
}

func TestSyncWritesOnceAndWaitsForItsCache(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, service(), pod(1, true), nodes["node-1"])
	if err := h.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := controllertest.Writes(h.client); !slices.Equal(got, []string{"create endpointslices"}) {
		t.Fatalf("writes %v, want one create", got)
	}
	// The cache does not show the new slice yet: no second create.
	if err := h.c.sync(ctx, "ns/web"); !errors.Is(err, errStaleCache) {
		t.Fatalf("sync on a stale cache: %v, want errStaleCache", err)
	}
	h.catchUp(t)
	if err := h.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := controllertest.Writes(h.client); len(got) != 1 {
		t.Fatalf("writes %v after the cache caught up, want still one", got)
	}
}

func TestSyncLeavesServicesWithoutSelectorAlone(t *testing.T) {
	manual := service(func(s *corev1.Service) { s.Spec.Selector = nil })
	userSlice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-manual", Namespace: "ns",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}, AddressType: discoveryv1.AddressTypeIPv4}
	h := newHarness(t, manual, pod(1, true), userSlice)
	if err := h.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := controllertest.Writes(h.client); len(got) != 0 {
		t.Errorf("writes %v, want none", got)
	}
}

func TestSyncOfADeletedServiceRemovesItsSlices(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, service(), pod(1, true), nodes["node-1"])
	if err := h.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	h.catchUp(t)
	_ = h.f.Core().V1().Services().Informer().GetIndexer().Delete(service())
	if err := h.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	list, _ := h.client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
	if len(list.Items) != 0 {
		t.Errorf("%d slices left after the Service went", len(list.Items))
	}
}

func TestPodOfAnUnknownNodeWaitsForIt(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, service(), pod(1, true), pod(2, true, func(p *corev1.Pod) { p.Spec.NodeName = "node-new" }), nodes["node-1"])
	err := h.c.sync(ctx, "ns/web")
	if err == nil || !strings.Contains(err.Error(), "p002") {
		t.Fatalf("sync: %v, want an error naming p002 so that the Service is retried", err)
	}
	list, _ := h.client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
	if len(list.Items) != 1 || len(list.Items[0].Endpoints) != 1 {
		t.Fatalf("slices %+v: want one with p001 alone", list.Items)
	}
	// The Node's arrival brings the Service back at once.
	h.c.queueWaiting()
	if n := h.c.queue.Len(); n != 1 {
		t.Fatalf("queue length %d after the Node appeared, want 1", n)
	}
	_ = h.f.Core().V1().Nodes().Informer().GetIndexer().Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-new"}})
	h.catchUp(t)
	if err := h.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	list, _ = h.client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
	if len(list.Items) != 1 || len(list.Items[0].Endpoints) != 2 {
		t.Fatalf("slices %+v: want one with both pods", list.Items)
	}
	key, _ := h.c.queue.Get() // drain
	h.c.queue.Done(key)
	h.c.queueWaiting()
	if n := h.c.queue.Len(); n != 0 {
		t.Errorf("queue length %d: the Service no longer waits for a Node", n)
	}
}
