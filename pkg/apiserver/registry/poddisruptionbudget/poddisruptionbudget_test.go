package poddisruptionbudget

import (
	"context"
	"reflect"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestTable: `kubectl get pdb` shows upstream's columns, N/A for the bound
// not set.
func TestTable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	var names []string
	for _, c := range r.Table.Columns() {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %q, want %q", names, want)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Minute))},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("25%"))},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 2},
	}
	cells, err := r.Table.Cells(pdb)
	if err != nil {
		t.Fatal(err)
	}
	if want := []interface{}{"web", "N/A", "25%", int64(2), "3m"}; !reflect.DeepEqual(cells, want) {
		t.Errorf("cells %v, want %v", cells, want)
	}
}

// TestGenerationAndStatus: only spec changes bump generation (what the
// eviction subresource compares with status.observedGeneration), and the
// status endpoint refuses negative counts.
func TestGenerationAndStatus(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	ctx := context.Background()
	old := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Generation: 3},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}}
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	relabelled.Status = policyv1.PodDisruptionBudgetStatus{}
	r.Strategy.PrepareForUpdate(ctx, relabelled, old)
	if relabelled.Generation != 3 || relabelled.Status.DisruptionsAllowed != 1 {
		t.Errorf("metadata-only update: generation %d, status %+v; want 3 and the old status kept", relabelled.Generation, relabelled.Status)
	}
	respec := old.DeepCopy()
	respec.Spec.MinAvailable = ptr.To(intstr.FromInt32(2))
	r.Strategy.PrepareForUpdate(ctx, respec, old)
	if respec.Generation != 4 {
		t.Errorf("spec update: generation %d, want 4", respec.Generation)
	}
	bad := old.DeepCopy()
	bad.Status.CurrentHealthy = -1
	if errs := r.Status.ValidateUpdate(ctx, bad, old); len(errs) != 1 || errs[0].Field != "status.currentHealthy" {
		t.Errorf("negative currentHealthy: %v, want one error on status.currentHealthy", errs)
	}
}
