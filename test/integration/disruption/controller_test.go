package disruption

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/disruption"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// TestControllerKeepsBudgetStatus: the disruption controller works a
// percentage out of the pods' controller's scale, follows pods becoming
// ready and going, and makes a budget it cannot work out allow nothing.
func TestControllerKeepsBudgetStatus(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	c := s.Client
	f := informers.NewSharedInformerFactory(c, 0)
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	scales := disruption.Scales{Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), Client: dyn, Discovery: disc}
	dc := disruption.New(c, f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Pods(), f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments(), scales, nil, clock.RealClock{})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { stop(); <-done })
	f.Start(runCtx.Done())
	go func() { defer close(done); dc.Run(runCtx, 1) }()

	// No ReplicaSet controller runs: the test makes the pods itself.
	rs, err := c.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "kube-lite.local/busybox:1.35"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}
	for _, name := range []string{"a", "b", "c"} {
		runningPod(ctx, t, c, name, true, owner)
	}
	createBudget(ctx, t, c, "web", policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr.To(intstr.FromString("25%")),
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	})
	// 25% of the ReplicaSet's 4 is 1: 3 must stay healthy, and 3 are.
	waitStatus(ctx, t, c, "web", policyv1.PodDisruptionBudgetStatus{ExpectedPods: 4, DesiredHealthy: 3, CurrentHealthy: 3, DisruptionsAllowed: 0}, metav1.ConditionFalse, policyv1.InsufficientPodsReason)
	runningPod(ctx, t, c, "d", true, owner)
	waitStatus(ctx, t, c, "web", policyv1.PodDisruptionBudgetStatus{ExpectedPods: 4, DesiredHealthy: 3, CurrentHealthy: 4, DisruptionsAllowed: 1}, metav1.ConditionTrue, policyv1.SufficientPodsReason)

	if err := evict(ctx, c, "a", nil); err != nil {
		t.Fatalf("eviction the controller allowed: %v", err)
	}
	// a is going: no longer healthy, and no longer an expected deletion.
	waitStatus(ctx, t, c, "web", policyv1.PodDisruptionBudgetStatus{ExpectedPods: 4, DesiredHealthy: 3, CurrentHealthy: 3, DisruptionsAllowed: 0}, metav1.ConditionFalse, policyv1.InsufficientPodsReason)
	wantRefused(t, evict(ctx, c, "b", nil), "The disruption budget web needs 3 healthy pods and has 3 currently")

	// A percentage over pods whose controller is not there cannot be
	// worked out: the budget allows nothing, and says why. Nor can one over
	// pods of a kind without a scale subresource, such as a Job's.
	for _, tc := range []struct {
		app   string
		owner metav1.OwnerReference
		cause string
	}{
		{"gone", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "gone", UID: "0000", Controller: ptr.To(true)}, `found no controllers for pod "gone"`},
		{"batch", metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "batch", UID: "0001", Controller: ptr.To(true)}, "jobs.batch does not implement the scale subresource"},
	} {
		p := runningPod(ctx, t, c, tc.app, true, &tc.owner)
		p.Labels = map[string]string{"app": tc.app}
		if _, err := c.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		createBudget(ctx, t, c, tc.app, policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromString("50%")),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": tc.app}},
		})
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			pdb, err := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, tc.app, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cond := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
			return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == policyv1.SyncFailedReason &&
				cond.Message == tc.cause && pdb.Status.DisruptionsAllowed == 0, nil
		})
		if err != nil {
			pdb, _ := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, tc.app, metav1.GetOptions{})
			t.Fatalf("budget over a pod of %s %s: status %+v, want DisruptionAllowed False SyncFailed %q", tc.owner.Kind, tc.owner.Name, pdb.Status, tc.cause)
		}
	}
}

func waitStatus(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, want policyv1.PodDisruptionBudgetStatus, condStatus metav1.ConditionStatus, reason string) {
	t.Helper()
	var last policyv1.PodDisruptionBudgetStatus
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pdb, err := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = pdb.Status
		s := pdb.Status
		cond := apimeta.FindStatusCondition(s.Conditions, policyv1.DisruptionAllowedCondition)
		return s.ObservedGeneration == pdb.Generation && s.ExpectedPods == want.ExpectedPods && s.DesiredHealthy == want.DesiredHealthy &&
			s.CurrentHealthy == want.CurrentHealthy && s.DisruptionsAllowed == want.DisruptionsAllowed && len(s.DisruptedPods) == 0 &&
			cond != nil && cond.Status == condStatus && cond.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("budget %s status %+v, want expected %d desired %d healthy %d allowed %d, no disrupted pods, DisruptionAllowed %s %s",
			name, last, want.ExpectedPods, want.DesiredHealthy, want.CurrentHealthy, want.DisruptionsAllowed, condStatus, reason)
	}
}
