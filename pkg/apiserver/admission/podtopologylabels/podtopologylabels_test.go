package podtopologylabels

import (
	"context"
	"errors"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

type fakeNodes map[string]*corev1.Node

func (f fakeNodes) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	if name == "broken" {
		return nil, errors.New("storage is down")
	}
	n, ok := f[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
	}
	return n, nil
}

var (
	v1    = schema.GroupVersion{Version: "v1"}
	pods  = &registry.Resource{GroupVersion: v1, Name: "pods", Kind: "Pod", Namespaced: true}
	binds = &registry.Resource{GroupVersion: v1, Name: "bindings", Kind: "Binding", Namespaced: true}
	nodes = fakeNodes{
		"zoned": {ObjectMeta: metav1.ObjectMeta{Name: "zoned", Labels: map[string]string{
			corev1.LabelTopologyZone: "z1", corev1.LabelTopologyRegion: "r1",
			corev1.LabelHostname: "zoned", "topology.kubernetes.io/rack": "k7",
		}}},
		"plain": {ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{corev1.LabelHostname: "plain"}}},
	}
	zoneAndRegion = map[string]string{corev1.LabelTopologyZone: "z1", corev1.LabelTopologyRegion: "r1"}
)

func binding(kind, node string, labels map[string]string) *corev1.Binding {
	return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: labels}, Target: corev1.ObjectReference{Kind: kind, Name: node}}
}

func placed(node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: labels}, Spec: corev1.PodSpec{NodeName: node}}
}

func labelsOf(obj runtime.Object) map[string]string {
	switch o := obj.(type) {
	case *corev1.Binding:
		return o.Labels
	case *corev1.Pod:
		return o.Labels
	}
	return nil
}

func TestAdmit(t *testing.T) {
	tests := []struct {
		name string
		a    admission.Attributes
		want map[string]string
	}{
		// Only zone and region, as upstream's default configuration: not
		// the hostname, nor other topology.kubernetes.io labels.
		{"binding to a zoned node", admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "binding",
			Object: binding("Node", "zoned", nil)}, zoneAndRegion},
		{"node's value wins over the binding's", admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "binding",
			Object: binding("Node", "zoned", map[string]string{corev1.LabelTopologyZone: "mine", "app": "a"})},
			map[string]string{corev1.LabelTopologyZone: "z1", corev1.LabelTopologyRegion: "r1", "app": "a"}},
		{"node without topology labels", admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "binding",
			Object: binding("Node", "plain", nil)}, nil},
		{"node not registered", admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "binding",
			Object: binding("Node", "ghost", nil)}, nil},
		// Upstream looks up only targets of kind Node.
		{"target without a kind", admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "binding",
			Object: binding("", "zoned", nil)}, nil},
		// The legacy collection is the bindings resource, which upstream's
		// plugin does not handle.
		{"legacy bindings collection", admission.Attributes{Operation: admission.Create, Resource: binds,
			Object: binding("Node", "zoned", nil)}, nil},
		{"pod created on a node", admission.Attributes{Operation: admission.Create, Resource: pods,
			Object: placed("zoned", map[string]string{"app": "a"})},
			map[string]string{corev1.LabelTopologyZone: "z1", corev1.LabelTopologyRegion: "r1", "app": "a"}},
		{"pod created unplaced", admission.Attributes{Operation: admission.Create, Resource: pods, Object: placed("", nil)}, nil},
		{"pod updated", admission.Attributes{Operation: admission.Update, Resource: pods, Object: placed("zoned", nil)}, nil},
		{"pod status", admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "status", Object: placed("zoned", nil)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := New(nodes).Admit(context.Background(), &tt.a); err != nil {
				t.Fatal(err)
			}
			if got := labelsOf(tt.a.Object); !maps.Equal(got, tt.want) {
				t.Errorf("labels %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAdmitNodeLookupFails(t *testing.T) {
	a := &admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "binding", Object: binding("Node", "broken", nil)}
	if err := New(nodes).Admit(context.Background(), a); err == nil {
		t.Fatal("binding admitted although its node could not be read")
	}
}
