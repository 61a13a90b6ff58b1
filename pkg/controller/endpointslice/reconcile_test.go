package endpointslice

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func service(mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "svc-uid", CreationTimestamp: metav1.NewTime(t0), Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			ClusterIP:  "10.96.0.20",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// pod n is app=web with IP 10.244.0.<n> on node-1, serving "http" on 8080.
func pod(n int, ready bool, mutate ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	name := fmt.Sprintf("p%03d", n)
	ip := fmt.Sprintf("10.244.%d.%d", n/200, n%200+1)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func pods(from, to int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := from; i < to; i++ {
		out = append(out, pod(i, true))
	}
	return out
}

var nodes = map[string]*corev1.Node{
	"node-1": {ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}},
	"node-2": {ObjectMeta: metav1.ObjectMeta{Name: "node-2"}},
}

func nodeLookup(name string) (*corev1.Node, bool) {
	n, ok := nodes[name]
	return n, ok
}

// apply plays a plan against a set of stored slices as the apiserver would,
// naming creates, so that a second Reconcile sees what the first wrote.
func apply(t *testing.T, stored []*discoveryv1.EndpointSlice, plan Plan) []*discoveryv1.EndpointSlice {
	t.Helper()
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range stored {
		byName[s.Name] = s
	}
	for _, s := range plan.Delete {
		if _, ok := byName[s.Name]; !ok {
			t.Fatalf("plan deletes %s, which does not exist", s.Name)
		}
		delete(byName, s.Name)
	}
	for _, s := range plan.Update {
		if _, ok := byName[s.Name]; !ok {
			t.Fatalf("plan updates %s, which does not exist", s.Name)
		}
		byName[s.Name] = s.DeepCopy()
	}
	for i, s := range plan.Create {
		c := s.DeepCopy()
		c.Name = fmt.Sprintf("%sgen%d-%d", s.GenerateName, len(byName), i)
		if _, ok := byName[c.Name]; ok {
			t.Fatalf("name clash %s", c.Name)
		}
		byName[c.Name] = c
	}
	var out []*discoveryv1.EndpointSlice
	for _, s := range byName {
		out = append(out, s)
	}
	return sortedByName(out)
}

// shape summarises slices: endpoint counts per slice, sorted, e.g. "100,50".
func shape(ss []*discoveryv1.EndpointSlice) string {
	var n []int
	for _, s := range ss {
		n = append(n, len(s.Endpoints))
	}
	slices.Sort(n)
	var parts []string
	for _, x := range n {
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ",")
}

func counts(p Plan) string {
	return fmt.Sprintf("create %d update %d delete %d", len(p.Create), len(p.Update), len(p.Delete))
}

func reconcile(svc *corev1.Service, ps []*corev1.Pod, existing []*discoveryv1.EndpointSlice, maxPer int) Plan {
	return Reconcile(Input{Service: svc, Pods: ps, Existing: existing, Node: nodeLookup, MaxEndpointsPerSlice: maxPer, TriggerTime: t0})
}

func TestNewSliceIsUpstreamShaped(t *testing.T) {
	svc := service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = false })
	ps := []*corev1.Pod{
		pod(1, true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "one", "web" }),
		pod(2, false),
		pod(3, true, func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }),
		pod(4, true, func(p *corev1.Pod) { p.Spec.NodeName = "node-2" }),
	}
	plan := reconcile(svc, ps, nil, 0)
	if counts(plan) != "create 1 update 0 delete 0" {
		t.Fatalf("plan %s, want one create", counts(plan))
	}
	s := plan.Create[0]
	if s.GenerateName != "web-" || s.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("generateName %q addressType %q", s.GenerateName, s.AddressType)
	}
	wantLabels := map[string]string{"tier": "front", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName}
	if fmt.Sprint(s.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("labels %v, want %v", s.Labels, wantLabels)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "svc-uid" || s.OwnerReferences[0].Kind != "Service" ||
		!ptr.Deref(s.OwnerReferences[0].Controller, false) || !ptr.Deref(s.OwnerReferences[0].BlockOwnerDeletion, false) {
		t.Errorf("ownerReferences %+v", s.OwnerReferences)
	}
	if s.Annotations[corev1.EndpointsLastChangeTriggerTime] != "2026-01-01T12:00:00Z" {
		t.Errorf("annotations %v", s.Annotations)
	}
	if len(s.Ports) != 1 || *s.Ports[0].Name != "http" || *s.Ports[0].Port != 8080 || *s.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v: want http 8080/TCP (the named targetPort resolved)", s.Ports)
	}
	type row struct {
		addr, node, zone, host string
		ready, serving, term   bool
	}
	var got []row
	for _, e := range s.Endpoints {
		got = append(got, row{strings.Join(e.Addresses, ","), ptr.Deref(e.NodeName, ""), ptr.Deref(e.Zone, ""), ptr.Deref(e.Hostname, ""),
			*e.Conditions.Ready, *e.Conditions.Serving, *e.Conditions.Terminating})
		if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || e.TargetRef.UID == "" {
			t.Errorf("targetRef %+v", e.TargetRef)
		}
	}
	want := []row{
		{"10.244.0.2", "node-1", "zone-a", "one", true, true, false},
		{"10.244.0.3", "node-1", "zone-a", "", false, false, false},
		{"10.244.0.4", "node-1", "zone-a", "", false, true, true},
		{"10.244.0.5", "node-2", "", "", true, true, false},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("endpoints\n got %v\nwant %v", got, want)
	}
}

func TestPublishNotReadyAddressesMakesEveryEndpointReady(t *testing.T) {
	svc := service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true })
	plan := reconcile(svc, []*corev1.Pod{pod(1, false), pod(2, true, func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) })}, nil, 0)
	for _, e := range plan.Create[0].Endpoints {
		if !*e.Conditions.Ready {
			t.Errorf("endpoint %v not ready", e.Addresses)
		}
	}
}

func TestReconcile(t *testing.T) {
	otherPort := func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 }
	tests := []struct {
		name string
		// before: the pods of a first reconcile whose result is stored.
		before []*corev1.Pod
		after  []*corev1.Pod
		maxPer int
		// wantFirst and wantPlan are counts of the first and second plans;
		// wantShape is the stored slices' sizes in the end.
		wantPlan  string
		wantShape string
	}{
		{name: "no pods: one placeholder slice", after: nil, wantPlan: "create 1 update 0 delete 0", wantShape: "0"},
		{name: "placeholder is kept, not rewritten", before: []*corev1.Pod{}, after: nil, wantPlan: "create 0 update 0 delete 0", wantShape: "0"},
		{name: "first pods take over the placeholder", before: []*corev1.Pod{}, after: pods(0, 3), wantPlan: "create 0 update 1 delete 0", wantShape: "3"},
		{name: "250 endpoints make slices of 100", after: pods(0, 250), wantPlan: "create 3 update 0 delete 0", wantShape: "50,100,100"},
		{name: "--max-endpoints-per-slice 10", after: pods(0, 25), maxPer: 10, wantPlan: "create 3 update 0 delete 0", wantShape: "5,10,10"},
		{name: "nothing changed: no writes", before: pods(0, 150), after: pods(0, 150), wantPlan: "create 0 update 0 delete 0", wantShape: "50,100"},
		{name: "a new pod fills the slice with room", before: pods(0, 150), after: pods(0, 151), wantPlan: "create 0 update 1 delete 0", wantShape: "51,100"},
		{name: "a removed pod rewrites only its slice", before: pods(0, 150), after: pods(1, 150), wantPlan: "create 0 update 1 delete 0", wantShape: "50,99"},
		{
			name: "a removed pod's slice takes the new one instead of a second write", before: pods(0, 150),
			after:    append(pods(1, 150), pod(500, true)),
			wantPlan: "create 0 update 1 delete 0", wantShape: "50,100",
		},
		{
			name: "a pod turning unready rewrites its slice", before: pods(0, 3), after: []*corev1.Pod{pod(0, true), pod(1, false), pod(2, true)},
			wantPlan: "create 0 update 1 delete 0", wantShape: "3",
		},
		{name: "all pods gone: the slice becomes the placeholder", before: pods(0, 3), after: nil, wantPlan: "create 0 update 1 delete 0", wantShape: "0"},
		{name: "emptied slices go", before: pods(0, 250), after: pods(0, 100), wantPlan: "create 0 update 0 delete 2", wantShape: "100"},
		{
			name: "pods serving a named port on different numbers get a slice each", after: []*corev1.Pod{pod(0, true), pod(1, true, otherPort)},
			wantPlan: "create 2 update 0 delete 0", wantShape: "1,1",
		},
		{
			name: "a port change moves the endpoints; the old slice is reused", before: pods(0, 2), after: []*corev1.Pod{pod(0, true, otherPort), pod(1, true, otherPort)},
			wantPlan: "create 0 update 1 delete 0", wantShape: "2",
		},
		{
			name: "a pod without an IP or finished is no endpoint", after: []*corev1.Pod{pod(0, true, func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil }),
				pod(1, false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })},
			wantPlan: "create 1 update 0 delete 0", wantShape: "0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := service()
			var stored []*discoveryv1.EndpointSlice
			if tt.before != nil {
				stored = apply(t, nil, reconcile(svc, tt.before, nil, tt.maxPer))
			}
			plan := reconcile(svc, tt.after, stored, tt.maxPer)
			if got := counts(plan); got != tt.wantPlan {
				t.Errorf("plan %s, want %s", got, tt.wantPlan)
			}
			stored = apply(t, stored, plan)
			if got := shape(stored); got != tt.wantShape {
				t.Errorf("slices %s, want %s", got, tt.wantShape)
			}
			// Every desired endpoint is in exactly one slice.
			seen := map[string]int{}
			for _, s := range stored {
				for _, e := range s.Endpoints {
					seen[e.TargetRef.Name]++
				}
			}
			for name, n := range seen {
				if n != 1 {
					t.Errorf("pod %s in %d slices", name, n)
				}
			}
			// And reconciling the result again changes nothing.
			if again := reconcile(svc, tt.after, stored, tt.maxPer); counts(again) != "create 0 update 0 delete 0" {
				t.Errorf("second reconcile: %s, want no writes", counts(again))
			}
		})
	}
}

func TestReconcileDeletesForeignAndWrongFamilySlices(t *testing.T) {
	svc := service()
	stored := apply(t, nil, reconcile(svc, pods(0, 2), nil, 0))
	previous := stored[0].DeepCopy()
	previous.Name, previous.OwnerReferences[0].UID = "web-old", "old-uid"
	v6 := stored[0].DeepCopy()
	v6.Name, v6.AddressType = "web-v6", discoveryv1.AddressTypeIPv6
	plan := reconcile(svc, pods(0, 2), append(stored, previous, v6), 0)
	var deleted []string
	for _, s := range plan.Delete {
		deleted = append(deleted, s.Name)
	}
	slices.Sort(deleted)
	if fmt.Sprint(deleted) != "[web-old web-v6]" || len(plan.Create)+len(plan.Update) != 0 {
		t.Errorf("plan %s deleting %v; want only web-old (another Service's) and web-v6 (a family the Service lacks) deleted", counts(plan), deleted)
	}
}

func TestReconcileNodeAndLabels(t *testing.T) {
	svc := service()
	stored := apply(t, nil, reconcile(svc, pods(0, 2), nil, 0))

	// A pod on an unknown Node is left out and reported, so the caller retries.
	plan := reconcile(svc, append(pods(0, 2), pod(7, true, func(p *corev1.Pod) { p.Spec.NodeName = "node-9" })), stored, 0)
	if fmt.Sprint(plan.Skipped) != "[p007]" || counts(plan) != "create 0 update 0 delete 0" {
		t.Errorf("skipped %v, plan %s; want p007 skipped and no writes", plan.Skipped, counts(plan))
	}
	// A new Service label is written to its slices.
	relabelled := service(func(s *corev1.Service) { s.Labels["v"] = "2" })
	plan = reconcile(relabelled, pods(0, 2), stored, 0)
	if counts(plan) != "create 0 update 1 delete 0" || plan.Update[0].Labels["v"] != "2" {
		t.Errorf("plan %s; want the slice updated with the new label", counts(plan))
	}
	// A headless Service's slices are marked so.
	headless := service(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone; s.UID = "other" })
	plan = reconcile(headless, pods(0, 1), nil, 0)
	if _, ok := plan.Create[0].Labels[corev1.IsHeadlessService]; !ok {
		t.Errorf("labels %v lack %s", plan.Create[0].Labels, corev1.IsHeadlessService)
	}
}
