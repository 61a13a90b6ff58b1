package disruption

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// TestEvictionSpendsTheBudget: with the budget's status set by hand (no
// controller), evictions spend it as upstream's do and are refused with
// 429 once it is spent, while pods that disrupt nothing go regardless.
func TestEvictionSpendsTheBudget(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	c := s.Client
	for _, name := range []string{"a", "b", "c"} {
		runningPod(ctx, t, c, name, true, nil)
	}
	pdb := createBudget(ctx, t, c, "web", policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr.To(intstr.FromInt32(2)),
		Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	})

	// As upstream: a budget its controller has not seen yet asks the
	// client to come back in 10 s, in the header and in the details.
	retry, st := evictRaw(ctx, t, s.Config, "a")
	wantRefused(t, &apierrors.StatusError{ErrStatus: st}, "The disruption budget web is still being processed by the server.")
	if retry != "10" || st.Details.RetryAfterSeconds != 10 {
		t.Errorf("429 of a budget still being processed: Retry-After %q, retryAfterSeconds %d, want 10 and 10", retry, st.Details.RetryAfterSeconds)
	}

	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3, DisruptionsAllowed: 1}
	if _, err := c.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := evict(ctx, c, "a", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run eviction within the budget: %v", err)
	}
	if err := evict(ctx, c, "a", nil); err != nil {
		t.Fatalf("eviction within the budget: %v", err)
	}
	if !going(ctx, t, c, "a") {
		t.Error("evicted pod a has no deletionTimestamp")
	}
	got, err := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := apimeta.FindStatusCondition(got.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if _, ok := got.Status.DisruptedPods["a"]; got.Status.DisruptionsAllowed != 0 || !ok || len(got.Status.DisruptedPods) != 1 ||
		cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != policyv1.InsufficientPodsReason {
		t.Errorf("budget after one eviction (the dry run spent nothing): allowed %d, disruptedPods %v, condition %+v; want 0, only a, DisruptionAllowed False InsufficientPods",
			got.Status.DisruptionsAllowed, got.Status.DisruptedPods, cond)
	}

	wantRefused(t, evict(ctx, c, "b", nil), "The disruption budget web needs 2 healthy pods and has 3 currently")
	// A spent budget suggests no time to come back: no Retry-After.
	if retry, st := evictRaw(ctx, t, s.Config, "b"); st.Code != http.StatusTooManyRequests || retry != "" || st.Details == nil || st.Details.RetryAfterSeconds != 0 {
		t.Errorf("429 of a spent budget: %d, Retry-After %q, details %+v, want 429 with neither", st.Code, retry, st.Details)
	}
	if going(ctx, t, c, "b") {
		t.Error("pod b is being deleted although its eviction was refused")
	}

	// An unready pod does not count as healthy: the budget lets it go
	// without spending anything while it holds its healthy pods.
	runningPod(ctx, t, c, "unready", false, nil)
	if err := evict(ctx, c, "unready", nil); err != nil {
		t.Errorf("evicting an unready pod while the budget holds: %v", err)
	}
	pending, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "kube-lite.local/busybox:1.35"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := evict(ctx, c, pending.Name, nil); err != nil {
		t.Errorf("evicting a pending pod: %v", err)
	}

	// Two budgets over one pod: upstream refuses to choose.
	createBudget(ctx, t, c, "everything", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("50%")), Selector: &metav1.LabelSelector{}})
	err = evict(ctx, c, "b", nil)
	if se := (*apierrors.StatusError)(nil); !errors.As(err, &se) || se.ErrStatus.Code != http.StatusInternalServerError ||
		se.ErrStatus.Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Errorf("eviction of a pod two budgets cover: %v, want upstream's 500", err)
	}
}

// TestBudgetValidation: the spec rules users meet on create, as upstream's.
func TestBudgetValidation(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	for _, tc := range []struct {
		name string
		spec policyv1.PodDisruptionBudgetSpec
		want string
	}{
		{"both", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: sel},
			"minAvailable and maxUnavailable cannot be both set"},
		{"over", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("120%")), Selector: sel},
			`spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%`},
		{"negative", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(-1)), Selector: sel},
			"spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"},
		{"policy", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: sel,
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.UnhealthyPodEvictionPolicyType("Sometimes"))},
			`spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"`},
	} {
		_, err := s.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: tc.spec}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want 422 with %q", tc.name, err, tc.want)
		}
	}
}
