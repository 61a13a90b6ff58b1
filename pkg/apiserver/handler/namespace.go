package handler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// finalizeNamespace keeps everything of the stored namespace but the spec
// finalizers the request sets: PUT namespaces/{name}/finalize is how the
// namespace controller says it has emptied a terminating namespace.
func finalizeNamespace(obj, cur runtime.Object) field.ErrorList {
	ns, ok1 := obj.(*corev1.Namespace)
	old, ok2 := cur.(*corev1.Namespace)
	if !ok1 || !ok2 {
		return field.ErrorList{field.InternalError(field.NewPath(""), errNotNamespace)}
	}
	finalizers := ns.Spec.Finalizers
	*ns = *old.DeepCopy()
	ns.Spec.Finalizers = finalizers
	var errs field.ErrorList
	for i, f := range finalizers {
		if f == "" {
			errs = append(errs, field.Required(field.NewPath("spec", "finalizers").Index(i), ""))
		}
	}
	return errs
}

type constErr string

func (e constErr) Error() string { return string(e) }

const errNotNamespace = constErr("finalize is only served for namespaces")
