// Package replicaset holds the rules for apps/v1 ReplicaSets: defaults,
// validation, the status and scale subresources and the table columns.
package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/pod"
)

// Resource describes replicasets for the generic REST handler; c is the clock
// that table ages are measured against.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: appsv1.SchemeGroupVersion,
		Name:         "replicasets",
		Singular:     "replicaset",
		Kind:         "ReplicaSet",
		Namespaced:   true,
		ShortNames:   []string{"rs"},
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &appsv1.ReplicaSet{} },
		NewList:      func() runtime.Object { return &appsv1.ReplicaSetList{} },
		Strategy:     strategy{},
		Status:       statusStrategy{},
		Scale:        scaler{},
		Table:        table(c),
	}
}

type strategy struct{}

func (strategy) Default(obj runtime.Object) {
	rs := obj.(*appsv1.ReplicaSet)
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr.To[int32](1)
	}
	pod.DefaultPodSpec(&rs.Spec.Template.Spec)
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	rs := obj.(*appsv1.ReplicaSet)
	rs.Status = appsv1.ReplicaSetStatus{}
	rs.Generation = 1
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	rs := obj.(*appsv1.ReplicaSet)
	return validateSpec(&rs.Spec, field.NewPath("spec"))
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newRS, oldRS := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
	newRS.Status = oldRS.Status
	// Controllers compare status.observedGeneration with generation to know
	// whether they have acted on the latest spec, so only spec changes count.
	newRS.Generation = registry.NextGeneration(oldRS.Generation, !apiequality.Semantic.DeepEqual(newRS.Spec, oldRS.Spec))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	newRS, oldRS := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
	specPath := field.NewPath("spec")
	allErrs := validateSpec(&newRS.Spec, specPath)
	// apps/v1 made the selector immutable: changing it would orphan the pods.
	if !apiequality.Semantic.DeepEqual(newRS.Spec.Selector, oldRS.Spec.Selector) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("selector"), newRS.Spec.Selector, "field is immutable"))
	}
	return allErrs
}

type statusStrategy struct{}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newRS, oldRS := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
	newRS.Spec = oldRS.Spec
	newRS.Generation = oldRS.Generation
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return validateStatus(&obj.(*appsv1.ReplicaSet).Status, field.NewPath("status"))
}

type scaler struct{}

func (scaler) Scale(obj runtime.Object) (spec, status int32, selector string) {
	rs := obj.(*appsv1.ReplicaSet)
	return ptr.Deref(rs.Spec.Replicas, 1), rs.Status.Replicas, registry.ScaleSelector(rs.Spec.Selector)
}

func (scaler) SetReplicas(obj runtime.Object, replicas int32) {
	obj.(*appsv1.ReplicaSet).Spec.Replicas = ptr.To(replicas)
}
