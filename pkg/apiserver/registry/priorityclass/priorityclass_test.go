package priorityclass

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestValidate(t *testing.T) {
	never, bogus := corev1.PreemptNever, corev1.PreemptionPolicy("Sometimes")
	tests := []struct {
		name string
		pc   schedulingv1.PriorityClass
		want []string
	}{
		{name: "user class at the limit", pc: schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "top"}, Value: 1000000000}},
		{name: "user class above the limit", pc: schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "top"}, Value: 1000000001},
			want: []string{"value"}},
		{name: "built-in class", pc: schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000}},
		{name: "built-in class with another value", pc: schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 5},
			want: []string{"metadata.name"}},
		{name: "built-in class as global default", pc: schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000, GlobalDefault: true},
			want: []string{"metadata.name"}},
		{name: "reserved prefix", pc: schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}}, want: []string{"metadata.name"}},
		{name: "never preempts", pc: schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "a"}, PreemptionPolicy: &never}},
		{name: "unknown policy", pc: schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "a"}, PreemptionPolicy: &bogus}, want: []string{"preemptionPolicy"}},
	}
	r := Resource(clocktesting.NewFakePassiveClock(time.Now()))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range r.Strategy.Validate(context.Background(), tt.pc.DeepCopy()) {
				got = append(got, e.Field)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("errors at %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDefaultAndUpdate(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(time.Now()))
	old := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Value: 10}
	r.Strategy.Default(old)
	if old.PreemptionPolicy == nil || *old.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Fatalf("default preemptionPolicy = %v, want PreemptLowerPriority", old.PreemptionPolicy)
	}
	r.Strategy.PrepareForCreate(context.Background(), old)
	if old.Generation != 1 {
		t.Errorf("generation on create = %d, want 1", old.Generation)
	}
	never := corev1.PreemptNever
	for name, tt := range map[string]struct {
		change func(*schedulingv1.PriorityClass)
		want   []string
	}{
		"description":   {change: func(pc *schedulingv1.PriorityClass) { pc.Description = "new" }},
		"globalDefault": {change: func(pc *schedulingv1.PriorityClass) { pc.GlobalDefault = true }},
		"value":         {change: func(pc *schedulingv1.PriorityClass) { pc.Value = 11 }, want: []string{"value"}},
		"policy":        {change: func(pc *schedulingv1.PriorityClass) { pc.PreemptionPolicy = &never }, want: []string{"preemptionPolicy"}},
	} {
		pc := old.DeepCopy()
		tt.change(pc)
		var got []string
		for _, e := range r.Strategy.ValidateUpdate(context.Background(), pc, old) {
			got = append(got, e.Field)
		}
		if !apiequality.Semantic.DeepEqual(got, tt.want) {
			t.Errorf("%s: errors at %v, want %v", name, got, tt.want)
		}
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	r := Resource(clocktesting.NewFakePassiveClock(now))
	if r.Namespaced || len(r.ShortNames) != 1 || r.ShortNames[0] != "pc" {
		t.Errorf("priority classes must be cluster-scoped with short name pc")
	}
	var names []string
	for _, c := range r.Table.Columns() {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Value", "Global-Default", "Age", "PreemptionPolicy"}; !apiequality.Semantic.DeepEqual(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	pc := SystemClasses()[0]
	pc.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Hour))
	cells, err := r.Table.Cells(pc)
	if want := []interface{}{"system-node-critical", int64(2000001000), false, "5h", "PreemptLowerPriority"}; err != nil || !apiequality.Semantic.DeepEqual(cells, want) {
		t.Errorf("cells = %v, %v; want %v", cells, err, want)
	}
}
