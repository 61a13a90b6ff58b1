package disruption

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// Scales reads the scale subresource of a pod's controller of a kind the
// controller has no cache of, as upstream does for StatefulSets' and custom
// workloads' pods. It goes through the dynamic client rather than
// client-go's scale client: every Scale version carries metadata.uid and
// spec.replicas, and the scale client would add its own schemes to the
// controller-manager.
type Scales struct {
	// Mapper turns an owner reference's kind into the resource to ask.
	Mapper apimeta.RESTMapper
	// Client gets <resource>/scale.
	Client dynamic.Interface
	// Discovery tells a missing object from a resource without /scale.
	Discovery discovery.ServerResourcesInterface
}

// scaleVersions are the group versions of the Scale kinds a scale
// subresource may serve (upstream's scale client's converter).
var scaleVersions = []schema.GroupVersion{
	{Group: "autoscaling", Version: "v1"},
	{Group: "extensions", Version: "v1beta1"},
	{Group: "apps", Version: "v1beta1"},
	{Group: "apps", Version: "v1beta2"},
}

// scaleOf returns the UID and desired replicas of the object ref names.
// An object that is gone (or another object under its name) is not found;
// a kind the apiserver does not serve, or serves without a scale
// subresource, is an error, which fails the budget's sync with its message.
func (s Scales) scaleOf(ctx context.Context, ref *metav1.OwnerReference, gv schema.GroupVersion, ns string) (types.UID, int32, bool, error) {
	mapping, err := s.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		// Already says which kind is not served, as upstream's message does.
		return "", 0, false, err
	}
	gr := mapping.Resource.GroupResource()
	scale, err := s.Client.Resource(mapping.Resource).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{}, "scale")
	if apierrors.IsNotFound(err) {
		// Not found is also what a resource without /scale answers.
		ok, err := s.implementsScale(mapping.Resource)
		if err != nil {
			return "", 0, false, err
		}
		if !ok {
			return "", 0, false, fmt.Errorf("%s does not implement the scale subresource", gr.String())
		}
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("get scale of %s %s/%s: %w", gr.String(), ns, ref.Name, err)
	}
	if scale.GetUID() != ref.UID {
		return "", 0, false, nil
	}
	replicas, _, err := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	if err != nil {
		return "", 0, false, fmt.Errorf("scale of %s %s/%s: %w", gr.String(), ns, ref.Name, err)
	}
	return scale.GetUID(), int32(replicas), true, nil
}

// implementsScale says whether discovery lists gvr's scale subresource
// serving a Scale kind.
func (s Scales) implementsScale(gvr schema.GroupVersionResource) (bool, error) {
	list, err := s.Discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name != gvr.Resource+"/scale" || r.Kind != "Scale" {
			continue
		}
		for _, v := range scaleVersions {
			if r.Group == v.Group && r.Version == v.Version {
				return true, nil
			}
		}
	}
	return false, nil
}
