package clusterrole

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cr   rbacv1.ClusterRole
		want []string
	}{
		{name: "resources and non-resource URLs in separate rules", cr: rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"*"}},
			{NonResourceURLs: []string{"/healthz", "/metrics"}, Verbs: []string{"get"}},
		}}},
		{name: "rule without verbs", cr: rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/healthz"}}}},
			want: []string{"rules[0].verbs"}},
		{name: "aggregated", cr: rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"rbac.example.com/aggregate-to-view": "true"}},
		}}}},
		{name: "aggregation without selectors", cr: rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{}},
			want: []string{"aggregationRule.clusterRoleSelectors"}},
		{name: "aggregation with a bad selector", cr: rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn}}},
		}}}, want: []string{"aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values"}},
	}
	r := Resource(clocktesting.NewFakePassiveClock(time.Now()))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := tt.cr.DeepCopy()
			cr.Name = "system:view"
			var got []string
			for _, e := range r.Strategy.Validate(context.Background(), cr) {
				got = append(got, e.Field)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("errors at %v, want %v", got, tt.want)
			}
		})
	}
	if r.Namespaced || r.ValidateName("system:view", false) != nil {
		t.Errorf("cluster roles must be cluster-scoped and allow colons in names")
	}
}

func TestTable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(time.Now()))
	created := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	cells, err := r.Table.Cells(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin", CreationTimestamp: metav1.NewTime(created)}})
	if want := []interface{}{"admin", "2025-06-07T08:09:10Z"}; err != nil || !apiequality.Semantic.DeepEqual(cells, want) {
		t.Errorf("cells = %v, %v; want %v", cells, err, want)
	}
}
