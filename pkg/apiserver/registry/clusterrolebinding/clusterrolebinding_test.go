package clusterrolebinding

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newBinding() *rbacv1.ClusterRoleBinding {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:kube-scheduler"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "system:kube-scheduler"},
		Subjects: []rbacv1.Subject{
			{Kind: "User", Name: "system:kube-scheduler"},
			{Kind: "ServiceAccount", Name: "scheduler", Namespace: "kube-system"},
		},
	}
	Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Default(crb)
	return crb
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*rbacv1.ClusterRoleBinding)
		want   []string
	}{
		{name: "valid", mutate: func(*rbacv1.ClusterRoleBinding) {}},
		{name: "a Role cannot be bound cluster-wide", mutate: func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Kind = "Role" }, want: []string{"roleRef.kind"}},
		{name: "service account needs its namespace", mutate: func(b *rbacv1.ClusterRoleBinding) { b.Subjects[1].Namespace = "" },
			want: []string{"subjects[1].namespace"}},
		{name: "user api group", mutate: func(b *rbacv1.ClusterRoleBinding) { b.Subjects[0].APIGroup = "v1" }, want: []string{"subjects[0].apiGroup"}},
	}
	r := Resource(clocktesting.NewFakePassiveClock(now))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBinding()
			tt.mutate(b)
			var got []string
			for _, e := range r.Strategy.Validate(context.Background(), b) {
				got = append(got, e.Field)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("errors at %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRoleRefImmutable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	old := newBinding()
	b := old.DeepCopy()
	b.RoleRef.Name = "cluster-admin"
	r.Strategy.PrepareForUpdate(context.Background(), b, old)
	errs := r.Strategy.ValidateUpdate(context.Background(), b, old)
	if len(errs) != 1 || errs[0].Field != "roleRef" {
		t.Errorf("errors = %v, want one at roleRef", errs)
	}
}

func TestTable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	b := newBinding()
	b.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Minute))
	cells, err := r.Table.Cells(b)
	want := []interface{}{"system:kube-scheduler", "ClusterRole/system:kube-scheduler", "10m", "system:kube-scheduler", "", "kube-system/scheduler"}
	if err != nil || !apiequality.Semantic.DeepEqual(cells, want) {
		t.Errorf("cells = %#v, %v; want %#v", cells, err, want)
	}
	if r.Namespaced {
		t.Error("cluster role bindings must be cluster-scoped")
	}
}
