package deployment

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

func validateSpec(spec *appsv1.DeploymentSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(ptr.Deref(spec.Replicas, 0)), fldPath.Child("replicas"))...)

	allErrs = append(allErrs, validation.ReplicatedPods(spec.Selector, &spec.Template, "deployment", fldPath)...)

	allErrs = append(allErrs, validateStrategy(&spec.Strategy, fldPath.Child("strategy"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	if spec.ProgressDeadlineSeconds != nil {
		pds := *spec.ProgressDeadlineSeconds
		pdsPath := fldPath.Child("progressDeadlineSeconds")
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(pds), pdsPath)...)
		if pds <= spec.MinReadySeconds {
			allErrs = append(allErrs, field.Invalid(pdsPath, pds, "must be greater than minReadySeconds"))
		}
	}
	return allErrs
}

func validateStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("rollingUpdate"),
				fmt.Sprintf("may not be specified when strategy `type` is '%s'", appsv1.RecreateDeploymentStrategyType)))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			// Defaulting always fills it; reaching here means a caller skipped Default.
			allErrs = append(allErrs, field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil"))
		} else {
			allErrs = append(allErrs, validateRollingUpdate(s.RollingUpdate, fldPath.Child("rollingUpdate"))...)
		}
	default:
		// Upstream reports the whole strategy, printed as its internal type.
		allErrs = append(allErrs, field.NotSupported(fldPath, shownStrategy(s),
			[]appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType}))
	}
	return allErrs
}

// internalStrategy and internalRollingUpdate print a strategy as upstream's
// errors show it: its internal types, whose fields have no JSON names.
type internalStrategy struct {
	Type          appsv1.DeploymentStrategyType
	RollingUpdate *internalRollingUpdate
}

type internalRollingUpdate struct{ MaxUnavailable, MaxSurge intstr.IntOrString }

func shownStrategy(s *appsv1.DeploymentStrategy) internalStrategy {
	out := internalStrategy{Type: s.Type}
	if ru := s.RollingUpdate; ru != nil {
		out.RollingUpdate = &internalRollingUpdate{}
		if ru.MaxUnavailable != nil {
			out.RollingUpdate.MaxUnavailable = *ru.MaxUnavailable
		}
		if ru.MaxSurge != nil {
			out.RollingUpdate.MaxSurge = *ru.MaxSurge
		}
	}
	return out
}

func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, fldPath *field.Path) field.ErrorList {
	unavailPath, surgePath := fldPath.Child("maxUnavailable"), fldPath.Child("maxSurge")
	var allErrs field.ErrorList
	if v := ru.MaxUnavailable; v != nil {
		allErrs = append(allErrs, validation.IntOrPercent(*v, unavailPath)...)
	}
	if v := ru.MaxSurge; v != nil {
		allErrs = append(allErrs, validation.IntOrPercent(*v, surgePath)...)
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	// A rollout that may neither add nor remove a pod can never progress.
	if intOrPercentValue(ru.MaxUnavailable) == 0 && intOrPercentValue(ru.MaxSurge) == 0 {
		allErrs = append(allErrs, field.Invalid(unavailPath, ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
	}
	if v := ru.MaxUnavailable; v != nil {
		allErrs = append(allErrs, validation.NotMoreThan100Percent(*v, unavailPath)...)
	}
	return allErrs
}

// intOrPercentValue is the number itself, or the percentage without its
// sign (0 when absent); only meaningful once validation.IntOrPercent passed.
func intOrPercentValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	if v.Type == intstr.Int {
		return v.IntValue()
	}
	n, _ := validation.Percent(*v)
	return n
}

func validateStatus(status *appsv1.DeploymentStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(status.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	counts := []struct {
		name  string
		value int32
	}{
		{"replicas", status.Replicas},
		{"updatedReplicas", status.UpdatedReplicas},
		{"readyReplicas", status.ReadyReplicas},
		{"availableReplicas", status.AvailableReplicas},
		{"unavailableReplicas", status.UnavailableReplicas},
		{"terminatingReplicas", ptr.Deref(status.TerminatingReplicas, 0)},
		{"collisionCount", ptr.Deref(status.CollisionCount, 0)},
	}
	for _, c := range counts {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(c.value), fldPath.Child(c.name))...)
	}
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
