// Package clusterrole holds the rules for rbac.authorization.k8s.io/v1
// ClusterRoles.
package clusterrole

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/role"
)

// Resource describes cluster roles for the generic REST handler. The table
// shows a creation time, not an age, so the clock goes unused.
func Resource(_ clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: rbacv1.SchemeGroupVersion,
		Name:         "clusterroles",
		Singular:     "clusterrole",
		Kind:         "ClusterRole",
		New:          func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList:      func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		Strategy:     strategy{},
		// As upstream: a PUT of a missing object creates it.
		AllowCreateOnUpdate: true,
		Table: role.CreatedAtTable(func(obj *rbacv1.ClusterRole) (string, metav1.Time) {
			return obj.Name, obj.CreationTimestamp
		}),
		ValidateName: role.ValidateName,
	}
}

type strategy struct{}

func (strategy) Default(runtime.Object) {}

func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validate(obj.(*rbacv1.ClusterRole))
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*rbacv1.ClusterRole).Generation = old.(*rbacv1.ClusterRole).Generation
}

func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return validate(obj.(*rbacv1.ClusterRole))
}

func validate(cr *rbacv1.ClusterRole) field.ErrorList {
	var allErrs field.ErrorList
	for i, rule := range cr.Rules {
		allErrs = append(allErrs, role.ValidatePolicyRule(rule, false, field.NewPath("rules").Index(i))...)
	}
	if cr.AggregationRule != nil {
		selPath := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(cr.AggregationRule.ClusterRoleSelectors) == 0 {
			allErrs = append(allErrs, field.Required(selPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range cr.AggregationRule.ClusterRoleSelectors {
			allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&cr.AggregationRule.ClusterRoleSelectors[i],
				metav1validation.LabelSelectorValidationOptions{}, selPath.Index(i))...)
		}
	}
	return allErrs
}
