package lease

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		spec coordinationv1.LeaseSpec
		want []string
	}{
		{name: "node heartbeat", spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("node-1"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(now)),
		}},
		{name: "empty", spec: coordinationv1.LeaseSpec{}},
		{name: "zero duration", spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](0)}, want: []string{"spec.leaseDurationSeconds"}},
		{name: "negative transitions", spec: coordinationv1.LeaseSpec{LeaseTransitions: ptr.To[int32](-1)}, want: []string{"spec.leaseTransitions"}},
		{name: "known strategy", spec: coordinationv1.LeaseSpec{Strategy: ptr.To(coordinationv1.OldestEmulationVersion), PreferredHolder: ptr.To("a")}},
		{name: "custom strategy", spec: coordinationv1.LeaseSpec{Strategy: ptr.To[coordinationv1.CoordinatedLeaseStrategy]("example.com/mine")}},
		{name: "unknown strategy", spec: coordinationv1.LeaseSpec{Strategy: ptr.To[coordinationv1.CoordinatedLeaseStrategy]("Newest")}, want: []string{"spec.strategy"}},
		{name: "preferred holder without strategy", spec: coordinationv1.LeaseSpec{PreferredHolder: ptr.To("a")}, want: []string{"spec.preferredHolder"}},
	}
	r := Resource(clocktesting.NewFakePassiveClock(now))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"}, Spec: tt.spec}
			for _, errs := range [][]string{fields(r.Strategy.Validate(context.Background(), l)), fields(r.Strategy.ValidateUpdate(context.Background(), l, l))} {
				if !apiequality.Semantic.DeepEqual(errs, tt.want) {
					t.Errorf("errors at %v, want %v", errs, tt.want)
				}
			}
		})
	}
}

func TestTable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	var cols []string
	for _, c := range r.Table.Columns() {
		cols = append(cols, c.Name)
	}
	if want := []string{"Name", "Holder", "Age"}; !apiequality.Semantic.DeepEqual(cols, want) {
		t.Errorf("columns = %v, want %v", cols, want)
	}
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", CreationTimestamp: metav1.NewTime(now.Add(-26 * time.Hour))},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("host_1234")},
	}
	for _, tt := range []struct {
		holder *string
		want   []interface{}
	}{
		{ptr.To("host_1234"), []interface{}{"kube-scheduler", "host_1234", "26h"}},
		{nil, []interface{}{"kube-scheduler", "", "26h"}},
	} {
		l.Spec.HolderIdentity = tt.holder
		cells, err := r.Table.Cells(l)
		if err != nil || !apiequality.Semantic.DeepEqual(cells, tt.want) {
			t.Errorf("cells = %v, %v; want %v", cells, err, tt.want)
		}
	}
}

func fields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}
