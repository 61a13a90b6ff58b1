// Package deployment holds the rules for apps/v1 Deployments: defaults,
// validation, the status and scale subresources and the table columns.
package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/pod"
)

// Resource describes deployments for the generic REST handler; c is the clock
// that table ages are measured against.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: appsv1.SchemeGroupVersion,
		Name:         "deployments",
		Singular:     "deployment",
		Kind:         "Deployment",
		Namespaced:   true,
		ShortNames:   []string{"deploy"},
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &appsv1.Deployment{} },
		NewList:      func() runtime.Object { return &appsv1.DeploymentList{} },
		Strategy:     strategy{},
		Status:       statusStrategy{},
		Scale:        scaler{},
		Table:        table(c),
	}
}

type strategy struct{}

func (strategy) Default(obj runtime.Object) {
	d := obj.(*appsv1.Deployment)
	spec := &d.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.Strategy.Type == "" {
		spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if spec.Strategy.RollingUpdate == nil {
			spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if spec.Strategy.RollingUpdate.MaxUnavailable == nil {
			spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}
		if spec.Strategy.RollingUpdate.MaxSurge == nil {
			spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%"))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if spec.ProgressDeadlineSeconds == nil {
		spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	pod.DefaultPodSpec(&spec.Template.Spec)
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	d := obj.(*appsv1.Deployment)
	d.Status = appsv1.DeploymentStatus{}
	d.Generation = 1
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validateSpec(&obj.(*appsv1.Deployment).Spec, field.NewPath("spec"))
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newD, oldD := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	newD.Status = oldD.Status
	// As upstream, annotations count too: the controller copies them onto the
	// new replicaset, and `kubectl rollout status` waits for observedGeneration.
	changed := !apiequality.Semantic.DeepEqual(newD.Spec, oldD.Spec) ||
		!apiequality.Semantic.DeepEqual(newD.Annotations, oldD.Annotations)
	newD.Generation = registry.NextGeneration(oldD.Generation, changed)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	newD, oldD := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	specPath := field.NewPath("spec")
	allErrs := validateSpec(&newD.Spec, specPath)
	// apps/v1 made the selector immutable: changing it would orphan the
	// replicasets and their pods.
	if !apiequality.Semantic.DeepEqual(newD.Spec.Selector, oldD.Spec.Selector) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("selector"), newD.Spec.Selector, "field is immutable"))
	}
	return allErrs
}

type statusStrategy struct{}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newD, oldD := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	newD.Spec = oldD.Spec
	newD.Generation = oldD.Generation
	// Upstream keeps labels too on deployments/status: they feed selectors of
	// other objects and belong to the main endpoint.
	newD.Labels = oldD.Labels
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	newD, oldD := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	statusPath := field.NewPath("status")
	allErrs := validateStatus(&newD.Status, statusPath)
	// Dropping the count is decrementing it too, as upstream: the
	// controller would then hash templates as if it had never collided.
	if old, cur := oldD.Status.CollisionCount, newD.Status.CollisionCount; old != nil && (cur == nil || *cur < *old) {
		allErrs = append(allErrs, field.Invalid(statusPath.Child("collisionCount"), ptr.Deref(cur, 0), "cannot be decremented"))
	}
	return allErrs
}

type scaler struct{}

func (scaler) Scale(obj runtime.Object) (spec, status int32, selector string) {
	d := obj.(*appsv1.Deployment)
	return ptr.Deref(d.Spec.Replicas, 1), d.Status.Replicas, registry.ScaleSelector(d.Spec.Selector)
}

func (scaler) SetReplicas(obj runtime.Object, replicas int32) {
	obj.(*appsv1.Deployment).Spec.Replicas = ptr.To(replicas)
}
