package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

func TestEscalationCheck(t *testing.T) {
	z := New()
	z.Add(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cm-admin"}, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get", "list", "create"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
			// Not "*": that would include escalate and bind.
			{Verbs: []string{"create", "update", "get", "list"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}},
		}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "everything"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "a"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cm-admin"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "ann"}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "binder"}, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"everything"}},
			{Verbs: []string{"create"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-binder"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "binder"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}},
	)
	check := EscalationCheck{Authorizer: authz.Union{z}, Roles: z}
	role := func(ns string, rules ...rbacv1.PolicyRule) runtime.Object {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns}, Rules: rules}
	}
	binding := func(ns, clusterRole string) runtime.Object {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: ns}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: clusterRole}}
	}
	rolesRes := &registry.Resource{GroupVersion: rbacv1.SchemeGroupVersion, Name: "roles"}
	bindingsRes := &registry.Resource{GroupVersion: rbacv1.SchemeGroupVersion, Name: "rolebindings"}
	cases := []struct {
		name    string
		user    string
		res     *registry.Resource
		obj     runtime.Object
		allowed bool
	}{
		{"a role within what ann holds", "ann", rolesRes, role("a", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}), true},
		{"a role beyond it", "ann", rolesRes, role("a", rbacv1.PolicyRule{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}), false},
		{"a wildcard she does not hold", "ann", rolesRes, role("a", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}), false},
		{"in another namespace", "ann", rolesRes, role("b", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}), false},
		{"binding a role she holds", "ann", bindingsRes, binding("a", "cm-reader"), true},
		{"binding a role she does not hold", "ann", bindingsRes, binding("a", "everything"), false},
		{"bob may bind it", "bob", bindingsRes, binding("a", "everything"), true},
		{"but only that one", "bob", bindingsRes, binding("a", "cm-admin"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := check.Validate(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: tc.res,
				Object: tc.obj, User: &request.User{Name: tc.user}})
			if tc.allowed && err != nil || !tc.allowed && !apierrors.IsForbidden(err) {
				t.Fatalf("allowed=%v, got %v", tc.allowed, err)
			}
		})
	}
}
