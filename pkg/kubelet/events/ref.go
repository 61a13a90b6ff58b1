// Package events holds what the kubelet's events point at: the pod, or one
// container in it.
package events

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/reference"
)

// ContainerRef is what an event about container name of pod is recorded
// against: the pod, with the container's field path, so that `kubectl
// describe` prefixes the message with "spec.containers{name}" as it does for
// upstream kubelets' events, and an init container's events say so.
func ContainerRef(pod *v1.Pod, name string) runtime.Object {
	path := "spec.containers{" + name + "}"
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			path = "spec.initContainers{" + name + "}"
			break
		}
	}
	ref, err := reference.GetPartialReference(scheme.Scheme, pod, path)
	if err != nil {
		// Only a pod of a kind the scheme does not know fails here; the
		// event still belongs to it.
		return pod
	}
	return ref
}
