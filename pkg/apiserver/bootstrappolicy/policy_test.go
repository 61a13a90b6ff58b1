package bootstrappolicy

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authz/rbac"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

type memCreator struct{ have map[string]bool }

func (m *memCreator) CreateIfAbsent(_ context.Context, obj runtime.Object) (bool, error) {
	acc, _ := meta.Accessor(obj)
	key := obj.GetObjectKind().GroupVersionKind().Kind + "/" + acc.GetName()
	if m.have[key] {
		return false, nil
	}
	m.have[key] = true
	return true, nil
}

func TestEnsureCreatesOnlyWhatIsAbsent(t *testing.T) {
	c := &memCreator{have: map[string]bool{"ClusterRole/view": true}}
	n, err := Ensure(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(ClusterRoles()) + len(ClusterRoleBindings()) - 1; n != want {
		t.Fatalf("created %d, want %d", n, want)
	}
	if n, _ := Ensure(context.Background(), c); n != 0 {
		t.Fatalf("second run created %d", n)
	}
}

// TestBootstrapGrants checks the policy as users would meet it.
func TestBootstrapGrants(t *testing.T) {
	z := rbac.New()
	for _, r := range ClusterRoles() {
		z.Add(r)
	}
	for _, b := range ClusterRoleBindings() {
		z.Add(b)
	}
	// A user bound to view/edit/admin the way an administrator would.
	for _, role := range []string{"view", "edit", "admin"} {
		z.Add(&rbacv1.ClusterRoleBinding{
			ObjectMeta: metaName(role + "-user"),
			RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: role + "-user"}},
		})
	}
	authed := func(name string) *request.User {
		return &request.User{Name: name, Groups: []string{Authenticated}}
	}
	res := func(u *request.User, verb, group, resource, sub, ns string) authz.Attributes {
		return authz.Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns}
	}
	path := func(u *request.User, p string) authz.Attributes {
		return authz.Attributes{User: u, Verb: "get", Path: p}
	}
	anon := &request.User{Name: "system:anonymous", Groups: []string{Unauthenticated}}
	cases := []struct {
		name string
		a    authz.Attributes
		want bool
	}{
		{"view lists pods", res(authed("view-user"), "list", "", "pods", "", "a"), true},
		{"view reads deployments", res(authed("view-user"), "get", "apps", "deployments", "", "a"), true},
		{"view reads no secrets", res(authed("view-user"), "get", "", "secrets", "", "a"), false},
		{"view creates nothing", res(authed("view-user"), "create", "", "pods", "", "a"), false},
		{"edit creates pods", res(authed("edit-user"), "create", "", "pods", "", "a"), true},
		{"edit reads secrets", res(authed("edit-user"), "get", "", "secrets", "", "a"), true},
		{"edit does not grant roles", res(authed("edit-user"), "create", "rbac.authorization.k8s.io", "rolebindings", "", "a"), false},
		{"admin grants roles", res(authed("admin-user"), "create", "rbac.authorization.k8s.io", "rolebindings", "", "a"), true},
		{"admin does not touch nodes", res(authed("admin-user"), "delete", "", "nodes", "", ""), false},
		{"scheduler binds pods", res(authed("system:kube-scheduler"), "create", "", "pods", "binding", "a"), true},
		{"scheduler watches nodes", res(authed("system:kube-scheduler"), "watch", "", "nodes", "", ""), true},
		{"scheduler takes its lease", res(authed("system:kube-scheduler"), "update", "coordination.k8s.io", "leases", "", "kube-system"), true},
		{"scheduler creates no pods", res(authed("system:kube-scheduler"), "create", "", "pods", "", "a"), false},
		{"controller-manager creates pods", res(authed("system:kube-controller-manager"), "create", "", "pods", "", "a"), true},
		{"controller-manager scales replicasets", res(authed("system:kube-controller-manager"), "update", "apps", "replicasets", "status", "a"), true},
		{"controller-manager does not edit RBAC", res(authed("system:kube-controller-manager"), "create", "rbac.authorization.k8s.io", "clusterrolebindings", "", ""), false},
		{"anyone authenticated discovers", path(authed("x"), "/apis/apps/v1"), true},
		{"anyone authenticated asks can-i", res(authed("x"), "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", ""), true},
		{"anonymous sees health", path(anon, "/healthz"), true},
		{"anonymous does not discover", path(anon, "/apis"), false},
		{"nodes are not bound to system:node", res(&request.User{Name: "system:node:n1", Groups: []string{"system:nodes", Authenticated}}, "get", "", "secrets", "", "a"), false},
		{"masters via cluster-admin", res(&request.User{Name: "root", Groups: []string{Masters}}, "deletecollection", "x.example", "things", "", "a"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _, _ := z.Authorize(context.Background(), tc.a)
			if (d == authz.Allow) != tc.want {
				t.Fatalf("decision %s, want allowed=%v", d, tc.want)
			}
		})
	}
}

func metaName(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: n} }
