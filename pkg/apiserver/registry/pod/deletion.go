package pod

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Deletion gives pods graceful deletion: the kubelet stops the containers
// within the grace period, then deletes the pod for good.
type Deletion struct{}

// GracePeriod implements registry.DeletionStrategy.
func (Deletion) GracePeriod(obj runtime.Object, requested *int64) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	return GracePeriodFor(pod, requested)
}

// PrepareForDelete implements registry.DeletionStrategy: pods wait for no
// spec finalizer.
func (Deletion) PrepareForDelete(runtime.Object) bool { return false }
