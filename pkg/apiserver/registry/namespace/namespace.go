// Package namespace holds the Namespace strategy: the kubernetes finalizer
// and Active phase on create, the metadata.name label, status and finalize
// subresources, and the table.
package namespace

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes namespaces; c is the clock the AGE column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "namespaces",
		Singular:     "namespace",
		Kind:         "Namespace",
		ShortNames:   []string{"ns"},
		New:          func() runtime.Object { return &corev1.Namespace{} },
		NewList:      func() runtime.Object { return &corev1.NamespaceList{} },
		Strategy:     strategy{},
		Status:       statusStrategy{},
		Table: tableutil.New([]metav1.TableColumnDefinition{
			tableutil.NameColumn(),
			tableutil.Column("Status", "string", 0, "The status of the namespace"),
			tableutil.AgeColumn(),
		}, func(ns *corev1.Namespace) []interface{} {
			return []interface{}{ns.Name, string(ns.Status.Phase), tableutil.Age(ns.CreationTimestamp, c.Now())}
		}),
		Attrs:        Attrs,
		ValidateName: apimachineryvalidation.ValidateNamespaceName,
		Finalize:     FinalizeStrategy(),
		Deletion:     Deletion{},
		// As upstream: namespaces are deleted one by one.
		NoDeleteCollection: true,
		// As upstream's namespaces: a DELETE answers with the namespace.
		ReturnDeletedObject: true,
		ExtraSubresources: []registry.Subresource{
			{Name: "finalize", Kind: "Namespace", Verbs: []string{"update"}},
		},
	}
}

// Attrs exposes status.phase to field selectors.
func Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, nil, fmt.Errorf("not a namespace: %T", obj)
	}
	return labels.Set(ns.Labels), fields.Set{
		"metadata.name": ns.Name,
		"status.phase":  string(ns.Status.Phase),
	}, nil
}

type strategy struct{}

// Default sets the immutable kubernetes.io/metadata.name label that lets
// namespace selectors select by name, and phase Active.
func (strategy) Default(obj runtime.Object) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	nameLabel(ns)
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// PrepareForCreate makes the namespace Active and adds the kubernetes
// finalizer, which the namespace controller removes once the content is gone.
// It is not a default: the controller must be able to remove it later.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	nameLabel(ns)
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return registry.WrongType("namespace", obj)
	}
	return Validate(ns)
}

// PrepareForUpdate: finalizers change only through /finalize, status only
// through /status.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, ok1 := obj.(*corev1.Namespace)
	o, ok2 := old.(*corev1.Namespace)
	if ok1 && ok2 {
		ns.Spec.Finalizers = o.Spec.Finalizers
		ns.Status = o.Status
		nameLabel(ns)
	}
}

// nameLabel sets kubernetes.io/metadata.name to the name. It runs at every
// step that can see a (possibly generated) name, as upstream canonicalizes.
func nameLabel(ns *corev1.Namespace) {
	if ns.Name == "" {
		return
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return registry.WrongType("namespace", obj)
	}
	return Validate(ns)
}

// Validate checks the name label and the finalizer names. The name itself
// (an RFC 1123 label: it is also part of service DNS names) is checked by
// the handler through Resource.ValidateName.
func Validate(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	if v, ok := ns.Labels[corev1.LabelMetadataName]; ok && v != ns.Name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "labels").Key(corev1.LabelMetadataName), v,
			"must match metadata.name"))
	}
	fp := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, finalizerName(string(f), fp.Index(i))...)
	}
	return errs
}

// finalizerName accepts "kubernetes" and domain-qualified names.
func finalizerName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validation.Messages(fldPath, name, utilvalidation.IsQualifiedName(name))...)
	if len(errs) == 0 {
		errs = validation.KubeFinalizerName(name, fldPath, string(corev1.FinalizerKubernetes))
	}
	return errs
}

type statusStrategy struct{}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, ok1 := obj.(*corev1.Namespace)
	o, ok2 := old.(*corev1.Namespace)
	if ok1 && ok2 {
		ns.Spec = o.Spec
	}
}

// ValidateUpdate ties the phase to deletion: Active while alive,
// Terminating once deleted.
func (statusStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return registry.WrongType("namespace", obj)
	}
	phase := field.NewPath("status", "phase")
	if ns.DeletionTimestamp == nil {
		if ns.Status.Phase != corev1.NamespaceActive {
			return field.ErrorList{field.Invalid(phase, ns.Status.Phase,
				"A namespace may only be in active status if it does not have a deletion timestamp.")}
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		return field.ErrorList{field.Invalid(phase, ns.Status.Phase,
			"A namespace may only be in terminating status if it has a deletion timestamp.")}
	}
	return nil
}

// FinalizeStrategy is the rule set of PUT namespaces/{name}/finalize, by
// which the namespace controller removes the kubernetes finalizer: only
// spec.finalizers may change.
func FinalizeStrategy() registry.StatusStrategy { return finalizeStrategy{} }

type finalizeStrategy struct{}

func (finalizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, ok1 := obj.(*corev1.Namespace)
	o, ok2 := old.(*corev1.Namespace)
	if !ok1 || !ok2 {
		return
	}
	ns.Status = o.Status
}

func (finalizeStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return registry.WrongType("namespace", obj)
	}
	var errs field.ErrorList
	fp := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, finalizerName(string(f), fp.Index(i))...)
	}
	return errs
}
