package role

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		rules []rbacv1.PolicyRule
		want  []string
	}{
		{name: "pod reader", rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}},
		{name: "no rules", rules: nil},
		{name: "no verbs", rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}, want: []string{"rules[0].verbs"}},
		{name: "no api groups or resources", rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}}},
			want: []string{"rules[0].apiGroups", "rules[0].resources"}},
		{name: "non-resource URLs in a namespaced role", rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
			{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}},
		}, want: []string{"rules[1].nonResourceURLs"}},
	}
	r := Resource(clocktesting.NewFakePassiveClock(now))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "default"}, Rules: tt.rules}
			r.Strategy.PrepareForCreate(context.Background(), role)
			for _, errs := range []field.ErrorList{
				r.Strategy.Validate(context.Background(), role),
				r.Strategy.ValidateUpdate(context.Background(), role, role),
			} {
				if got := fieldPaths(errs); !apiequality.Semantic.DeepEqual(got, tt.want) {
					t.Errorf("errors at %v, want %v (%v)", got, tt.want, errs)
				}
			}
		})
	}
}

func TestValidatePolicyRuleClusterWide(t *testing.T) {
	tests := []struct {
		name string
		rule rbacv1.PolicyRule
		want []string
	}{
		{name: "non-resource URLs", rule: rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		{name: "both kinds", rule: rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Resources: []string{"pods"}, Verbs: []string{"get"}},
			want: []string{"r.nonResourceURLs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fieldPaths(ValidatePolicyRule(tt.rule, false, field.NewPath("r"))); !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("errors at %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidateName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"system:controller:job-controller", true},
		{"Admin_Role", true},
		{"a/b", false},
		{"..", false},
	} {
		if got := len(ValidateName(tt.name, false)) == 0; got != tt.ok {
			t.Errorf("ValidateName(%q) ok = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

func TestTable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	cols := r.Table.Columns()
	if len(cols) != 2 || cols[0].Name != "Name" || cols[1].Name != "Created At" || cols[1].Type != "date" {
		t.Errorf("columns = %+v", cols)
	}
	created := time.Date(2025, 6, 7, 8, 9, 10, 0, time.FixedZone("CEST", 2*3600))
	cells, err := r.Table.Cells(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", CreationTimestamp: metav1.NewTime(created)}})
	if want := []interface{}{"reader", "2025-06-07T06:09:10Z"}; err != nil || !apiequality.Semantic.DeepEqual(cells, want) {
		t.Errorf("cells = %v, %v; want %v", cells, err, want)
	}
}

func fieldPaths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}
