package endpoint

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func service(mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "svc-uid", CreationTimestamp: metav1.NewTime(t0), Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			ClusterIP:  "10.96.0.20",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// pod is a running pod of app=web on node-1 with the given IP.
func pod(name, ip string, ready bool, mutate ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Labels: map[string]string{"app": "web"}, ResourceVersion: "1"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func addr(name, ip string) corev1.EndpointAddress {
	return corev1.EndpointAddress{IP: ip, NodeName: ptr.To("node-1"),
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, UID: types.UID(name + "-uid")}}
}

func httpPort(n int32) []corev1.EndpointPort {
	return []corev1.EndpointPort{{Name: "http", Port: n, Protocol: corev1.ProtocolTCP}}
}

func TestSubsets(t *testing.T) {
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }
	publish := func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }
	named := func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http") }
	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want []corev1.EndpointSubset
	}{
		{name: "no pods", svc: service(), want: []corev1.EndpointSubset{}},
		{
			name: "ready and not-ready pods, sorted by IP",
			svc:  service(),
			pods: []*corev1.Pod{pod("b", "10.244.0.3", true), pod("a", "10.244.0.2", true), pod("c", "10.244.0.4", false)},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2"), addr("b", "10.244.0.3")},
				NotReadyAddresses: []corev1.EndpointAddress{addr("c", "10.244.0.4")}, Ports: httpPort(8080)}},
		},
		{
			name: "a pod without an IP, a finished pod and a terminating pod are left out",
			svc:  service(),
			pods: []*corev1.Pod{pod("a", "10.244.0.2", true), pod("noip", "", true),
				pod("done", "10.244.0.5", false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				pod("going", "10.244.0.6", true, deleting)},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2")}, Ports: httpPort(8080)}},
		},
		{
			name: "publishNotReadyAddresses: not-ready and terminating pods are ready addresses",
			svc:  service(publish),
			pods: []*corev1.Pod{pod("a", "10.244.0.2", false), pod("going", "10.244.0.6", true, deleting)},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2"), addr("going", "10.244.0.6")}, Ports: httpPort(8080)}},
		},
		{
			name: "a named targetPort resolves per pod, grouping pods by port",
			svc:  service(named),
			pods: []*corev1.Pod{pod("a", "10.244.0.2", true), pod("b", "10.244.0.3", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 }),
				pod("noport", "10.244.0.4", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })},
			want: []corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2")}, Ports: httpPort(8080)},
				{Addresses: []corev1.EndpointAddress{addr("b", "10.244.0.3")}, Ports: httpPort(9090)},
			},
		},
		{
			name: "two ports reaching the same pods share one subset",
			svc: service(func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "admin", Port: 81, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9000)})
			}),
			pods: []*corev1.Pod{pod("a", "10.244.0.2", true)},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2")},
				Ports: []corev1.EndpointPort{{Name: "admin", Port: 9000, Protocol: corev1.ProtocolTCP}, {Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}},
		},
		{
			name: "hostname only with the Service as subdomain",
			svc:  service(),
			pods: []*corev1.Pod{
				pod("a", "10.244.0.2", true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a-host", "web" }),
				pod("b", "10.244.0.3", true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "b-host", "other" }),
			},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{
				func() corev1.EndpointAddress { a := addr("a", "10.244.0.2"); a.Hostname = "a-host"; return a }(), addr("b", "10.244.0.3")},
				Ports: httpPort(8080)}},
		},
		{
			name: "headless without ports lists addresses alone",
			svc:  service(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone; s.Spec.Ports = nil }),
			pods: []*corev1.Pod{pod("a", "10.244.0.2", true)},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2")}}},
		},
		{
			name: "an IPv4 Service takes the pod's IPv4 address",
			svc:  service(),
			pods: []*corev1.Pod{pod("a", "fd00::2", true, func(p *corev1.Pod) {
				p.Status.PodIPs = []corev1.PodIP{{IP: "fd00::2"}, {IP: "10.244.0.2"}}
			}), pod("v6only", "fd00::3", true)},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2")}, Ports: httpPort(8080)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Subsets(tt.svc, tt.pods)
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("subsets\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDesiredTruncatesOverCapacity(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 1100 {
		pods = append(pods, pod(fmt.Sprintf("p%04d", i), fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), i < 950))
	}
	ep, write := Desired(nil, service(), Subsets(service(), pods), time.Time{})
	if !write {
		t.Fatal("no write for a new Endpoints")
	}
	ready, notReady := len(ep.Subsets[0].Addresses), len(ep.Subsets[0].NotReadyAddresses)
	if ready != 950 || notReady != 50 || ep.Annotations[corev1.EndpointsOverCapacity] != "truncated" {
		t.Errorf("ready %d, not ready %d, annotation %q; want 950 ready, 50 not ready (not-ready cut first), \"truncated\"",
			ready, notReady, ep.Annotations[corev1.EndpointsOverCapacity])
	}
	// Back under capacity, the annotation goes.
	ep, write = Desired(ep, service(), Subsets(service(), pods[:10]), time.Time{})
	if _, ok := ep.Annotations[corev1.EndpointsOverCapacity]; !write || ok {
		t.Errorf("write=%v, over-capacity annotation kept=%v; want a write without it", write, ok)
	}
}

func TestDesiredOnlyWritesChanges(t *testing.T) {
	svc := service()
	pods := []*corev1.Pod{pod("a", "10.244.0.2", true)}
	first, write := Desired(nil, svc, Subsets(svc, pods), t0)
	if !write {
		t.Fatal("no write for a new Endpoints")
	}
	if got := first.Labels; got["tier"] != "front" || got[LabelManagedBy] != ControllerName {
		t.Errorf("labels %v: want the Service's plus %s=%s", got, LabelManagedBy, ControllerName)
	}
	if got := first.Annotations[corev1.EndpointsLastChangeTriggerTime]; got != "2026-01-01T12:00:00Z" {
		t.Errorf("trigger time annotation %q", got)
	}
	stored := first.DeepCopy()
	stored.ResourceVersion = "5"

	// A pod update nobody can see (its resourceVersion) changes nothing.
	bumped := pod("a", "10.244.0.2", true, func(p *corev1.Pod) { p.ResourceVersion = "9" })
	stored.Subsets[0].Addresses[0].TargetRef.ResourceVersion = "1"
	if _, write := Desired(stored, svc, Subsets(svc, []*corev1.Pod{bumped}), time.Time{}); write {
		t.Error("rewrote Endpoints for an invisible pod change")
	}
	// A new Service label is a change.
	relabelled := service(func(s *corev1.Service) { s.Labels["v"] = "2" })
	if ep, write := Desired(stored, relabelled, Subsets(relabelled, pods), time.Time{}); !write || ep.Labels["v"] != "2" {
		t.Errorf("write=%v labels=%v; want the new label written", write, ep.Labels)
	}
	// Headless Services' Endpoints are labelled so.
	headless := service(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })
	if ep, _ := Desired(nil, headless, Subsets(headless, pods), time.Time{}); !hasKey(ep.Labels, corev1.IsHeadlessService) {
		t.Errorf("labels %v lack %s", ep.Labels, corev1.IsHeadlessService)
	}
	if ep, _ := Desired(nil, svc, Subsets(svc, pods), time.Time{}); hasKey(ep.Labels, corev1.IsHeadlessService) {
		t.Errorf("labels %v of a Service with a cluster IP have %s", ep.Labels, corev1.IsHeadlessService)
	}
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

func newController(objs ...runtime.Object) (*Controller, informers.SharedInformerFactory, func(*Controller) []string) {
	client := controllertest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Endpoints(), nil)
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			_ = f.Core().V1().Services().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			_ = f.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *corev1.Endpoints:
			_ = f.Core().V1().Endpoints().Informer().GetIndexer().Add(o)
		}
	}
	return c, f, func(*Controller) []string { return controllertest.Writes(client) }
}

func TestSync(t *testing.T) {
	selectorless := service(func(s *corev1.Service) { s.Name = "manual"; s.Spec.Selector = nil })
	userEndpoints := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "ns"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.1"}}}}}
	external := service(func(s *corev1.Service) {
		s.Name = "ext"
		s.Spec.Type = corev1.ServiceTypeExternalName
		s.Spec.ExternalName = "example.org"
	})
	orphan := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns"}}
	tests := []struct {
		name   string
		objs   []runtime.Object
		key    string
		writes []string
	}{
		{name: "a Service with pods gets Endpoints", objs: []runtime.Object{service(), pod("a", "10.244.0.2", true)}, key: "ns/web", writes: []string{"create endpoints"}},
		{name: "a Service with no pods gets empty Endpoints", objs: []runtime.Object{service()}, key: "ns/web", writes: []string{"create endpoints"}},
		{name: "a Service without a selector is left to the user", objs: []runtime.Object{selectorless, userEndpoints}, key: "ns/manual"},
		{name: "an ExternalName Service gets none", objs: []runtime.Object{external}, key: "ns/ext"},
		{name: "Endpoints of a deleted Service go", objs: []runtime.Object{orphan}, key: "ns/gone", writes: []string{"delete endpoints"}},
		{name: "nothing to delete when both are gone", key: "ns/gone", writes: []string{"delete endpoints"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, writes := newController(tt.objs...)
			if err := c.sync(context.Background(), tt.key); err != nil {
				t.Fatal(err)
			}
			if got := writes(c); !slices.Equal(got, tt.writes) {
				t.Errorf("writes %v, want %v", got, tt.writes)
			}
		})
	}
}

// TestSyncIsANoOpOnceWritten: syncing again against what was written makes
// no second write, and a pod turning unready moves to notReadyAddresses.
func TestSyncIsANoOpOnceWritten(t *testing.T) {
	ctx := context.Background()
	svc, a := service(), pod("a", "10.244.0.2", true)
	c, f, writes := newController(svc, a)
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	ep, err := c.client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep.ResourceVersion = "10"
	epIndexer := f.Core().V1().Endpoints().Informer().GetIndexer()
	_ = epIndexer.Add(ep)
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := writes(c); !slices.Equal(got, []string{"create endpoints"}) {
		t.Fatalf("writes %v, want only the create", got)
	}

	unready := pod("a", "10.244.0.2", false)
	unready.ResourceVersion = "2"
	_ = f.Core().V1().Pods().Informer().GetIndexer().Update(unready)
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	got, _ := c.client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
	if len(got.Subsets) != 1 || len(got.Subsets[0].Addresses) != 0 || len(got.Subsets[0].NotReadyAddresses) != 1 {
		t.Errorf("subsets %+v: want the pod under notReadyAddresses", got.Subsets)
	}
}

func TestRepack(t *testing.T) {
	a, b := addr("a", "10.244.0.2"), addr("b", "10.244.0.3")
	p80 := corev1.EndpointPort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}
	p81 := corev1.EndpointPort{Name: "metrics", Port: 81, Protocol: corev1.ProtocolTCP}
	tests := []struct {
		name string
		in   []corev1.EndpointSubset
		want []corev1.EndpointSubset
	}{
		{
			name: "addresses of the same port merge",
			in: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{b}, Ports: []corev1.EndpointPort{p80}},
				{Addresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p80}}},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{a, b}, Ports: []corev1.EndpointPort{p80}}},
		},
		{
			name: "an address both ready and not ready on a port is not ready",
			in: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p80}},
				{NotReadyAddresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p80}},
				{Addresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p80}}},
			want: []corev1.EndpointSubset{{NotReadyAddresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p80}}},
		},
		{
			name: "ports with different addresses stay apart",
			in:   []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{a, b}, Ports: []corev1.EndpointPort{p80}}, {Addresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p81}}},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{a, b}, Ports: []corev1.EndpointPort{p80}}, {Addresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p81}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Repack(tt.in); !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("Repack\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
