// Package clusterrolebinding holds the rules for rbac.authorization.k8s.io/v1
// ClusterRoleBindings.
package clusterrolebinding

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/role"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/rolebinding"
)

// Resource describes cluster role bindings for the generic REST handler; c is
// the clock that table ages are measured against.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: rbacv1.SchemeGroupVersion,
		Name:         "clusterrolebindings",
		Singular:     "clusterrolebinding",
		Kind:         "ClusterRoleBinding",
		New:          func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList:      func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		Strategy:     strategy{},
		// As upstream: a PUT of a missing object creates it.
		AllowCreateOnUpdate: true,
		Table: rolebinding.Table(c, func(crb *rbacv1.ClusterRoleBinding) rolebinding.Binding {
			return rolebinding.Binding{Name: crb.Name, Created: crb.CreationTimestamp, RoleRef: crb.RoleRef, Subjects: crb.Subjects}
		}),
		ValidateName: role.ValidateName,
	}
}

type strategy struct{}

func (strategy) Default(obj runtime.Object) {
	crb := obj.(*rbacv1.ClusterRoleBinding)
	rolebinding.Default(&crb.RoleRef, crb.Subjects)
}

func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	crb := obj.(*rbacv1.ClusterRoleBinding)
	return rolebinding.Validate(crb.RoleRef, crb.Subjects, false)
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*rbacv1.ClusterRoleBinding).Generation = old.(*rbacv1.ClusterRoleBinding).Generation
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	crb, oldCRB := obj.(*rbacv1.ClusterRoleBinding), old.(*rbacv1.ClusterRoleBinding)
	allErrs := rolebinding.Validate(crb.RoleRef, crb.Subjects, false)
	return append(allErrs, rolebinding.ValidateRoleRefUpdate(crb.RoleRef, oldCRB.RoleRef)...)
}
