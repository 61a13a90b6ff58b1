package podgc

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-lite/kube-lite/pkg/controller/controllertest"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func pod(name, node string, phase corev1.PodPhase, age time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func setup(t *testing.T, threshold int, nodes []string, pods ...*corev1.Pod) (*Controller, *fake.Clientset, *clocktesting.FakeClock) {
	t.Helper()
	client := controllertest.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	ctx := context.Background()
	for _, n := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
		_, _ = client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		_ = f.Core().V1().Nodes().Informer().GetIndexer().Add(node)
	}
	for _, p := range pods {
		_, _ = client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		_ = f.Core().V1().Pods().Informer().GetIndexer().Add(p)
	}
	clk := clocktesting.NewFakeClock(now)
	c := New(client, f.Core().V1().Pods(), f.Core().V1().Nodes(), Config{TerminatedThreshold: threshold, Quarantine: 40 * time.Second, Period: time.Second}, clk)
	client.ClearActions()
	return c, client, clk
}

func deleted(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && d.GetResource().Resource == "pods" {
			out = append(out, d.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func TestTerminatedThresholdDeletesOldestFinished(t *testing.T) {
	c, client, _ := setup(t, 2, []string{"n1"},
		pod("old", "n1", corev1.PodSucceeded, 3*time.Hour), pod("mid", "n1", corev1.PodFailed, 2*time.Hour),
		pod("new", "n1", corev1.PodSucceeded, time.Hour), pod("running", "n1", corev1.PodRunning, 4*time.Hour))
	if err := c.gc(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := deleted(client); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("deleted %v, want [old]", got)
	}
}

func TestOrphanedPodsAfterQuarantine(t *testing.T) {
	c, client, clk := setup(t, 0, []string{"alive"},
		pod("on-alive", "alive", corev1.PodRunning, time.Hour), pod("on-gone", "gone", corev1.PodRunning, time.Hour))
	ctx := context.Background()
	if err := c.gc(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Step(30 * time.Second)
	if err := c.gc(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deleted(client); len(got) != 0 {
		t.Fatalf("deleted %v inside the quarantine", got)
	}
	clk.Step(20 * time.Second)
	if err := c.gc(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deleted(client); !slices.Equal(got, []string{"on-gone"}) {
		t.Fatalf("deleted %v, want [on-gone]", got)
	}
}

func TestUnscheduledTerminatingPodIsRemoved(t *testing.T) {
	p := pod("stuck", "", corev1.PodPending, time.Minute)
	p.DeletionTimestamp = &metav1.Time{Time: now}
	c, client, _ := setup(t, 0, nil, p, pod("pending", "", corev1.PodPending, time.Minute))
	if err := c.gc(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := deleted(client); !slices.Equal(got, []string{"stuck"}) {
		t.Fatalf("deleted %v, want [stuck]", got)
	}
}

// lastSeen records each pod as it was when deleted: what a watcher sees in
// the DELETED event.
func lastSeen(client *fake.Clientset) map[string]*corev1.Pod {
	seen := map[string]*corev1.Pod{}
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		if obj, err := client.Tracker().Get(d.GetResource(), d.GetNamespace(), d.GetName()); err == nil {
			seen[d.GetName()] = obj.(*corev1.Pod)
		}
		return false, nil, nil
	})
	return seen
}

// As upstream, a pod of a deleted node ends Failed with DisruptionTarget
// DeletionByPodGC (a Job's podFailurePolicy can ignore it), and an
// unscheduled terminating pod ends Failed; both kept their phase, Running
// or Pending, for ever.
func TestCollectedPodsEndFailed(t *testing.T) {
	stuck := pod("stuck", "", corev1.PodPending, time.Minute)
	stuck.DeletionTimestamp = &metav1.Time{Time: now}
	c, client, clk := setup(t, 0, nil, pod("on-gone", "gone", corev1.PodRunning, time.Hour), stuck)
	seen := lastSeen(client)
	ctx := context.Background()
	if err := c.gc(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	if err := c.gc(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"on-gone", "stuck"} {
		if p := seen[name]; p == nil || p.Status.Phase != corev1.PodFailed {
			t.Fatalf("%s deleted as %+v, want phase Failed", name, p)
		}
	}
	var got string
	for _, cond := range seen["on-gone"].Status.Conditions {
		if cond.Type == corev1.DisruptionTarget {
			got = string(cond.Status) + " " + cond.Reason + ": " + cond.Message
		}
	}
	if want := "True DeletionByPodGC: PodGC: node no longer exists"; got != want {
		t.Errorf("DisruptionTarget %q, want %q", got, want)
	}
}
