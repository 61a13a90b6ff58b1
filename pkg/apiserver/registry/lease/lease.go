// Package lease holds the rules for coordination.k8s.io/v1 Leases, the
// objects leader election and node heartbeats renew.
package lease

import (
	"context"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes leases for the generic REST handler; c is the clock that
// table ages are measured against.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: coordinationv1.SchemeGroupVersion,
		Name:         "leases",
		Singular:     "lease",
		Kind:         "Lease",
		Namespaced:   true,
		New:          func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:      func() runtime.Object { return &coordinationv1.LeaseList{} },
		Strategy:     strategy{},
		// As upstream: a PUT of a missing object creates it.
		AllowCreateOnUpdate: true,
		Table:               table(c),
	}
}

// strategy: a lease is all spec, written by its holders; there is no status
// and no generation to keep.
type strategy struct{}

func (strategy) Default(runtime.Object) {}

func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validateSpec(&obj.(*coordinationv1.Lease).Spec, field.NewPath("spec"))
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*coordinationv1.Lease).Generation = old.(*coordinationv1.Lease).Generation
}

func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return validateSpec(&obj.(*coordinationv1.Lease).Spec, field.NewPath("spec"))
}

func validateSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if n := spec.LeaseTransitions; n != nil && *n < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseTransitions"), *n, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		allErrs = append(allErrs, validateStrategy(*spec.Strategy, fldPath.Child("strategy"))...)
	}
	if ptr.Deref(spec.PreferredHolder, "") != "" && ptr.Deref(spec.Strategy, "") == "" {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return allErrs
}

// validateStrategy accepts the built-in strategy or a domain-prefixed custom
// one, as coordinated leader election does.
func validateStrategy(s coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	if s == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if strings.Contains(string(s), "/") {
		var allErrs field.ErrorList
		allErrs = append(allErrs, validation.Messages(fldPath, s, utilvalidation.IsQualifiedName(string(s)))...)
		return allErrs
	}
	if s != coordinationv1.OldestEmulationVersion {
		return field.ErrorList{field.NotSupported(fldPath, s, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion})}
	}
	return nil
}

// table renders `kubectl get leases` as upstream: NAME HOLDER AGE.
func table(c clock.PassiveClock) registry.TableConvertor {
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Holder", "string", 0, coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
		tableutil.AgeColumn(),
	}
	return tableutil.New(cols, func(l *coordinationv1.Lease) []interface{} {
		return []interface{}{l.Name, ptr.Deref(l.Spec.HolderIdentity, ""), tableutil.Age(l.CreationTimestamp, c.Now())}
	})
}
