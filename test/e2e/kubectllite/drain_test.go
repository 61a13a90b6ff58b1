//go:build e2e

package kubectllite

import (
	"context"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// node registers a node no kubelet runs; tests place pods on it by
// binding them themselves.
func node(t *testing.T, name string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"drain-test": name}}}
	if _, err := env.cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// nodeName is a node name unique to this run of the test.
func nodeName(t *testing.T) string {
	return "n-" + strings.ToLower(t.Name()) + "-" + strconv.FormatInt(time.Now().UnixNano()%100000, 10)
}

type podSpec struct {
	name       string
	labels     map[string]string
	controlled bool
	phase      corev1.PodPhase
	mirror     bool
}

// boundPod creates a pod on the node and writes the status a kubelet
// would have.
func boundPod(t *testing.T, ns, nodeName string, s podSpec) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: s.labels},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if s.controlled {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "6c1f4f7e-0000-4000-8000-000000000001", Controller: &yes}}
	}
	if s.mirror {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "static"}
	}
	p, err := env.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", s.name, err)
	}
	p.Status.Phase = s.phase
	if s.phase == corev1.PodRunning {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if p, err = env.cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the status of pod %s: %v", s.name, err)
	}
	return p
}

func TestCordonUncordon(t *testing.T) {
	n := nodeName(t)
	node(t, n)
	unschedulable := func() bool {
		got, err := env.cs.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Spec.Unschedulable
	}
	steps := []struct {
		args []string
		out  string
		want bool
	}{
		{[]string{"cordon", n, "--dry-run=client"}, "node/" + n + " cordoned (dry run)\n", false},
		{[]string{"cordon", n, "--dry-run=server"}, "node/" + n + " cordoned (server dry run)\n", false},
		{[]string{"cordon", n}, "node/" + n + " cordoned\n", true},
		{[]string{"cordon", "-l", "drain-test=" + n}, "node/" + n + " already cordoned\n", true},
		{[]string{"uncordon", n}, "node/" + n + " uncordoned\n", false},
		{[]string{"uncordon", n}, "node/" + n + " already uncordoned\n", false},
	}
	for _, s := range steps {
		r := mustSucceed(t, s.args...)
		if r.out != s.out {
			t.Fatalf("kubectl-lite %v: stdout %q, want %q", s.args, r.out, s.out)
		}
		if got := unschedulable(); got != s.want {
			t.Fatalf("after kubectl-lite %v: unschedulable %v, want %v", s.args, got, s.want)
		}
	}
	r := kubectl(t, "cordon", n+"-missing")
	if r.code == 0 || !strings.Contains(r.err, `nodes "`+n+`-missing" not found`) {
		t.Fatalf("cordon of a missing node: %s", r)
	}
}

// TestDrainRemovesPods drains a node: the finished pod goes at once, the
// running one when its deletion completes (the test plays the kubelet),
// the mirror pod stays.
func TestDrainRemovesPods(t *testing.T) {
	ns := namespace(t)
	n := nodeName(t)
	node(t, n)
	web := boundPod(t, ns, n, podSpec{name: "web", controlled: true, phase: corev1.PodRunning})
	boundPod(t, ns, n, podSpec{name: "done", phase: corev1.PodSucceeded})
	boundPod(t, ns, n, podSpec{name: "static", phase: corev1.PodRunning, mirror: true})

	// Without --force nothing is evicted: "done" has no controller but has
	// finished, so the bare running pod is what is refused.
	boundPod(t, ns, n, podSpec{name: "bare", phase: corev1.PodRunning})
	r := kubectl(t, "drain", n, "--timeout=30s")
	if r.code == 0 || !strings.Contains(r.err, "cannot delete Pods that declare no controller (use --force to override): "+ns+"/bare") {
		t.Fatalf("drain with an unmanaged pod: %s", r)
	}
	if r.out != "node/"+n+" cordoned\n" {
		t.Fatalf("drain with an unmanaged pod printed %q", r.out)
	}
	if err := env.cs.CoreV1().Pods(ns).Delete(context.Background(), "bare", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}

	// The kubelet would finish the graceful deletion the eviction starts.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			p, err := env.cs.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
			if err == nil && p.UID == web.UID && p.DeletionTimestamp != nil {
				_ = env.cs.CoreV1().Pods(ns).Delete(ctx, "web", *metav1.NewDeleteOptions(0))
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	r = mustSucceed(t, "drain", n, "--timeout=60s")
	got := lines(r.out)
	if got[0] != "node/"+n+" already cordoned" || got[len(got)-1] != "node/"+n+" drained" {
		t.Fatalf("drain printed %q", r.out)
	}
	middle := append([]string(nil), got[1:len(got)-1]...)
	sort.Strings(middle)
	want := []string{"evicting pod " + ns + "/done", "evicting pod " + ns + "/web", "pod/done evicted", "pod/web evicted"}
	if !reflect.DeepEqual(middle, want) {
		t.Fatalf("drain printed %q, want the lines %q", r.out, want)
	}
	left, err := env.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 1 || left.Items[0].Name != "static" {
		t.Fatalf("left %v, want only the mirror pod", left.Items)
	}
}

// TestDrainRefusedByDisruptionBudget: the budget allows no disruption, so
// the eviction is retried until --timeout and the pod stays.
func TestDrainRefusedByDisruptionBudget(t *testing.T) {
	ns := namespace(t)
	n := nodeName(t)
	node(t, n)
	ctx := context.Background()
	boundPod(t, ns, n, podSpec{name: "web", labels: map[string]string{"app": "web"}, controlled: true, phase: corev1.PodRunning})
	one := intstr.FromInt32(1)
	pdb, err := env.cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What the disruption controller would write.
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := env.cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	r := kubectl(t, "drain", n, "--timeout=3s")
	if r.code == 0 {
		t.Fatalf("drain succeeded: %s", r)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("drain --timeout=3s took %v", d)
	}
	if got := lines(r.out); len(got) < 2 || got[0] != "node/"+n+" cordoned" || got[1] != "evicting pod "+ns+"/web" || strings.Contains(r.out, "drained") {
		t.Fatalf("stdout %q", r.out)
	}
	for _, want := range []string{
		`error when evicting pods/"web" -n "` + ns + `" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`,
		`error: unable to drain node "` + n + `" due to error: error when evicting pods/"web" -n "` + ns + `": global timeout reached: 3s, continuing command...`,
		"There are pending nodes to be drained:\n " + n + "\n",
	} {
		if !strings.Contains(r.err, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.err)
		}
	}
	p, err := env.cs.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("the budget's pod was removed: %v %v", err, apierrors.IsNotFound(err))
	}
}
