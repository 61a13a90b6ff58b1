// Package podtopologylabels copies the zone and region labels of a pod's
// node onto the pod when it is placed (upstream's PodTopologyLabels, on by
// default since 1.35), so that the pod can read where it runs through the
// downward API.
package podtopologylabels

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
)

// Nodes reads a node; a missing one is an apierrors NotFound. The node may
// be shared with other readers: do not modify it.
type Nodes interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// copied are the node labels upstream's default configuration copies;
// other topology.kubernetes.io labels stay on the node.
var copied = []string{corev1.LabelTopologyZone, corev1.LabelTopologyRegion}

// Plugin is the PodTopologyLabels admission plugin.
type Plugin struct {
	nodes Nodes
}

// New returns the plugin reading nodes from nodes.
func New(nodes Nodes) *Plugin { return &Plugin{nodes: nodes} }

// Name implements admission.Mutator.
func (p *Plugin) Name() string { return "PodTopologyLabels" }

// Admit implements admission.Mutator. It labels the Binding, not the pod,
// on pods/binding: the binding's labels are what reach the pod. The legacy
// bindings collection is another resource, which upstream leaves alone.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Operation != admission.Create || a.Resource == nil || a.Resource.GroupVersion.Group != "" || a.Resource.Name != "pods" {
		return nil
	}
	switch a.Subresource {
	case "":
		pod, ok := a.Object.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("expected Pod but got %T", a.Object)
		}
		// A pod created already placed (a mirror pod) is labelled now;
		// any other gets its labels from its binding.
		if pod.Spec.NodeName == "" {
			return nil
		}
		return p.label(ctx, &pod.Labels, pod.Spec.NodeName)
	case "binding":
		b, ok := a.Object.(*corev1.Binding)
		if !ok {
			return fmt.Errorf("expected Binding but got %T", a.Object)
		}
		// As upstream, only a target of kind Node (what schedulers send)
		// is looked up; validation lets an empty kind through too.
		if b.Target.Kind != "Node" {
			return nil
		}
		return p.label(ctx, &b.Labels, b.Target.Name)
	}
	return nil
}

// label sets node's topology labels in *labels, over any the object has.
// A node that does not exist labels nothing: the binding of a pod to a
// node yet to register goes on as it did before the plugin.
func (p *Plugin) label(ctx context.Context, labels *map[string]string, node string) error {
	n, err := p.nodes.GetNode(ctx, node)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("topology labels of node %s: %w", node, err)
	}
	for _, k := range copied {
		v, ok := n.Labels[k]
		if !ok {
			continue
		}
		if *labels == nil {
			*labels = map[string]string{}
		}
		(*labels)[k] = v
	}
	return nil
}
