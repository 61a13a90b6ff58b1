package replicaset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newRS(replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid", Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

type podOpt func(*corev1.Pod)

func ready(since time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = "n1"
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
	}
}

func running(p *corev1.Pod) { p.Spec.NodeName = "n1"; p.Status.Phase = corev1.PodRunning }

func orphan(p *corev1.Pod) { p.OwnerReferences = nil }

func cost(c string) podOpt {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": c}
	}
}

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

func newPod(name string, rs *appsv1.ReplicaSet, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Labels: map[string]string{"app": "web"},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{controllerutil.NewControllerRef(rs, "apps/v1", "ReplicaSet")},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

type fixture struct {
	client *fake.Clientset
	ctrl   *Controller
	clock  *clocktesting.FakeClock
}

// newFixture puts objs in both the fake server and the informer caches
// without starting the informers, so each sync sees exactly that state.
func newFixture(t *testing.T, objs ...any) *fixture {
	t.Helper()
	client := controllertest.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(now)
	c := New(client, f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), nil, clk)
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.ReplicaSet:
			_ = f.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
			_, _ = client.AppsV1().ReplicaSets(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		case *corev1.Pod:
			_ = f.Core().V1().Pods().Informer().GetIndexer().Add(o)
			_, _ = client.CoreV1().Pods(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		}
	}
	client.ClearActions()
	return &fixture{client: client, ctrl: c, clock: clk}
}

func (f *fixture) deletedPods() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			out = append(out, a.(interface{ GetName() string }).GetName())
		}
	}
	slices.Sort(out)
	return out
}

func (f *fixture) count(verb, resource string) int {
	n := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == "" {
			n++
		}
	}
	return n
}

func TestManageReplicas(t *testing.T) {
	rs := newRS(3)
	tests := []struct {
		name        string
		replicas    int32
		pods        []*corev1.Pod
		wantCreates int
		wantDeleted []string
	}{
		{name: "creates the missing pods", replicas: 3, wantCreates: 3},
		{name: "steady state writes no pods", replicas: 2,
			pods: []*corev1.Pod{newPod("a", rs, ready(now)), newPod("b", rs, ready(now))}},
		{name: "finished pods do not count", replicas: 1,
			pods: []*corev1.Pod{newPod("a", rs, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })}, wantCreates: 1},
		{name: "terminating pods do not count", replicas: 1,
			pods: []*corev1.Pod{newPod("a", rs, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} })}, wantCreates: 1},
		{name: "scale down prefers not ready", replicas: 1,
			pods: []*corev1.Pod{newPod("a", rs, ready(now.Add(-time.Minute))), newPod("b", rs, running), newPod("c", rs)}, wantDeleted: []string{"b", "c"}},
		{name: "scale down prefers the most recently ready", replicas: 2,
			pods: []*corev1.Pod{newPod("old", rs, ready(now.Add(-time.Hour))), newPod("new", rs, ready(now.Add(-time.Minute))), newPod("mid", rs, ready(now.Add(-30*time.Minute)))}, wantDeleted: []string{"new"}},
		{name: "scale down honours pod-deletion-cost before readiness time", replicas: 1,
			pods: []*corev1.Pod{newPod("cheap", rs, ready(now.Add(-time.Hour)), cost("-10")), newPod("dear", rs, ready(now.Add(-time.Minute)), cost("100"))}, wantDeleted: []string{"cheap"}},
		{name: "someone else's pods are left alone", replicas: 1,
			pods: []*corev1.Pod{newPod("x", newRS(1), func(p *corev1.Pod) { p.OwnerReferences[0].UID = "other" })}, wantCreates: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRS(tt.replicas)
			objs := []any{rs}
			for _, p := range tt.pods {
				objs = append(objs, p)
			}
			f := newFixture(t, objs...)
			if err := f.ctrl.sync(context.Background(), "default/web"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := f.count("create", "pods"); got != tt.wantCreates {
				t.Errorf("created %d pods, want %d", got, tt.wantCreates)
			}
			if got := f.deletedPods(); !slices.Equal(got, tt.wantDeleted) {
				t.Errorf("deleted %v, want %v", got, tt.wantDeleted)
			}
		})
	}
}

func TestExpectationsPreventDoubleCreate(t *testing.T) {
	f := newFixture(t, newRS(3))
	ctx := context.Background()
	for i := range 3 {
		if err := f.ctrl.sync(ctx, "default/web"); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
	}
	if got := f.count("create", "pods"); got != 3 {
		t.Fatalf("created %d pods over three syncs with a stale cache, want 3", got)
	}
	// Once the expectations time out the controller trusts its cache again.
	f.clock.Step(controllerutil.ExpectationsTTL + time.Second)
	if err := f.ctrl.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.count("create", "pods"); got != 6 {
		t.Fatalf("created %d pods after expectations expired, want 6", got)
	}
}

func TestAdoptsOrphansAndReleasesMismatches(t *testing.T) {
	rs := newRS(2)
	mismatch := newPod("stray", rs, ready(now))
	mismatch.Labels = map[string]string{"app": "other"}
	f := newFixture(t, rs, newPod("orphan", rs, orphan, ready(now)), mismatch, newPod("mine", rs, ready(now)))
	if err := f.ctrl.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o, _ := f.client.CoreV1().Pods("default").Get(ctx, "orphan", metav1.GetOptions{})
	if ref := metav1.GetControllerOf(o); ref == nil || ref.UID != rs.UID {
		t.Errorf("orphan owner = %v, want the replicaset", ref)
	}
	s, _ := f.client.CoreV1().Pods("default").Get(ctx, "stray", metav1.GetOptions{})
	if ref := metav1.GetControllerOf(s); ref != nil {
		t.Errorf("stray pod still owned by %v", ref)
	}
	if got := f.count("create", "pods"); got != 0 {
		t.Errorf("created %d pods; adoption should have filled the replicas", got)
	}
}

func TestStatus(t *testing.T) {
	rs := newRS(3)
	rs.Spec.MinReadySeconds = 10
	f := newFixture(t, rs,
		newPod("a", rs, ready(now.Add(-time.Minute))),
		newPod("b", rs, ready(now.Add(-5*time.Second))),
		newPod("c", rs, running))
	if err := f.ctrl.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	got, _ := f.client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	st := got.Status
	// terminatingReplicas is served in 1.36 and says 0 rather than nothing.
	want := "replicas=3 ready=2 available=1 labeled=3 gen=1 terminating=0"
	if s := fmt.Sprintf("replicas=%d ready=%d available=%d labeled=%d gen=%d terminating=%s", st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.FullyLabeledReplicas, st.ObservedGeneration, ptrString(st.TerminatingReplicas)); s != want {
		t.Errorf("status %s, want %s", s, want)
	}
}

func ptrString(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// As upstream, scale-down takes first the pods on the node most crowded
// with pods of the same owner, the sibling ReplicaSets' included (a
// Deployment's old and new ReplicaSets), before the most recently ready.
func TestScaleDownThinsCrowdedNodes(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-uid", Controller: ptr.To(true)}
	rs := newRS(1)
	rs.OwnerReferences = []metav1.OwnerReference{owner}
	old := newRS(1)
	old.Name, old.UID, old.OwnerReferences = "web-old", "old-uid", []metav1.OwnerReference{owner}
	old.Spec.Selector.MatchLabels = map[string]string{"app": "old"}
	sibling := newPod("sibling", old, ready(now.Add(-time.Hour)), onNode("n1"))
	sibling.Labels = map[string]string{"app": "old"}
	f := newFixture(t, rs, old, sibling,
		newPod("crowded", rs, ready(now.Add(-time.Hour)), onNode("n1")),
		newPod("alone", rs, ready(now.Add(-time.Minute)), onNode("n2")))
	if err := f.ctrl.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.deletedPods(); !slices.Equal(got, []string{"crowded"}) {
		t.Errorf("deleted %v, want [crowded]", got)
	}
}

// A refused create shows, as upstream, the apiserver's own message in
// ReplicaFailure and a FailedCreate event, except while the namespace is
// being deleted, when every create is refused and no event is recorded.
func TestCreateRefused(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-", errors.New("exceeded quota: q"))
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-", errors.New("namespace default is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for _, tt := range []struct {
		name      string
		err       *apierrors.StatusError
		wantEvent bool
	}{{"quota", forbidden, true}, {"namespace terminating", terminating, false}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, newRS(1))
			rec := record.NewFakeRecorder(10)
			f.ctrl.Events = rec
			f.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tt.err })
			_ = f.ctrl.sync(context.Background(), "default/web")
			rs, _ := f.client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
			var got string
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure {
					got = c.Reason + ": " + c.Message
				}
			}
			if want := "FailedCreate: " + tt.err.Error(); got != want {
				t.Errorf("ReplicaFailure %q, want %q", got, want)
			}
			if n := len(rec.Events); (n > 0) != tt.wantEvent {
				t.Errorf("%d events, want an event: %t", n, tt.wantEvent)
			}
		})
	}
}
