package namespace

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Deletion turns a deleted namespace Terminating; it stays until the
// namespace controller has emptied it and removed the spec finalizers.
type Deletion struct{}

// GracePeriod implements registry.DeletionStrategy.
func (Deletion) GracePeriod(runtime.Object, *int64) int64 { return 0 }

// PrepareForDelete implements registry.DeletionStrategy.
func (Deletion) PrepareForDelete(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return false
	}
	ns.Status.Phase = corev1.NamespaceTerminating
	return len(ns.Spec.Finalizers) > 0
}
