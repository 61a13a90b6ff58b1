package admission_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func TestPriorityClasses(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	pcs := s.Client.SchedulingV1().PriorityClasses()

	// The built-in classes exist from the start.
	for name, value := range map[string]int32{"system-cluster-critical": 2000000000, "system-node-critical": 2000001000} {
		pc, err := pcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		if pc.Value != value || pc.GlobalDefault || pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
			t.Errorf("%s = value %d, globalDefault %v, policy %v", name, pc.Value, pc.GlobalDefault, pc.PreemptionPolicy)
		}
	}

	err := pcs.Delete(ctx, "system-node-critical", metav1.DeleteOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted`)

	high, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if high.PreemptionPolicy == nil || *high.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("preemptionPolicy = %v, want the default PreemptLowerPriority", high.PreemptionPolicy)
	}

	_, err = pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "too-high"}, Value: 1000000001}, metav1.CreateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, "value: Forbidden: maximum allowed value of a user defined priority is 1000000000")
	_, err = pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 10}, metav1.CreateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid,
		"metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class")

	high.Value = 2000
	_, err = pcs.Update(ctx, high, metav1.UpdateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, "value: Forbidden: may not be changed in an update.")

	if _, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Value: 5, GlobalDefault: true}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "another-default"}, Value: 6, GlobalDefault: true}, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, "PriorityClass default is already marked as default. Only one default can exist")

	if err := pcs.Delete(ctx, "high", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete a user class: %v", err)
	}
}

func TestPriorityAdmission(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "prio", nil)
	pods := s.Client.CoreV1().Pods("prio")
	never := corev1.PreemptNever
	if _, err := s.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "polite"}, Value: 700, PreemptionPolicy: &never}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	p := simplePod("classed")
	p.Spec.PriorityClassName = "polite"
	got, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 700 || got.Spec.PreemptionPolicy == nil || *got.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("priority %v, preemptionPolicy %v; want 700 and Never from the class", got.Spec.Priority, got.Spec.PreemptionPolicy)
	}

	p = simplePod("unknown")
	p.Spec.PriorityClassName = "nope"
	_, err = pods.Create(ctx, p, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "unknown" is forbidden: no PriorityClass with name nope was found`)

	p = simplePod("own-priority")
	p.Spec.PriorityClassName = "polite"
	p.Spec.Priority = func() *int32 { v := int32(5); return &v }()
	_, err = pods.Create(ctx, p, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		"the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 700 from the given PriorityClass name")

	p = simplePod("critical")
	p.Spec.PriorityClassName = "system-node-critical"
	if got, err = pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 2000001000 {
		t.Errorf("system-node-critical pod priority = %v", got.Spec.Priority)
	}

	// Without a class a pod takes the global default, once there is one.
	if got, err = pods.Create(ctx, simplePod("plain"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 0 || got.Spec.PriorityClassName != "" {
		t.Errorf("pod without a class: priority %v, class %q; want 0 and none", got.Spec.Priority, got.Spec.PriorityClassName)
	}
	if _, err := s.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "everyone"}, Value: 42, GlobalDefault: true}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err = pods.Create(ctx, simplePod("defaulted"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 42 || got.Spec.PriorityClassName != "everyone" {
		t.Errorf("pod without a class: priority %v, class %q; want 42 from everyone", got.Spec.Priority, got.Spec.PriorityClassName)
	}
}
