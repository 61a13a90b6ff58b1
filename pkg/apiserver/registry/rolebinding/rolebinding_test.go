package rolebinding

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

// newBinding is a binding as clients usually write it: no API groups.
func newBinding(mutate ...func(*rbacv1.RoleBinding)) *rbacv1.RoleBinding {
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "read-pods", Namespace: "default"},
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{
			{Kind: "User", Name: "jane"},
			{Kind: "Group", Name: "system:authenticated"},
			{Kind: "ServiceAccount", Name: "default", Namespace: "kube-system"},
		},
	}
	for _, m := range mutate {
		m(rb)
	}
	Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Default(rb)
	return rb
}

func TestDefault(t *testing.T) {
	rb := newBinding()
	if rb.RoleRef.APIGroup != "rbac.authorization.k8s.io" {
		t.Errorf("roleRef.apiGroup = %q", rb.RoleRef.APIGroup)
	}
	var groups []string
	for _, s := range rb.Subjects {
		groups = append(groups, s.APIGroup)
	}
	if want := []string{"rbac.authorization.k8s.io", "rbac.authorization.k8s.io", ""}; !apiequality.Semantic.DeepEqual(groups, want) {
		t.Errorf("subject apiGroups = %q, want %q", groups, want)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*rbacv1.RoleBinding)
		want   []string
	}{
		{name: "valid", mutate: func(*rbacv1.RoleBinding) {}},
		{name: "cluster role", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Kind = "ClusterRole" }},
		{name: "service account in the binding's namespace", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[2].Namespace = "" }},
		{name: "role kind", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Kind = "Pod" }, want: []string{"roleRef.kind"}},
		{name: "role api group", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.APIGroup = "apps" }, want: []string{"roleRef.apiGroup"}},
		{name: "role name", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Name = "" }, want: []string{"roleRef.name"}},
		{name: "subject kind", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[0].Kind = "Robot" }, want: []string{"subjects[0].kind"}},
		{name: "subject name", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[1].Name = "" }, want: []string{"subjects[1].name"}},
		{name: "service account api group", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[2].APIGroup = "rbac.authorization.k8s.io" },
			want: []string{"subjects[2].apiGroup"}},
		{name: "service account name", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[2].Name = "Not_A_Name" }, want: []string{"subjects[2].name"}},
	}
	r := Resource(clocktesting.NewFakePassiveClock(now))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rb := newBinding()
			tt.mutate(rb)
			if got := fieldPaths(r.Strategy.Validate(context.Background(), rb)); !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("errors at %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRoleRefImmutable(t *testing.T) {
	old := newBinding()
	tests := []struct {
		name   string
		mutate func(*rbacv1.RoleBinding)
		want   []string
	}{
		{name: "subjects may change", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects = rb.Subjects[:1] }},
		{name: "role name", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Name = "admin" }, want: []string{"roleRef"}},
		{name: "role kind", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Kind = "ClusterRole" }, want: []string{"roleRef"}},
	}
	r := Resource(clocktesting.NewFakePassiveClock(now))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rb := old.DeepCopy()
			tt.mutate(rb)
			r.Strategy.PrepareForUpdate(context.Background(), rb, old)
			if got := fieldPaths(r.Strategy.ValidateUpdate(context.Background(), rb, old)); !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("errors at %v, want %v", got, tt.want)
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
	if want := []string{"Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"}; !apiequality.Semantic.DeepEqual(cols, want) {
		t.Errorf("columns = %v, want %v", cols, want)
	}
	rb := newBinding(func(rb *rbacv1.RoleBinding) {
		rb.CreationTimestamp = metav1.NewTime(now.Add(-5 * 24 * time.Hour))
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "User", Name: "joe"})
	})
	cells, err := r.Table.Cells(rb)
	want := []interface{}{"read-pods", "Role/pod-reader", "5d", "jane, joe", "system:authenticated", "kube-system/default"}
	if err != nil || !apiequality.Semantic.DeepEqual(cells, want) {
		t.Errorf("cells = %#v, %v; want %#v", cells, err, want)
	}
}

func fieldPaths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}
