// Package rolebinding holds the rules for rbac.authorization.k8s.io/v1
// RoleBindings, and the subject and role reference rules that
// ClusterRoleBindings share.
package rolebinding

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/role"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes role bindings for the generic REST handler; c is the
// clock that table ages are measured against.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: rbacv1.SchemeGroupVersion,
		Name:         "rolebindings",
		Singular:     "rolebinding",
		Kind:         "RoleBinding",
		Namespaced:   true,
		New:          func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList:      func() runtime.Object { return &rbacv1.RoleBindingList{} },
		Strategy:     strategy{},
		// As upstream: a PUT of a missing object creates it.
		AllowCreateOnUpdate: true,
		Table: Table(c, func(rb *rbacv1.RoleBinding) Binding {
			return Binding{Name: rb.Name, Created: rb.CreationTimestamp, RoleRef: rb.RoleRef, Subjects: rb.Subjects}
		}),
		ValidateName: role.ValidateName,
	}
}

type strategy struct{}

func (strategy) Default(obj runtime.Object) {
	rb := obj.(*rbacv1.RoleBinding)
	Default(&rb.RoleRef, rb.Subjects)
}

func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	rb := obj.(*rbacv1.RoleBinding)
	return Validate(rb.RoleRef, rb.Subjects, true)
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*rbacv1.RoleBinding).Generation = old.(*rbacv1.RoleBinding).Generation
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	rb, oldRB := obj.(*rbacv1.RoleBinding), old.(*rbacv1.RoleBinding)
	allErrs := Validate(rb.RoleRef, rb.Subjects, true)
	return append(allErrs, ValidateRoleRefUpdate(rb.RoleRef, oldRB.RoleRef)...)
}

// Default fills the API groups clients usually leave out: the role's, and
// rbac's for users and groups (service accounts are in the core group).
func Default(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup != "" {
			continue
		}
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.GroupKind:
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// Validate checks a binding's role reference and subjects. A namespaced
// binding may refer to a Role or a ClusterRole, a cluster-wide one only to a
// ClusterRole; its service accounts must then name their namespace.
func Validate(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var allErrs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		allErrs = append(allErrs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if !contains(kinds, ref.Kind) {
		allErrs = append(allErrs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(refPath.Child("name"), ""))
	} else {
		allErrs = append(allErrs, validation.Messages(refPath.Child("name"), ref.Name, role.ValidateName(ref.Name, false))...)
	}
	subjectsPath := field.NewPath("subjects")
	for i, s := range subjects {
		allErrs = append(allErrs, validateSubject(s, namespaced, subjectsPath.Index(i))...)
	}
	return allErrs
}

func validateSubject(s rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			allErrs = append(allErrs, validation.Messages(fldPath.Child("name"), s.Name, apivalidation.NameIsDNSSubdomain(s.Name, false))...)
		}
		if s.APIGroup != "" {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), s.Kind,
			[]string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return allErrs
}

// ValidateRoleRefUpdate keeps roleRef immutable: rebinding to another role
// must be a new binding, so that granting it is authorized afresh.
func ValidateRoleRefUpdate(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Binding is what the bindings table shows of a RoleBinding or a
// ClusterRoleBinding.
type Binding struct {
	Name     string
	Created  metav1.Time
	RoleRef  rbacv1.RoleRef
	Subjects []rbacv1.Subject
}

// Table renders bindings as upstream: NAME ROLE AGE, wide adds USERS GROUPS
// SERVICEACCOUNTS.
func Table[T runtime.Object](c clock.PassiveClock, binding func(T) Binding) registry.TableConvertor {
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Role", "string", 0, rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		tableutil.AgeColumn(),
		tableutil.Column("Users", "string", 1, "Users in the roleBinding"),
		tableutil.Column("Groups", "string", 1, "Groups in the roleBinding"),
		tableutil.Column("ServiceAccounts", "string", 1, "ServiceAccounts in the roleBinding"),
	}
	return tableutil.New(cols, func(obj T) []interface{} {
		b := binding(obj)
		var users, groups, sas []string
		for _, s := range b.Subjects {
			switch s.Kind {
			case rbacv1.ServiceAccountKind:
				sas = append(sas, s.Namespace+"/"+s.Name)
			case rbacv1.UserKind:
				users = append(users, s.Name)
			case rbacv1.GroupKind:
				groups = append(groups, s.Name)
			}
		}
		return []interface{}{
			b.Name,
			fmt.Sprintf("%s/%s", b.RoleRef.Kind, b.RoleRef.Name),
			tableutil.Age(b.Created, c.Now()),
			strings.Join(users, ", "),
			strings.Join(groups, ", "),
			strings.Join(sas, ", "),
		}
	})
}
