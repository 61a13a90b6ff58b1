package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ReplicatedPods checks the rules Deployments and ReplicaSets share for the
// pods they keep running: spec.selector must be set and not empty (an empty
// one would adopt every pod in the namespace), the template's pods must be
// pods it selects, and they must restart Always because the owner replaces
// them rather than letting them finish. kind names the owner in messages, as
// upstream ("empty selector is invalid for deployment"). specPath is the
// owner's spec.
func ReplicatedPods(selector *metav1.LabelSelector, t *corev1.PodTemplateSpec, kind string, specPath *field.Path) field.ErrorList {
	selPath := specPath.Child("selector")
	if selector == nil {
		return field.ErrorList{field.Required(selPath, "")}
	}
	allErrs := metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, selPath)
	if len(selector.MatchLabels)+len(selector.MatchExpressions) == 0 {
		allErrs = append(allErrs, field.Invalid(selPath, selector, fmt.Sprintf("empty selector is invalid for %s", kind)))
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		// Already reported by ValidateLabelSelector; matching needs a selector.
		return allErrs
	}
	return append(allErrs, replicatedTemplate(t, s, specPath.Child("template"))...)
}

func replicatedTemplate(t *corev1.PodTemplateSpec, selector labels.Selector, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	allErrs = append(allErrs, PodTemplateSpec(t, fldPath)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		// Upstream's message names ReplicaSet for Deployments too; clients may match it.
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return allErrs
}
