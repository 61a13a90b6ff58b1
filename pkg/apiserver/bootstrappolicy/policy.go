// Package bootstrappolicy holds the ClusterRoles and ClusterRoleBindings
// every cluster starts with, and creates those missing at start-up (as
// upstream's reconcile-on-start, without overwriting an administrator's edits).
package bootstrappolicy

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Well-known groups.
const (
	Masters         = "system:masters"
	Authenticated   = "system:authenticated"
	Unauthenticated = "system:unauthenticated"
)

var (
	read      = []string{"get", "list", "watch"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	// autoupdate marks objects owned by the bootstrap policy, as upstream's
	// rbac.authorization.kubernetes.io/autoupdate annotation.
	autoupdate = map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "true"}
	bootstrap  = map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
)

func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: paths}
}

func role(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: bootstrap, Annotations: autoupdate},
		Rules:      rules,
	}
}

func binding(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: bootstrap, Annotations: autoupdate},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects:   subjects,
	}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// viewRules read what most namespaced workloads consist of; secrets are
// left out, as upstream, because reading them reveals credentials.
func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(read, []string{""}, "pods", "pods/log", "pods/status", "configmaps", "endpoints", "persistentvolumeclaims",
			"persistentvolumeclaims/status", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "events", "limitranges", "resourcequotas", "resourcequotas/status", "namespaces", "namespaces/status"),
		rule(read, []string{"apps"}, "deployments", "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
			"replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status", "daemonsets", "daemonsets/status",
			"controllerrevisions"),
		rule(read, []string{"batch"}, "jobs", "jobs/status", "cronjobs", "cronjobs/status"),
		rule(read, []string{"events.k8s.io"}, "events"),
		rule(read, []string{"coordination.k8s.io"}, "leases"),
		rule(read, []string{"discovery.k8s.io"}, "endpointslices"),
	}
}

// editRules add writes of workloads, secrets and service accounts.
func editRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(readWrite, []string{""}, "pods", "pods/status", "configmaps", "secrets", "endpoints", "persistentvolumeclaims",
			"replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "events"),
		rule([]string{"create"}, []string{""}, "pods/eviction", "pods/exec", "pods/attach", "pods/portforward", "serviceaccounts/token"),
		rule(readWrite, []string{"apps"}, "deployments", "deployments/scale", "replicasets", "replicasets/scale",
			"statefulsets", "statefulsets/scale", "daemonsets"),
		rule(readWrite, []string{"batch"}, "jobs", "cronjobs"),
		rule(readWrite, []string{"coordination.k8s.io"}, "leases"),
	}
}

// ClusterRoles are the bootstrap cluster roles.
func ClusterRoles() []*rbacv1.ClusterRole {
	admin := append(append(viewRules(), editRules()...),
		rule(readWrite, []string{"rbac.authorization.k8s.io"}, "roles", "rolebindings"),
		rule([]string{"create"}, []string{"authorization.k8s.io"}, "localsubjectaccessreviews"))
	return []*rbacv1.ClusterRole{
		role("cluster-admin",
			rule([]string{"*"}, []string{"*"}, "*"),
			urls([]string{"*"}, "*")),
		role("admin", admin...),
		role("edit", append(viewRules(), editRules()...)...),
		role("view", viewRules()...),
		role("system:discovery",
			urls([]string{"get"}, "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz",
				"/openapi", "/openapi/*", "/version", "/version/")),
		role("system:basic-user",
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, []string{"authentication.k8s.io"}, "selfsubjectreviews")),
		role("system:public-info-viewer",
			urls([]string{"get"}, "/healthz", "/livez", "/readyz", "/version", "/version/")),
		role("system:kube-scheduler",
			rule(read, []string{""}, "pods", "nodes", "namespaces", "persistentvolumeclaims", "persistentvolumes",
				"services", "replicationcontrollers", "configmaps"),
			rule([]string{"create"}, []string{""}, "pods/binding", "bindings"),
			rule([]string{"patch", "update"}, []string{""}, "pods/status"),
			rule([]string{"delete"}, []string{""}, "pods"),
			rule([]string{"create", "patch", "update"}, []string{"", "events.k8s.io"}, "events"),
			rule(read, []string{"apps"}, "replicasets", "statefulsets"),
			rule(read, []string{"storage.k8s.io"}, "storageclasses", "csinodes", "csidrivers", "csistoragecapacities"),
			rule(read, []string{"policy"}, "poddisruptionbudgets"),
			rule([]string{"get", "create", "update", "list", "watch"}, []string{"coordination.k8s.io"}, "leases")),
		role("system:kube-controller-manager",
			// The controller-manager runs every controller with one
			// identity here (no per-controller service accounts), so it
			// needs broad rights over what it manages.
			rule([]string{"*"}, []string{"", "apps", "batch", "coordination.k8s.io", "events.k8s.io", "discovery.k8s.io", "policy"}, "*"),
			rule(read, []string{"*"}, "*"),
			rule([]string{"create"}, []string{"authentication.k8s.io"}, "tokenreviews"),
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "subjectaccessreviews")),
		// Upstream no longer binds system:node to the nodes group: the Node
		// authorizer grants kubelets what they need, object by object. The
		// role stays for administrators who want it.
		role("system:node",
			rule(read, []string{""}, "pods", "nodes", "services", "endpoints"),
			rule([]string{"get"}, []string{""}, "secrets", "configmaps", "serviceaccounts", "persistentvolumeclaims"),
			rule([]string{"create", "get", "update", "patch"}, []string{""}, "nodes", "nodes/status"),
			rule([]string{"update", "patch"}, []string{""}, "pods/status"),
			rule([]string{"delete"}, []string{""}, "pods"),
			rule([]string{"create", "patch", "update"}, []string{"", "events.k8s.io"}, "events"),
			rule([]string{"create", "get", "update", "patch", "delete"}, []string{"coordination.k8s.io"}, "leases")),
		// kube-lite-proxy's, as upstream's kube-proxy's.
		role("system:node-proxier",
			rule([]string{"list", "watch"}, []string{""}, "services", "endpoints"),
			rule(read, []string{""}, "nodes"),
			rule([]string{"create", "update", "patch"}, []string{"", "events.k8s.io"}, "events"),
			rule([]string{"list", "watch"}, []string{"discovery.k8s.io"}, "endpointslices")),
	}
}

// ClusterRoleBindings are the bootstrap bindings.
func ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return []*rbacv1.ClusterRoleBinding{
		binding("cluster-admin", "cluster-admin", group(Masters)),
		binding("system:discovery", "system:discovery", group(Authenticated)),
		binding("system:basic-user", "system:basic-user", group(Authenticated)),
		binding("system:public-info-viewer", "system:public-info-viewer", group(Authenticated), group(Unauthenticated)),
		binding("system:kube-scheduler", "system:kube-scheduler", user("system:kube-scheduler")),
		binding("system:kube-controller-manager", "system:kube-controller-manager", user("system:kube-controller-manager")),
		binding("system:node-proxier", "system:node-proxier", user("system:kube-proxy")),
	}
}

// Creator stores obj unless an object of its kind and name exists.
type Creator interface {
	CreateIfAbsent(ctx context.Context, obj runtime.Object) (created bool, err error)
}

// Ensure creates each bootstrap role and binding that is absent. Existing
// ones are left as they are: an administrator may have tightened them.
func Ensure(ctx context.Context, c Creator) (created int, err error) {
	var objs []runtime.Object
	for _, r := range ClusterRoles() {
		objs = append(objs, r)
	}
	for _, b := range ClusterRoleBindings() {
		objs = append(objs, b)
	}
	for _, o := range objs {
		ok, err := c.CreateIfAbsent(ctx, o)
		if err != nil {
			return created, fmt.Errorf("bootstrap policy: %w", err)
		}
		if ok {
			created++
		}
	}
	return created, nil
}
