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
	pods  PodReader
}

// PodReader reads pods from storage. The graph follows a watch, so it may
// not have seen a pod the kubelet itself just saw through its own watch;
// before refusing, the authorizer checks storage, so that a kubelet never
// gets a 403 for a pod that is bound to it.
type PodReader interface {
	// GetPod returns the pod, or nil when there is none.
	GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error)
	// ListPods returns the pods of a namespace.
	ListPods(ctx context.Context, ns string) ([]*corev1.Pod, error)
}

// New returns an authorizer over graph; pods, if not nil, confirms what
// the graph does not know yet.
func New(g *Graph, pods PodReader) *Authorizer { return &Authorizer{graph: g, pods: pods} }

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

// podOnNode reports whether pod ns/name is bound to node, or does not
// exist at all.
func (z *Authorizer) podOnNode(ctx context.Context, node, ns, name string) (bool, error) {
	if z.graph.PodOnNode(node, ns, name) {
		return true, nil
	}
	if z.pods == nil || name == "" {
		return false, nil
	}
	p, err := z.pods.GetPod(ctx, ns, name)
	switch {
	case err != nil:
		return false, err
	case p == nil:
		// Gone: let the request through to its 404, which kubelets take
		// as "already deleted" (a 403 would make them retry forever).
		// It tells a node no more than upstream's, which may read every pod.
		return true, nil
	}
	return p.Spec.NodeName == node, nil
}

// nodeUses reports whether a pod bound to node uses ref.
func (z *Authorizer) nodeUses(ctx context.Context, node string, ref Ref) (bool, error) {
	if z.graph.NodeUses(node, ref) {
		return true, nil
	}
	if z.pods == nil || ref.Name == "" {
		return false, nil
	}
	pods, err := z.pods.ListPods(ctx, ref.Namespace)
	if err != nil {
		return false, err
	}
	for _, p := range pods {
		if p.Spec.NodeName == node && slices.Contains(PodRefs(p), ref) {
			return true, nil
		}
	}
	return false, nil
}

// Authorize implements authz.Authorizer.
func (z *Authorizer) Authorize(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	node, ok := NodeName(a)
	if !ok || !a.ResourceRequest {
		return authz.NoOpinion, "", nil
	}
	noRelation := fmt.Sprintf("no relationship found between node '%s' and this object", node)
	related := func(ok bool, err error) (authz.Decision, string, error) {
		if ok {
			return authz.Allow, "", nil
		}
		return authz.NoOpinion, noRelation, err
	}
	own := func(ok bool, why string) (authz.Decision, string, error) {
		if ok {
			return authz.Allow, "", nil
		}
		return authz.NoOpinion, why, nil
	}
	switch {
	case a.APIGroup == "" && a.Resource == "pods":
		switch {
		case a.Subresource == "" && oneOf(a.Verb, "list", "watch") && a.Name == "":
			// kubelets list and watch with spec.nodeName=<me>; upstream
			// grants this cluster-wide as well.
			return authz.Allow, "", nil
		case a.Subresource == "" && oneOf(a.Verb, "get", "list", "watch"):
			return related(z.podOnNode(ctx, node, a.Namespace, a.Name))
		case a.Subresource == "" && oneOf(a.Verb, "create", "delete"),
			a.Subresource == "eviction" && a.Verb == "create":
			// Mirror pods, and evicting the pods it runs: as upstream, the
			// NodeRestriction admission plugin limits these to pods bound
			// to the node, which only it can see (the pod in the body, the
			// pod as it is when the request is admitted).
			return authz.Allow, "", nil
		case a.Subresource == "status" && a.Verb == "get":
			return related(z.podOnNode(ctx, node, a.Namespace, a.Name))
		case a.Subresource == "status" && oneOf(a.Verb, "update", "patch"):
			// Limited to its own pods by NodeRestriction, as upstream.
			return authz.Allow, "", nil
		}
	case a.APIGroup == "" && oneOf(a.Resource, "secrets", "configmaps", "serviceaccounts", "persistentvolumeclaims"):
		ref := Ref{Resource: a.Resource, Namespace: a.Namespace, Name: a.Name}
		switch {
		case a.Subresource == "" && a.Name != "" && oneOf(a.Verb, "get", "list", "watch"):
			// list and watch narrowed to one name by a field selector
			// arrive here with the name set: kubelets watch single secrets.
			return related(z.nodeUses(ctx, node, ref))
		case a.Resource == "serviceaccounts" && a.Subresource == "token" && a.Verb == "create":
			// Projected service-account tokens for its pods.
			return related(z.nodeUses(ctx, node, ref))
		}
	case a.APIGroup == "" && a.Resource == "nodes":
		switch {
		case a.Subresource == "" && oneOf(a.Verb, "get", "list", "watch"):
			// Every node reads every Node, for routes to their pod CIDRs.
			return authz.Allow, "", nil
		case a.Subresource == "" && a.Verb == "create":
			// The name is in the body; NodeRestriction admission checks it.
			return authz.Allow, "", nil
		case a.Subresource == "" && oneOf(a.Verb, "update", "patch", "delete"):
			return own(a.Name == node, "can only modify its own Node")
		case a.Subresource == "status" && oneOf(a.Verb, "get", "update", "patch"):
			return own(a.Name == node, "can only modify its own Node")
		}
	case a.APIGroup == "" && a.Resource == "services" && a.Subresource == "":
		// Service environment variables of the pods it runs.
		if oneOf(a.Verb, "get", "list", "watch") {
			return authz.Allow, "", nil
		}
	case a.APIGroup == "coordination.k8s.io" && a.Resource == "leases" && a.Subresource == "":
		if a.Namespace != corev1.NamespaceNodeLease {
			break
		}
		switch {
		case a.Verb == "create":
			return authz.Allow, "", nil
		case oneOf(a.Verb, "get", "update", "patch", "delete"):
			return own(a.Name == node, "can only access its own Lease")
		}
	case (a.APIGroup == "" || a.APIGroup == "events.k8s.io") && a.Resource == "events" && a.Subresource == "":
		if oneOf(a.Verb, "create", "update", "patch") {
			return authz.Allow, "", nil
		}
	case a.Verb == "create" && ((a.APIGroup == "authorization.k8s.io" && a.Resource == "subjectaccessreviews") ||
		(a.APIGroup == "authentication.k8s.io" && a.Resource == "tokenreviews")):
		// The kubelet asks the apiserver who may use its own API, as
		// upstream's delegated authentication and authorization.
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
}
