package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

func res(verb, group, resource, sub, ns, name string) authz.Attributes {
	return authz.Attributes{ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name,
		User: &request.User{Name: "u"}}
}

func path(verb, p string) authz.Attributes {
	return authz.Attributes{Verb: verb, Path: p, User: &request.User{Name: "u"}}
}

func TestRuleAllows(t *testing.T) {
	podsRead := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	cases := []struct {
		name string
		rule rbacv1.PolicyRule
		a    authz.Attributes
		want bool
	}{
		{"exact", podsRead, res("get", "", "pods", "", "ns", "p"), true},
		{"other verb", podsRead, res("delete", "", "pods", "", "ns", "p"), false},
		{"other group", podsRead, res("get", "apps", "pods", "", "ns", "p"), false},
		{"subresource not covered by its resource", podsRead, res("get", "", "pods", "status", "ns", "p"), false},
		{"subresource form", rbacv1.PolicyRule{Verbs: []string{"patch"}, APIGroups: []string{""}, Resources: []string{"pods/status"}},
			res("patch", "", "pods", "status", "ns", "p"), true},
		{"subresource form does not cover the resource", rbacv1.PolicyRule{Verbs: []string{"patch"}, APIGroups: []string{""}, Resources: []string{"pods/status"}},
			res("patch", "", "pods", "", "ns", "p"), false},
		{"*/subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			res("get", "apps", "deployments", "scale", "ns", "d"), true},
		{"*/subresource needs that subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			res("get", "apps", "deployments", "status", "ns", "d"), false},
		{"all wildcards", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			res("deletecollection", "batch", "jobs", "", "ns", ""), true},
		{"resourceNames match", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			res("get", "", "configmaps", "", "ns", "a"), true},
		{"resourceNames other name", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			res("get", "", "configmaps", "", "ns", "b"), false},
		{"resourceNames never cover a request without a name", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			res("list", "", "configmaps", "", "ns", ""), false},
		{"resource rule does not cover a path", podsRead, path("get", "/api"), false},
		{"exact path", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, path("get", "/healthz"), true},
		{"path glob", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}}, path("get", "/apis/apps/v1"), true},
		{"path glob is a prefix, not a segment", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/api*"}}, path("get", "/apis"), true},
		{"path without glob is exact", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/api"}}, path("get", "/api/v1"), false},
		{"path verb", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}, path("post", "/metrics"), false},
		{"path rule does not cover resources", rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}, res("get", "", "pods", "", "", ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.a, &tc.rule); got != tc.want {
				t.Fatalf("RuleAllows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSubjectMatches(t *testing.T) {
	u := &request.User{Name: "system:serviceaccount:team:bot", Groups: []string{"system:serviceaccounts", "devs"}}
	cases := []struct {
		s    rbacv1.Subject
		ns   string
		want bool
	}{
		{rbacv1.Subject{Kind: "User", Name: "system:serviceaccount:team:bot"}, "", true},
		{rbacv1.Subject{Kind: "User", Name: "bot"}, "", false},
		{rbacv1.Subject{Kind: "Group", Name: "devs"}, "", true},
		{rbacv1.Subject{Kind: "Group", Name: "ops"}, "", false},
		{rbacv1.Subject{Kind: "ServiceAccount", Name: "bot", Namespace: "team"}, "", true},
		{rbacv1.Subject{Kind: "ServiceAccount", Name: "bot"}, "team", true},
		{rbacv1.Subject{Kind: "ServiceAccount", Name: "bot", Namespace: "other"}, "team", false},
	}
	for _, tc := range cases {
		if got := SubjectMatches(tc.s, u, tc.ns); got != tc.want {
			t.Errorf("SubjectMatches(%+v, ns %q) = %v, want %v", tc.s, tc.ns, got, tc.want)
		}
	}
}

func TestAuthorizerBindings(t *testing.T) {
	z := New()
	z.Add(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: "a"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}},
		// A RoleBinding to a ClusterRole grants it in the binding's namespace only.
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "a"},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "ann"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "a"},
			RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "writer"},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: "writers"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "all-read"},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "bea"}}},
		// A binding to a role that does not exist grants nothing.
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dangling"},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "missing"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "cid"}}},
	)
	cases := []struct {
		user   string
		groups []string
		a      authz.Attributes
		want   authz.Decision
	}{
		{"ann", nil, res("get", "", "configmaps", "", "a", "x"), authz.Allow},
		{"ann", nil, res("get", "", "configmaps", "", "b", "x"), authz.NoOpinion},
		{"ann", nil, res("create", "", "configmaps", "", "a", ""), authz.NoOpinion},
		{"zed", []string{"writers"}, res("create", "", "configmaps", "", "a", ""), authz.Allow},
		{"zed", []string{"writers"}, res("create", "", "configmaps", "", "b", ""), authz.NoOpinion},
		{"bea", nil, res("get", "", "configmaps", "", "b", "x"), authz.Allow},
		{"bea", nil, res("get", "", "configmaps", "", "", ""), authz.Allow},
		{"cid", nil, res("get", "", "configmaps", "", "a", "x"), authz.NoOpinion},
	}
	for _, tc := range cases {
		tc.a.User = &request.User{Name: tc.user, Groups: tc.groups}
		if d, _, _ := z.Authorize(context.Background(), tc.a); d != tc.want {
			t.Errorf("%s %s %s in %q: %s, want %s", tc.user, tc.a.Verb, tc.a.Resource, tc.a.Namespace, d, tc.want)
		}
	}
}

func TestRulesFor(t *testing.T) {
	z := New()
	z.Add(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "a"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cb"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "c"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "g"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: "a"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}}},
	)
	u := &request.User{Name: "u", Groups: []string{"g"}}
	for ns, want := range map[string]int{"a": 2, "b": 1, "": 1} {
		if got := len(z.RulesFor(u, ns)); got != want {
			t.Errorf("rules in %q: %d, want %d", ns, got, want)
		}
	}
	if got := len(z.RulesFor(&request.User{Name: "other"}, "a")); got != 0 {
		t.Errorf("unbound user has %d rules", got)
	}
}
