// Package poddisruptionbudget holds the rules for policy/v1
// PodDisruptionBudgets: validation, the status subresource and the table
// columns. The disruption controller keeps their status; the eviction
// subresource of pods reads and spends it.
package poddisruptionbudget

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes pod disruption budgets for the generic REST handler;
// c is the clock that table ages are measured against.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: policyv1.SchemeGroupVersion,
		Name:         "poddisruptionbudgets",
		Singular:     "poddisruptionbudget",
		Kind:         "PodDisruptionBudget",
		Namespaced:   true,
		ShortNames:   []string{"pdb"},
		New:          func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList:      func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		Strategy:     strategy{},
		Status:       statusStrategy{},
		Table: tableutil.New([]metav1.TableColumnDefinition{
			tableutil.NameColumn(),
			tableutil.Column("Min Available", "string", 0, "The minimum number of pods that must be available."),
			tableutil.Column("Max Unavailable", "string", 0, "The maximum number of pods that may be unavailable."),
			tableutil.Column("Allowed Disruptions", "integer", 0, "Calculated number of pods that may be disrupted at this time."),
			tableutil.AgeColumn(),
		}, func(pdb *policyv1.PodDisruptionBudget) []interface{} {
			minAvailable, maxUnavailable := "N/A", "N/A"
			if v := pdb.Spec.MinAvailable; v != nil {
				minAvailable = v.String()
			}
			if v := pdb.Spec.MaxUnavailable; v != nil {
				maxUnavailable = v.String()
			}
			return []interface{}{pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), tableutil.Age(pdb.CreationTimestamp, c.Now())}
		}),
	}
}

type strategy struct{}

// Default does nothing: policy/v1 has no defaults (a missing selector
// selects no pods).
func (strategy) Default(runtime.Object) {}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	pdb := obj.(*policyv1.PodDisruptionBudget)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{}
	pdb.Generation = 1
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validateSpec(&obj.(*policyv1.PodDisruptionBudget).Spec, field.NewPath("spec"))
}

// PrepareForUpdate bumps generation on spec changes: the eviction
// subresource refuses to spend a budget the controller has not yet
// recomputed for the current spec.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pdb, oldPDB := obj.(*policyv1.PodDisruptionBudget), old.(*policyv1.PodDisruptionBudget)
	pdb.Status = oldPDB.Status
	pdb.Generation = registry.NextGeneration(oldPDB.Generation, !apiequality.Semantic.DeepEqual(pdb.Spec, oldPDB.Spec))
}

// ValidateUpdate checks the spec as on create: since policy/v1 every
// field of it may change.
func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return validateSpec(&obj.(*policyv1.PodDisruptionBudget).Spec, field.NewPath("spec"))
}

var unhealthyPodEvictionPolicies = []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}

func validateSpec(spec *policyv1.PodDisruptionBudgetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		allErrs = append(allErrs, field.Invalid(fldPath, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if v := spec.MinAvailable; v != nil {
		allErrs = append(allErrs, validation.IntOrPercent(*v, fldPath.Child("minAvailable"))...)
		allErrs = append(allErrs, validation.NotMoreThan100Percent(*v, fldPath.Child("minAvailable"))...)
	}
	if v := spec.MaxUnavailable; v != nil {
		allErrs = append(allErrs, validation.IntOrPercent(*v, fldPath.Child("maxUnavailable"))...)
		allErrs = append(allErrs, validation.NotMoreThan100Percent(*v, fldPath.Child("maxUnavailable"))...)
	}
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	if p := spec.UnhealthyPodEvictionPolicy; p != nil && *p != policyv1.AlwaysAllow && *p != policyv1.IfHealthyBudget {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("unhealthyPodEvictionPolicy"), *p, unhealthyPodEvictionPolicies))
	}
	return allErrs
}

type statusStrategy struct{}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pdb, oldPDB := obj.(*policyv1.PodDisruptionBudget), old.(*policyv1.PodDisruptionBudget)
	pdb.Spec = oldPDB.Spec
	pdb.Generation = oldPDB.Generation
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	status := &obj.(*policyv1.PodDisruptionBudget).Status
	fldPath := field.NewPath("status")
	allErrs := metav1validation.ValidateConditions(status.Conditions, fldPath.Child("conditions"))
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"disruptionsAllowed", status.DisruptionsAllowed},
		{"currentHealthy", status.CurrentHealthy},
		{"desiredHealthy", status.DesiredHealthy},
		{"expectedPods", status.ExpectedPods},
	} {
		allErrs = append(allErrs, validation.NonnegativeField(int64(f.value), fldPath.Child(f.name))...)
	}
	return allErrs
}
