package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type recorder struct{ events []string }

func (r *recorder) Eventf(_ runtime.Object, eventType, reason, format string, args ...any) {
	r.events = append(r.events, eventType+" "+reason+" "+fmt.Sprintf(format, args...))
}

func readyPod(name string, conds ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: append([]corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}, conds...)},
	}
}

// newController builds a controller over objs, with them in its caches.
func newController(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset, *recorder) {
	t.Helper()
	client := controllertest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Pods(), f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments(),
		nil, clocktesting.NewFakeClock(now))
	rec := &recorder{}
	c.Events = rec
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Pod:
			err = f.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *policyv1.PodDisruptionBudget:
			err = f.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return c, client, rec
}

// TestEvictedPodThatStaysIsCountedAgain: a pod an eviction was allowed for
// stays out of the healthy count for DeletionTimeout; if it has not started
// going by then it counts again, with a NotDeleted event, as upstream's.
func TestEvictedPodThatStaysIsCountedAgain(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptedPods: map[string]metav1.Time{
			"old":    metav1.NewTime(now.Add(-DeletionTimeout - time.Second)),
			"recent": metav1.NewTime(now.Add(-time.Minute)),
		}},
	}
	c, client, rec := newController(t, pdb, readyPod("old"), readyPod("recent"), readyPod("other"))
	if err := c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	got, err := client.PolicyV1().PodDisruptionBudgets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := got.Status
	if _, ok := s.DisruptedPods["recent"]; !ok || len(s.DisruptedPods) != 1 || s.CurrentHealthy != 2 || s.DesiredHealthy != 1 || s.ExpectedPods != 3 || s.DisruptionsAllowed != 1 {
		t.Errorf("status %+v, want only recent still disrupted, 2 healthy of 3, 1 desired, 1 allowed", s)
	}
	want := "Warning NotDeleted Pod was expected by PDB default/web to be deleted but it wasn't"
	if len(rec.events) != 1 || rec.events[0] != want {
		t.Errorf("events %q, want [%q]", rec.events, want)
	}
	if n := c.queue.Len(); n != 0 {
		t.Errorf("queue holds %d keys at once, want the recheck only after recent's timeout", n)
	}
}

// TestStaleDisruptionTargetIsCleared: an eviction's DisruptionTarget on a
// pod that was never deleted goes back to False after
// StaleDisruptionTimeout; the kubelet's own condition stays.
func TestStaleDisruptionTargetIsCleared(t *testing.T) {
	cond := func(reason string, ago time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	stale := readyPod("stale", cond("EvictionByEvictionAPI", StaleDisruptionTimeout+time.Second))
	fresh := readyPod("fresh", cond("EvictionByEvictionAPI", time.Minute))
	kubelet := readyPod("kubelet", cond(corev1.PodReasonTerminationByKubelet, time.Hour))
	c, client, _ := newController(t, stale, fresh, kubelet)
	for _, name := range []string{"stale", "fresh", "kubelet"} {
		if err := c.syncStale(context.Background(), "default/"+name); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]corev1.ConditionStatus{"stale": corev1.ConditionFalse, "fresh": corev1.ConditionTrue, "kubelet": corev1.ConditionTrue} {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status != want {
				t.Errorf("pod %s: DisruptionTarget %s, want %s", name, c.Status, want)
			}
		}
	}
}
