package rbac

import (
	"context"
	"fmt"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// Sources are the four stored collections RBAC follows.
type Sources struct {
	Roles, RoleBindings, ClusterRoles, ClusterRoleBindings authz.Source
}

// Authorizer is the RBAC mode. It allows what a binding of the user grants
// and has no opinion otherwise (RBAC never denies).
type Authorizer struct {
	mu                  sync.RWMutex
	roles               map[string]*rbacv1.Role // ns/name
	clusterRoles        map[string]*rbacv1.ClusterRole
	roleBindings        map[string]*rbacv1.RoleBinding // ns/name
	clusterRoleBindings map[string]*rbacv1.ClusterRoleBinding
}

// New returns an authorizer with an empty policy; Start fills it.
func New() *Authorizer {
	return &Authorizer{
		roles:               map[string]*rbacv1.Role{},
		clusterRoles:        map[string]*rbacv1.ClusterRole{},
		roleBindings:        map[string]*rbacv1.RoleBinding{},
		clusterRoleBindings: map[string]*rbacv1.ClusterRoleBinding{},
	}
}

// Start follows the four collections until ctx ends and returns once each
// was listed, or ctx ended first.
func (z *Authorizer) Start(ctx context.Context, clk clock.Clock, src Sources) error {
	sinks := []struct {
		src  authz.Source
		sink authz.Sink
	}{
		{src.Roles, sinkOf(z, z.roles, func(o *rbacv1.Role) string { return o.Namespace + "/" + o.Name })},
		{src.RoleBindings, sinkOf(z, z.roleBindings, func(o *rbacv1.RoleBinding) string { return o.Namespace + "/" + o.Name })},
		{src.ClusterRoles, sinkOf(z, z.clusterRoles, func(o *rbacv1.ClusterRole) string { return o.Name })},
		{src.ClusterRoleBindings, sinkOf(z, z.clusterRoleBindings, func(o *rbacv1.ClusterRoleBinding) string { return o.Name })},
	}
	for _, s := range sinks {
		synced := make(chan struct{})
		go authz.Follow(ctx, clk, s.src, s.sink, synced)
		select {
		case <-synced:
		case <-ctx.Done():
			return fmt.Errorf("rbac: waiting for the policy: %w", ctx.Err())
		}
	}
	return nil
}

// mapSink keeps one of the authorizer's maps, under its lock.
type mapSink[T runtime.Object] struct {
	z   *Authorizer
	m   map[string]T
	key func(T) string
}

func sinkOf[T runtime.Object](z *Authorizer, m map[string]T, key func(T) string) *mapSink[T] {
	return &mapSink[T]{z: z, m: m, key: key}
}

func (s *mapSink[T]) Replace(objs []runtime.Object) {
	s.z.mu.Lock()
	defer s.z.mu.Unlock()
	clear(s.m)
	for _, o := range objs {
		if t, ok := o.(T); ok {
			s.m[s.key(t)] = t
		}
	}
}

func (s *mapSink[T]) Upsert(o runtime.Object) {
	if t, ok := o.(T); ok {
		s.z.mu.Lock()
		s.m[s.key(t)] = t
		s.z.mu.Unlock()
	}
}

func (s *mapSink[T]) Delete(o runtime.Object) {
	if t, ok := o.(T); ok {
		s.z.mu.Lock()
		delete(s.m, s.key(t))
		s.z.mu.Unlock()
	}
}

// Add puts objects straight into the policy (for tests and for callers
// that hold a policy without storage).
func (z *Authorizer) Add(objs ...runtime.Object) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, o := range objs {
		switch t := o.(type) {
		case *rbacv1.Role:
			z.roles[t.Namespace+"/"+t.Name] = t
		case *rbacv1.ClusterRole:
			z.clusterRoles[t.Name] = t
		case *rbacv1.RoleBinding:
			z.roleBindings[t.Namespace+"/"+t.Name] = t
		case *rbacv1.ClusterRoleBinding:
			z.clusterRoleBindings[t.Name] = t
		}
	}
}

// Authorize allows when a ClusterRoleBinding, or a RoleBinding in the
// request's namespace, grants the user a rule covering the request.
func (z *Authorizer) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	z.mu.RLock()
	defer z.mu.RUnlock()
	for _, b := range z.clusterRoleBindings {
		if !z.bound(b.Subjects, a, "") || b.RoleRef.Kind != "ClusterRole" {
			continue
		}
		if cr, ok := z.clusterRoles[b.RoleRef.Name]; ok && RulesAllow(a, cr.Rules) {
			return authz.Allow, "", nil
		}
	}
	if a.Namespace != "" && a.ResourceRequest {
		for _, b := range z.roleBindings {
			if b.Namespace != a.Namespace || !z.bound(b.Subjects, a, b.Namespace) {
				continue
			}
			if RulesAllow(a, z.rulesOf(b.Namespace, b.RoleRef)) {
				return authz.Allow, "", nil
			}
		}
	}
	return authz.NoOpinion, "", nil
}

func (z *Authorizer) bound(subjects []rbacv1.Subject, a authz.Attributes, ns string) bool {
	for _, s := range subjects {
		if SubjectMatches(s, a.User, ns) {
			return true
		}
	}
	return false
}

func (z *Authorizer) rulesOf(ns string, ref rbacv1.RoleRef) []rbacv1.PolicyRule {
	switch ref.Kind {
	case "Role":
		if r, ok := z.roles[ns+"/"+ref.Name]; ok {
			return r.Rules
		}
	case "ClusterRole":
		if r, ok := z.clusterRoles[ref.Name]; ok {
			return r.Rules
		}
	}
	return nil
}

// RulesFor lists the rules the user's bindings grant in namespace ns
// (cluster-wide ones included), for SelfSubjectRulesReview.
func (z *Authorizer) RulesFor(u *request.User, ns string) []rbacv1.PolicyRule {
	z.mu.RLock()
	defer z.mu.RUnlock()
	a := authz.Attributes{User: u}
	var rules []rbacv1.PolicyRule
	for _, b := range z.clusterRoleBindings {
		if b.RoleRef.Kind == "ClusterRole" && z.bound(b.Subjects, a, "") {
			rules = append(rules, z.rulesOf("", b.RoleRef)...)
		}
	}
	if ns != "" {
		for _, b := range z.roleBindings {
			if b.Namespace == ns && z.bound(b.Subjects, a, ns) {
				rules = append(rules, z.rulesOf(ns, b.RoleRef)...)
			}
		}
	}
	return rules
}
