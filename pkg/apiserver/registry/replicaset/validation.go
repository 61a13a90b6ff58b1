package replicaset

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

func validateSpec(spec *appsv1.ReplicaSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(ptr.Deref(spec.Replicas, 0)), fldPath.Child("replicas"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)

	return append(allErrs, validation.ReplicatedPods(spec.Selector, &spec.Template, "replicaset", fldPath)...)
}

func validateStatus(status *appsv1.ReplicaSetStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	counts := []struct {
		name  string
		value int32
	}{
		{"replicas", status.Replicas},
		{"fullyLabeledReplicas", status.FullyLabeledReplicas},
		{"readyReplicas", status.ReadyReplicas},
		{"availableReplicas", status.AvailableReplicas},
	}
	for _, c := range counts {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(c.value), fldPath.Child(c.name))...)
	}
	// Upstream's order, which differs from a Deployment's (there
	// observedGeneration comes first): users read the errors in it.
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(status.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(ptr.Deref(status.TerminatingReplicas, 0)), fldPath.Child("terminatingReplicas"))...)
	const msg = "cannot be greater than status.replicas"
	for _, c := range counts[1:4] {
		if c.value > status.Replicas {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(c.name), c.value, msg))
		}
	}
	if status.AvailableReplicas > status.ReadyReplicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("availableReplicas"), status.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return allErrs
}
