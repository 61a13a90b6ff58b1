// Package rbac authorizes requests with the stored Roles, ClusterRoles,
// RoleBindings and ClusterRoleBindings (rbac.authorization.k8s.io/v1), kept
// in memory and fed by storage watches.
package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// RuleAllows reports whether one policy rule covers the request.
func RuleAllows(a authz.Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(rule, a.Path)
	}
	return apiGroupMatches(rule, a.APIGroup) &&
		resourceMatches(rule, a.Resource, a.Subresource) &&
		resourceNameMatches(rule, a.Name)
}

// RulesAllow reports whether any of rules covers the request.
func RulesAllow(a authz.Attributes, rules []rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(a, &rules[i]) {
			return true
		}
	}
	return false
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	return slices.Contains(rule.Verbs, rbacv1.VerbAll) || slices.Contains(rule.Verbs, verb)
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	return slices.Contains(rule.APIGroups, rbacv1.APIGroupAll) || slices.Contains(rule.APIGroups, group)
}

// resourceMatches accepts "*", the exact "resource" or "resource/sub", and
// "*/sub" for a subresource of anything.
func resourceMatches(rule *rbacv1.PolicyRule, resource, sub string) bool {
	combined := resource
	if sub != "" {
		combined += "/" + sub
	}
	for _, r := range rule.Resources {
		switch {
		case r == rbacv1.ResourceAll, r == combined:
			return true
		case sub != "" && r == "*/"+sub:
			return true
		}
	}
	return false
}

// resourceNameMatches: an empty list covers every name; a non-empty one
// never covers a request without a name (create, list).
func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	return name != "" && slices.Contains(rule.ResourceNames, name)
}

// nonResourceURLMatches accepts "*", the exact path, and a trailing "*"
// as a prefix glob ("/healthz/*").
func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		switch {
		case u == rbacv1.NonResourceAll, u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")):
			return true
		}
	}
	return false
}

// SubjectMatches reports whether a binding subject names the user. ns is
// the binding's namespace, the default for a ServiceAccount subject
// without one.
func SubjectMatches(s rbacv1.Subject, u *request.User, ns string) bool {
	if u == nil {
		return false
	}
	switch s.Kind {
	case rbacv1.UserKind:
		return s.Name == u.Name
	case rbacv1.GroupKind:
		return slices.Contains(u.Groups, s.Name)
	case rbacv1.ServiceAccountKind:
		sns := s.Namespace
		if sns == "" {
			sns = ns
		}
		return u.Name == "system:serviceaccount:"+sns+":"+s.Name
	}
	return false
}
