package replicaset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

func validateSpec(spec *appsv1.ReplicaSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(ptr.Deref(spec.Replicas, 0)), fldPath.Child("replicas"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)

	selPath := fldPath.Child("selector")
	if spec.Selector == nil {
		return append(allErrs, field.Required(selPath, ""))
	}
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
	if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		allErrs = append(allErrs, field.Invalid(selPath, spec.Selector, "empty selector is invalid for replicaset"))
	}
	selector, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil {
		// Already reported by ValidateLabelSelector; matching needs a selector.
		return allErrs
	}
	return append(allErrs, validateTemplate(&spec.Template, selector, fldPath.Child("template"))...)
}

// validateTemplate checks that the pods the replicaset makes are pods it
// selects and that it may keep running forever.
func validateTemplate(t *corev1.PodTemplateSpec, selector labels.Selector, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	allErrs = append(allErrs, validation.PodTemplateSpec(t, fldPath)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return allErrs
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
		{"terminatingReplicas", ptr.Deref(status.TerminatingReplicas, 0)},
	}
	for _, c := range counts {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(c.value), fldPath.Child(c.name))...)
	}
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(status.ObservedGeneration, fldPath.Child("observedGeneration"))...)
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
