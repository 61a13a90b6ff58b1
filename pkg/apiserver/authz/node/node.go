package node

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
)

const (
	// NodesGroup is the group of every kubelet's identity.
	NodesGroup = "system:nodes"
	// NodeUserPrefix starts a kubelet's user name: system:node:<name>.
	NodeUserPrefix = "system:node:"
)

// NodeName returns the node a user speaks for, if it is a kubelet.
func NodeName(a authz.Attributes) (string, bool) {
	if a.User == nil || !slices.Contains(a.User.Groups, NodesGroup) || !strings.HasPrefix(a.User.Name, NodeUserPrefix) {
		return "", false
	}
	n := strings.TrimPrefix(a.User.Name, NodeUserPrefix)
	return n, n != ""
}

// Authorizer is the Node mode. It allows a kubelet what its node needs,
// and has no opinion on anything else (so RBAC may still grant more when an
// administrator binds a node to a role, as upstream).
type Authorizer struct {
	graph *Graph
}

// New returns an authorizer over graph.
func New(g *Graph) *Authorizer { return &Authorizer{graph: g} }

// Start follows pods into the graph until ctx ends; it returns after the
// first list.
func (z *Authorizer) Start(ctx context.Context, clk clock.Clock, pods authz.Source) error {
	synced := make(chan struct{})
	go authz.Follow(ctx, clk, pods, z.graph, synced)
	select {
	case <-synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("node authorizer: waiting for pods: %w", ctx.Err())
	}
}

func oneOf(verb string, verbs ...string) bool { return slices.Contains(verbs, verb) }

// Authorize implements authz.Authorizer.
func (z *Authorizer) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	node, ok := NodeName(a)
	if !ok || !a.ResourceRequest {
		return authz.NoOpinion, "", nil
	}
	allow := func(ok bool, why string) (authz.Decision, string, error) {
		if ok {
			return authz.Allow, "", nil
		}
		return authz.NoOpinion, why, nil
	}
	noRelation := fmt.Sprintf("no relationship found between node '%s' and this object", node)
	switch {
	case a.APIGroup == "" && a.Resource == "pods":
		switch {
		case a.Subresource == "" && oneOf(a.Verb, "list", "watch"):
			// kubelets list and watch with spec.nodeName=<me>; upstream
			// grants this cluster-wide as well.
			return authz.Allow, "", nil
		case a.Subresource == "" && oneOf(a.Verb, "get", "delete"):
			return allow(z.graph.PodOnNode(node, a.Namespace, a.Name), noRelation)
		case a.Subresource == "status" && oneOf(a.Verb, "get", "update", "patch"):
			return allow(z.graph.PodOnNode(node, a.Namespace, a.Name), noRelation)
		}
	case a.APIGroup == "" && oneOf(a.Resource, "secrets", "configmaps", "serviceaccounts", "persistentvolumeclaims"):
		uses := func() bool {
			return z.graph.NodeUses(node, Ref{Resource: a.Resource, Namespace: a.Namespace, Name: a.Name})
		}
		switch {
		case a.Subresource == "" && a.Verb == "get":
			return allow(uses(), noRelation)
		case a.Resource == "serviceaccounts" && a.Subresource == "token" && a.Verb == "create":
			// Projected service-account tokens for its pods.
			return allow(uses(), noRelation)
		}
	case a.APIGroup == "" && a.Resource == "nodes":
		switch {
		case a.Subresource == "" && oneOf(a.Verb, "get", "list", "watch"):
			// Every node reads every Node, for routes to their pod CIDRs.
			return authz.Allow, "", nil
		case a.Subresource == "" && a.Verb == "create":
			// The name is in the body; NodeRestriction admission checks it.
			return authz.Allow, "", nil
		case oneOf(a.Subresource, "", "status") && oneOf(a.Verb, "get", "update", "patch"):
			return allow(a.Name == node, "can only modify its own Node")
		}
	case a.APIGroup == "coordination.k8s.io" && a.Resource == "leases" && a.Subresource == "":
		if a.Namespace != corev1.NamespaceNodeLease {
			break
		}
		switch {
		case a.Verb == "create":
			return authz.Allow, "", nil
		case oneOf(a.Verb, "get", "update", "patch"):
			return allow(a.Name == node, "can only access its own Lease")
		}
	case (a.APIGroup == "" || a.APIGroup == "events.k8s.io") && a.Resource == "events" && a.Subresource == "":
		if oneOf(a.Verb, "create", "update", "patch") {
			return authz.Allow, "", nil
		}
	}
	return authz.NoOpinion, "", nil
}
