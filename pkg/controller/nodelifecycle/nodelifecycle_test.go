package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

var start = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t       *testing.T
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	ctrl    *Controller
	clock   *clocktesting.FakeClock
}

func newFixture(t *testing.T) *fixture {
	client := controllertest.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(start)
	c := New(client, f.Core().V1().Nodes(), f.Coordination().V1().Leases(), f.Core().V1().Pods(),
		Config{GracePeriod: 50 * time.Second, MonitorPeriod: 5 * time.Second}, nil, clk)
	return &fixture{t: t, client: client, factory: f, ctrl: c, clock: clk}
}

func (f *fixture) node(name string, ready corev1.ConditionStatus) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.NewTime(start)}}}}
	f.put(n)
}

// put writes obj to the fake server and, like a caught-up informer, the cache.
func (f *fixture) put(obj any) {
	ctx := context.Background()
	switch o := obj.(type) {
	case *corev1.Node:
		if _, err := f.client.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{}); err != nil {
			_, _ = f.client.CoreV1().Nodes().Update(ctx, o, metav1.UpdateOptions{})
		}
		_ = f.factory.Core().V1().Nodes().Informer().GetIndexer().Update(o)
	case *coordinationv1.Lease:
		if _, err := f.client.CoordinationV1().Leases(o.Namespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			_, _ = f.client.CoordinationV1().Leases(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		}
		_ = f.factory.Coordination().V1().Leases().Informer().GetIndexer().Update(o)
	case *corev1.Pod:
		_, _ = f.client.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		_ = f.factory.Core().V1().Pods().Informer().GetIndexer().Update(o)
	}
}

func (f *fixture) renew(name, rv string) {
	f.put(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease, ResourceVersion: rv}})
}

// refresh copies nodes from the fake server into the cache.
func (f *fixture) refresh() {
	list, _ := f.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	for i := range list.Items {
		_ = f.factory.Core().V1().Nodes().Informer().GetIndexer().Update(&list.Items[i])
	}
}

func (f *fixture) monitor() {
	f.t.Helper()
	if err := f.ctrl.monitor(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

func (f *fixture) state(name string) (corev1.ConditionStatus, []string) {
	n, err := f.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var ready corev1.ConditionStatus
	if rc := readyCondition(n); rc != nil {
		ready = rc.Status
	}
	keys := taintKeys(n.Spec.Taints)
	slices.Sort(keys)
	return ready, keys
}

func TestLostLeaseMarksUnknownAndTaints(t *testing.T) {
	f := newFixture(t)
	f.node("a", corev1.ConditionTrue)
	f.node("b", corev1.ConditionTrue)
	f.renew("a", "1")
	f.renew("b", "1")
	f.monitor()

	// b keeps renewing, a goes silent.
	for i := 2; i <= 12; i++ {
		f.clock.Step(5 * time.Second)
		f.renew("b", string(rune('0'+i)))
		f.monitor()
	}
	if ready, taints := f.state("a"); ready != corev1.ConditionUnknown || !slices.Equal(taints, []string{"node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"}) {
		t.Errorf("silent node: Ready=%s taints=%v", ready, taints)
	}
	if ready, taints := f.state("b"); ready != corev1.ConditionTrue || len(taints) != 0 {
		t.Errorf("renewing node: Ready=%s taints=%v", ready, taints)
	}
}

func TestWithinGraceNothingHappens(t *testing.T) {
	f := newFixture(t)
	f.node("a", corev1.ConditionTrue)
	f.renew("a", "1")
	f.monitor()
	f.clock.Step(49 * time.Second)
	f.monitor()
	if ready, taints := f.state("a"); ready != corev1.ConditionTrue || len(taints) != 0 {
		t.Errorf("Ready=%s taints=%v before the grace period ran out", ready, taints)
	}
}

func TestNotReadyTaintFollowsKubeletReport(t *testing.T) {
	f := newFixture(t)
	f.node("a", corev1.ConditionFalse)
	f.renew("a", "1")
	f.monitor()
	if ready, taints := f.state("a"); ready != corev1.ConditionFalse || !slices.Equal(taints, []string{"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"}) {
		t.Fatalf("NotReady node: Ready=%s taints=%v", ready, taints)
	}
	// The kubelet recovers: the taints go.
	n, _ := f.client.CoreV1().Nodes().Get(context.Background(), "a", metav1.GetOptions{})
	n.Status.Conditions[0].Status = corev1.ConditionTrue
	f.put(n)
	f.monitor()
	if _, taints := f.state("a"); len(taints) != 0 {
		t.Fatalf("recovered node still tainted: %v", taints)
	}
}

// As upstream (TaintNodesByCondition), a cordoned Node and a Node under
// memory, disk or PID pressure or without network carry the matching
// NoSchedule taint while it lasts.
func TestConditionAndCordonTaints(t *testing.T) {
	f := newFixture(t)
	f.node("a", corev1.ConditionTrue)
	f.renew("a", "1")
	n, _ := f.client.CoreV1().Nodes().Get(context.Background(), "a", metav1.GetOptions{})
	n.Spec.Unschedulable = true
	n.Status.Conditions = append(n.Status.Conditions,
		corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue},
		corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
		corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue})
	f.put(n)
	f.monitor()
	want := []string{"node.kubernetes.io/memory-pressure:NoSchedule", "node.kubernetes.io/network-unavailable:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule"}
	if _, taints := f.state("a"); !slices.Equal(taints, want) {
		t.Fatalf("taints %v, want %v", taints, want)
	}
	// Uncordoned, the pressure gone: the taints go, a user's stays.
	n, _ = f.client.CoreV1().Nodes().Get(context.Background(), "a", metav1.GetOptions{})
	n.Spec.Unschedulable = false
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/gpu", Effect: corev1.TaintEffectNoSchedule})
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type != corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	f.put(n)
	f.monitor()
	if _, taints := f.state("a"); !slices.Equal(taints, []string{"example.com/gpu:NoSchedule"}) {
		t.Fatalf("taints %v, want only the user's", taints)
	}
}

func TestEviction(t *testing.T) {
	added := metav1.NewTime(start)
	tainted := []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}
	tol := func(secs *int64) []corev1.Toleration {
		return []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}}
	}
	tests := []struct {
		name        string
		tolerations []corev1.Toleration
		after       time.Duration
		wantEvicted bool
	}{
		{name: "no toleration: at once", wantEvicted: true},
		{name: "tolerates for 300s: stays at 299s", tolerations: tol(ptr.To[int64](300)), after: 299 * time.Second},
		{name: "tolerates for 300s: leaves at 301s", tolerations: tol(ptr.To[int64](300)), after: 301 * time.Second, wantEvicted: true},
		{name: "tolerates for ever", tolerations: tol(nil), after: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.put(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NodeSpec{Taints: tainted}})
			f.put(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p-uid"},
				Spec: corev1.PodSpec{NodeName: "a", Tolerations: tt.tolerations}})
			f.clock.Step(tt.after)
			if err := f.ctrl.syncPod(context.Background(), "default/p"); err != nil {
				t.Fatal(err)
			}
			evicted := slices.Contains(controllertest.Writes(f.client), "delete pods")
			if evicted != tt.wantEvicted {
				t.Fatalf("evicted=%v, want %v", evicted, tt.wantEvicted)
			}
		})
	}
}

// TestPodsOnNotReadyNodeAreNotReady: a Node that stops being Ready takes
// its pods' Ready with it, as upstream, so they stop counting as available.
func TestPodsOnNotReadyNodeAreNotReady(t *testing.T) {
	f := newFixture(t)
	f.node("a", corev1.ConditionTrue)
	f.renew("a", "1")
	readyPod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + types.UID(name)},
			Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}}}
	}
	f.node("b", corev1.ConditionTrue)
	f.renew("b", "1")
	f.put(readyPod("on-a", "a"))
	f.put(readyPod("on-b", "b"))
	f.monitor()
	// a goes silent past the grace period; b keeps renewing.
	for i := 2; i <= 12; i++ {
		f.clock.Step(5 * time.Second)
		f.renew("b", fmt.Sprint(i))
		f.monitor()
	}
	ready := func(name string) corev1.ConditionStatus {
		p, err := f.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status
			}
		}
		return ""
	}
	if got := ready("on-a"); got != corev1.ConditionFalse {
		t.Errorf("pod on the lost node: Ready=%s, want False", got)
	}
	if got := ready("on-b"); got != corev1.ConditionTrue {
		t.Errorf("pod on the healthy node: Ready=%s, want True", got)
	}
}

// TestEvictionMarksDisruptionTarget: the evicted pod says why before it
// goes, with upstream's reason and message.
func TestEvictionMarksDisruptionTarget(t *testing.T) {
	f := newFixture(t)
	added := metav1.NewTime(start)
	f.put(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}}})
	f.put(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p-uid"}, Spec: corev1.PodSpec{NodeName: "a"}})
	var seen *corev1.PodCondition
	f.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		// The tracker, not the clientset: reactors run under its lock.
		o, err := f.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "default", "p")
		if p, ok := o.(*corev1.Pod); err == nil && ok {
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
					seen = &p.Status.Conditions[i]
				}
			}
		}
		return false, nil, nil
	})
	if err := f.ctrl.syncPod(context.Background(), "default/p"); err != nil {
		t.Fatal(err)
	}
	if seen == nil || seen.Status != corev1.ConditionTrue || seen.Reason != "DeletionByTaintManager" || seen.Message != "Taint manager: deleting due to NoExecute taint" {
		t.Errorf("DisruptionTarget at deletion: %+v", seen)
	}
}

// As upstream, the controller records RegisteredNode when it first sees a
// Node and RemovingNode when the Node is gone: `kubectl describe node` and
// `kubectl get events` show them.
func TestRegisteredAndRemovingNodeEvents(t *testing.T) {
	f := newFixture(t)
	rec := record.NewFakeRecorder(10)
	f.ctrl.Events = rec
	f.node("a", corev1.ConditionTrue)
	f.renew("a", "1")
	f.monitor()
	f.monitor()
	drain := func() []string {
		var out []string
		for len(rec.Events) > 0 {
			out = append(out, <-rec.Events)
		}
		return out
	}
	if got, want := drain(), []string{"Normal RegisteredNode Node a event: Registered Node a in Controller"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if err := f.client.CoreV1().Nodes().Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = f.factory.Core().V1().Nodes().Informer().GetIndexer().Delete(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	f.monitor()
	if got, want := drain(), []string{"Normal RemovingNode Node a event: Removing Node a from Controller"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// A pod whose eviction waits on its tolerationSeconds, on a node that
// recovers first, gets upstream's "Cancelling deletion" event and stays.
func TestEvictionCancelledWhenTaintGoes(t *testing.T) {
	f := newFixture(t)
	rec := record.NewFakeRecorder(10)
	f.ctrl.EvictionEvents = rec
	added := metav1.NewTime(start)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}}}
	f.put(node)
	f.put(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p-uid"},
		Spec: corev1.PodSpec{NodeName: "a", Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}}}})
	ctx := context.Background()
	if err := f.ctrl.syncPod(ctx, "default/p"); err != nil {
		t.Fatal(err)
	}
	node = node.DeepCopy()
	node.Spec.Taints = nil
	f.put(node)
	f.clock.Step(time.Minute)
	for range 2 { // the second sync has nothing more to say
		if err := f.ctrl.syncPod(ctx, "default/p"); err != nil {
			t.Fatal(err)
		}
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	if want := []string{"Normal TaintManagerEviction Cancelling deletion of Pod default/p"}; !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if slices.Contains(controllertest.Writes(f.client), "delete pods") {
		t.Error("pod evicted")
	}
}
