package rbac

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// EscalationCheck refuses, as upstream's RBAC registry does, a Role or
// ClusterRole that grants more than its author holds (unless the author
// may "escalate" roles), and a binding to a role whose rules the author
// does not hold (unless the author may "bind" it). Without it, anyone who
// may write roles or bindings could grant themselves anything.
type EscalationCheck struct {
	Authorizer authz.Authorizer
	// Roles reads the rules of the role a binding refers to.
	Roles *Authorizer
}

// Name implements admission.Validator.
func (EscalationCheck) Name() string { return "RBACEscalation" }

// Validate implements admission.Validator.
func (c EscalationCheck) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Resource == nil || a.Resource.GroupVersion.Group != rbacv1.GroupName || a.Subresource != "" ||
		(a.Operation != admission.Create && a.Operation != admission.Update) {
		return nil
	}
	gr := schema.GroupResource{Group: rbacv1.GroupName, Resource: a.Resource.Name}
	switch o := a.Object.(type) {
	case *rbacv1.Role:
		return c.checkRole(ctx, a, gr, o.Namespace, o.Name, o.Rules)
	case *rbacv1.ClusterRole:
		return c.checkRole(ctx, a, gr, "", o.Name, o.Rules)
	case *rbacv1.RoleBinding:
		return c.checkBinding(ctx, a, gr, o.Namespace, o.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return c.checkBinding(ctx, a, gr, "", o.Name, o.RoleRef)
	}
	return nil
}

func (c EscalationCheck) may(ctx context.Context, u *request.User, verb, resource, ns, name string) bool {
	d, _, _ := c.Authorizer.Authorize(ctx, authz.Attributes{User: u, ResourceRequest: true, Verb: verb,
		APIGroup: rbacv1.GroupName, Resource: resource, Namespace: ns, Name: name})
	return d == authz.Allow
}

func (c EscalationCheck) checkRole(ctx context.Context, a *admission.Attributes, gr schema.GroupResource, ns, name string, rules []rbacv1.PolicyRule) error {
	if c.may(ctx, a.User, "escalate", gr.Resource, ns, name) {
		return nil
	}
	return c.holdsAll(ctx, a, gr, ns, name, rules)
}

func (c EscalationCheck) checkBinding(ctx context.Context, a *admission.Attributes, gr schema.GroupResource, ns, name string, ref rbacv1.RoleRef) error {
	refResource := "clusterroles"
	if ref.Kind == "Role" {
		refResource = "roles"
	}
	if c.may(ctx, a.User, "bind", refResource, ns, ref.Name) {
		return nil
	}
	c.Roles.mu.RLock()
	rules := c.Roles.rulesOf(ns, ref)
	c.Roles.mu.RUnlock()
	return c.holdsAll(ctx, a, gr, ns, name, rules)
}

// holdsAll refuses the write of gr name unless its author may do all of rules in ns.
func (c EscalationCheck) holdsAll(ctx context.Context, a *admission.Attributes, gr schema.GroupResource, ns, name string, rules []rbacv1.PolicyRule) error {
	if missing := c.uncovered(ctx, a.User, ns, rules); len(missing) > 0 {
		return apierrors.NewForbidden(gr, name, fmt.Errorf("user %q is attempting to grant RBAC permissions not currently held:\n%s", userName(a.User), strings.Join(missing, "\n")))
	}
	return nil
}

// uncovered lists, one line each, the parts of rules the user may not do
// in ns. Wildcards are checked as themselves: granting "*" takes holding "*".
func (c EscalationCheck) uncovered(ctx context.Context, u *request.User, ns string, rules []rbacv1.PolicyRule) []string {
	var missing []string
	check := func(a authz.Attributes, what string) {
		a.User = u
		if d, _, _ := c.Authorizer.Authorize(ctx, a); d != authz.Allow {
			missing = append(missing, what)
		}
	}
	for _, r := range rules {
		for _, verb := range r.Verbs {
			for _, p := range r.NonResourceURLs {
				check(authz.Attributes{Verb: verb, Path: p}, fmt.Sprintf("{NonResourceURLs:[%s], Verbs:[%s]}", p, verb))
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					names := r.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, n := range names {
						check(authz.Attributes{ResourceRequest: true, Verb: verb, APIGroup: g, Resource: resource, Subresource: sub, Namespace: ns, Name: n},
							fmt.Sprintf("{APIGroups:[%q], Resources:[%q], ResourceNames:[%q], Verbs:[%q]}", g, res, n, verb))
					}
				}
			}
		}
	}
	return missing
}

func userName(u *request.User) string {
	if u == nil {
		return ""
	}
	return u.Name
}
