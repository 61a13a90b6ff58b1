// Package role holds the rules for rbac.authorization.k8s.io/v1 Roles, and
// the policy rule validation that ClusterRoles share.
package role

import (
	"context"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
)

// Resource describes roles for the generic REST handler. Role tables show a
// creation time, not an age, so the clock goes unused; the parameter keeps
// every resource's constructor alike.
func Resource(_ clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: rbacv1.SchemeGroupVersion,
		Name:         "roles",
		Singular:     "role",
		Kind:         "Role",
		Namespaced:   true,
		New:          func() runtime.Object { return &rbacv1.Role{} },
		NewList:      func() runtime.Object { return &rbacv1.RoleList{} },
		Strategy:     strategy{},
		// As upstream: a PUT of a missing object creates it.
		AllowCreateOnUpdate: true,
		Table:               CreatedAtTable(func(obj *rbacv1.Role) (string, metav1.Time) { return obj.Name, obj.CreationTimestamp }),
		ValidateName:        ValidateName,
	}
}

// ValidateName is upstream's rule for RBAC object names: any path segment,
// so that names like "system:controller:job-controller" are allowed.
func ValidateName(name string, prefix bool) []string {
	return path.ValidatePathSegmentName(name, prefix)
}

type strategy struct{}

func (strategy) Default(runtime.Object) {}

func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validateRules(obj.(*rbacv1.Role).Rules)
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*rbacv1.Role).Generation = old.(*rbacv1.Role).Generation
}

func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return validateRules(obj.(*rbacv1.Role).Rules)
}

func validateRules(rules []rbacv1.PolicyRule) field.ErrorList {
	var allErrs field.ErrorList
	for i, rule := range rules {
		allErrs = append(allErrs, ValidatePolicyRule(rule, true, field.NewPath("rules").Index(i))...)
	}
	return allErrs
}

// ValidatePolicyRule checks one rule: it grants verbs either on resources of
// API groups or, for cluster-wide rules only, on non-resource URLs.
func ValidatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(rule.Verbs) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return allErrs
	}
	if len(rule.APIGroups) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return allErrs
}

// CreatedAtTable renders roles and cluster roles as upstream does: NAME and
// CREATED AT, an absolute UTC time rather than an age.
func CreatedAtTable[T runtime.Object](nameAndCreated func(T) (string, metav1.Time)) registry.TableConvertor {
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Created At", "date", 0, metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]),
	}
	return tableutil.New(cols, func(obj T) []interface{} {
		name, created := nameAndCreated(obj)
		return []interface{}{name, created.UTC().Format(time.RFC3339)}
	})
}
