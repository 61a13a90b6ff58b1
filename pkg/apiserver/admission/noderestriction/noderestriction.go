// Package noderestriction limits what a kubelet, authenticated as
// system:node:<name> in group system:nodes, may write: its own Node (without
// control-plane labels or taint changes), the status of pods bound to it,
// mirror pods for itself, deletion and eviction of pods bound to it, and its
// own Lease.
// Authorization decides which resources a node may touch at all; this
// plugin decides which objects.
package noderestriction

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

const (
	nodeUserPrefix   = "system:node:"
	nodesGroup       = "system:nodes"
	mirrorAnnotation = "kubernetes.io/config.mirror"
)

// Nodes reads a node; a missing one is an apierrors NotFound.
type Nodes interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// Pods reads a pod; a missing one is nil, without an error.
type Pods interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// Plugin is the NodeRestriction admission plugin.
type Plugin struct {
	nodes Nodes
	pods  Pods
}

// New returns the plugin; nodes confirms the node a mirror pod names as
// its owner, pods the node of a pod being evicted.
func New(nodes Nodes, pods Pods) *Plugin { return &Plugin{nodes: nodes, pods: pods} }

// Name implements admission.Validator.
func (p *Plugin) Name() string { return "NodeRestriction" }

// NodeName returns the node a user is, or "" when it is not a node.
func NodeName(u *request.User) string {
	if u == nil {
		return ""
	}
	name, ok := strings.CutPrefix(u.Name, nodeUserPrefix)
	if !ok || name == "" {
		return ""
	}
	for _, g := range u.Groups {
		if g == nodesGroup {
			return name
		}
	}
	return ""
}

// Validate implements admission.Validator.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	node := NodeName(a.User)
	if node == "" || a.Resource == nil {
		return nil
	}
	gr := a.Resource.GroupVersionResource().GroupResource()
	var err error
	switch {
	case gr.Group == "" && gr.Resource == "pods":
		err = p.pod(ctx, node, a)
	case gr.Group == "" && gr.Resource == "nodes":
		err = p.node(node, a)
	case gr.Group == coordinationv1.GroupName && gr.Resource == "leases":
		if a.Namespace != corev1.NamespaceNodeLease {
			err = fmt.Errorf("can only access leases in the %q namespace", corev1.NamespaceNodeLease)
		} else if a.Name != node {
			err = fmt.Errorf("can only access node lease with the same name as the requesting node")
		}
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		// A lookup's own answer (the node is not found), as upstream's.
		return err
	}
	if err != nil {
		return apierrors.NewForbidden(gr, a.Name, err)
	}
	return nil
}

func nodeNameOf(obj runtime.Object) string {
	if pod, ok := obj.(*corev1.Pod); ok {
		return pod.Spec.NodeName
	}
	return ""
}

func labelsOf(obj runtime.Object) map[string]string {
	if pod, ok := obj.(*corev1.Pod); ok {
		return pod.Labels
	}
	return nil
}

func (p *Plugin) pod(ctx context.Context, node string, a *admission.Attributes) error {
	switch {
	case a.Subresource == "status":
		if a.Operation != admission.Update {
			return fmt.Errorf("unexpected operation %q", a.Operation)
		}
		if nodeNameOf(a.OldObject) != node {
			return fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node)
		}
		// The status endpoint keeps the labels it is sent: a kubelet could
		// otherwise move its pods into any Service's or controller's
		// selection.
		if !labels.Equals(labelsOf(a.OldObject), labelsOf(a.Object)) {
			return fmt.Errorf("node %q cannot update labels through pod status", node)
		}
		return nil
	case a.Subresource == "eviction":
		return p.eviction(ctx, node, a)
	case a.Subresource != "":
		// Binding included: a kubelet places no pods, the scheduler does.
		return fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource)
	}
	switch a.Operation {
	case admission.Create:
		pod, ok := a.Object.(*corev1.Pod)
		if !ok {
			return nil
		}
		if _, mirror := pod.Annotations[mirrorAnnotation]; !mirror {
			return fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", mirrorAnnotation, node)
		}
		if pod.Spec.NodeName != node {
			return fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", node)
		}
		return p.mirrorPod(ctx, node, pod)
	case admission.Delete:
		if nodeNameOf(a.OldObject) != node {
			return fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", node)
		}
		return nil
	default:
		return fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, node)
	}
}

// eviction lets a node evict only pods bound to itself, as upstream: the
// pod is the one the URL names, else the one the Eviction names.
func (p *Plugin) eviction(ctx context.Context, node string, a *admission.Attributes) error {
	if a.Operation != admission.Create {
		return fmt.Errorf("unexpected operation %s", a.Operation)
	}
	ev, ok := a.Object.(*policyv1.Eviction)
	if !ok {
		return fmt.Errorf("unexpected type %T", a.Object)
	}
	name := a.Name
	if name == "" {
		name = ev.Name
	}
	if name == "" {
		return errors.New("could not determine pod from request data")
	}
	pod, err := p.pods.GetPod(ctx, a.Namespace, name)
	if err != nil {
		return fmt.Errorf("get pod %s/%s: %w", a.Namespace, name, err)
	}
	if pod == nil {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	}
	if pod.Spec.NodeName != node {
		return fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", node)
	}
	return nil
}

func (p *Plugin) node(node string, a *admission.Attributes) error {
	if a.Name != node {
		return fmt.Errorf("node %q is not allowed to modify node %q", node, a.Name)
	}
	newNode, _ := a.Object.(*corev1.Node)
	oldNode, _ := a.OldObject.(*corev1.Node)
	switch a.Operation {
	case admission.Create:
		if newNode == nil {
			return nil
		}
		if bad := forbiddenLabels(newNode.Labels, nil); len(bad) > 0 {
			return fmt.Errorf("node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", "))
		}
	case admission.Update:
		if newNode == nil || oldNode == nil {
			return nil
		}
		if bad := forbiddenLabels(newNode.Labels, oldNode.Labels); len(bad) > 0 {
			return fmt.Errorf("node %q is not allowed to modify labels: %s", node, strings.Join(bad, ", "))
		}
		// A node that could drop or change its taints could draw pods meant
		// to stay away. Upstream refuses any change; adding taints is let
		// through here because our kubelet adds its configured taints to an
		// existing untainted Node when it restarts.
		if a.Subresource == "" && !keepsTaints(newNode.Spec.Taints, oldNode.Spec.Taints) {
			return fmt.Errorf("node %q is not allowed to modify taints", node)
		}
	}
	return nil
}

// kubeletLabels are the kubernetes.io labels a kubelet sets on itself.
var kubeletLabels = map[string]bool{
	"kubernetes.io/hostname": true, "kubernetes.io/arch": true, "kubernetes.io/os": true,
	"beta.kubernetes.io/instance-type": true, "node.kubernetes.io/instance-type": true,
	"beta.kubernetes.io/arch": true, "beta.kubernetes.io/os": true,
	"failure-domain.beta.kubernetes.io/zone": true, "failure-domain.beta.kubernetes.io/region": true,
	"topology.kubernetes.io/zone": true, "topology.kubernetes.io/region": true,
}

// kubeletLabelDomains are namespaces of labels kubelets may set freely.
var kubeletLabelDomains = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}

func domainOf(label string) string {
	if i := strings.Index(label, "/"); i >= 0 {
		return label[:i]
	}
	return ""
}

func inDomain(domain, base string) bool {
	return domain == base || strings.HasSuffix(domain, "."+base)
}

func isKubeletLabel(label string) bool {
	if kubeletLabels[label] {
		return true
	}
	d := domainOf(label)
	for _, base := range kubeletLabelDomains {
		if inDomain(d, base) {
			return true
		}
	}
	return false
}

// forbiddenLabels lists the labels of newLabels a node may not set or
// change (compared with oldLabels), and those it may not remove, sorted.
func forbiddenLabels(newLabels, oldLabels map[string]string) []string {
	bad := map[string]bool{}
	forbidden := func(label string) bool {
		d := domainOf(label)
		if inDomain(d, "node-restriction.kubernetes.io") {
			return true
		}
		return (inDomain(d, "kubernetes.io") || inDomain(d, "k8s.io")) && !isKubeletLabel(label)
	}
	for k, v := range newLabels {
		if old, ok := oldLabels[k]; ok && old == v {
			continue
		}
		if forbidden(k) {
			bad[k] = true
		}
	}
	for k := range oldLabels {
		if _, ok := newLabels[k]; !ok && forbidden(k) {
			bad[k] = true
		}
	}
	out := make([]string, 0, len(bad))
	for k := range bad {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// keepsTaints reports whether every old taint is still there unchanged.
func keepsTaints(newTaints, oldTaints []corev1.Taint) bool {
	for _, o := range oldTaints {
		found := false
		for _, n := range newTaints {
			if apiequality.Semantic.DeepEqual(o, n) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
