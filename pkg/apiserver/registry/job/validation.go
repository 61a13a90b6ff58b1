package job

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// maxParallelismForIndexedJob bounds the per-index bookkeeping the
// controller keeps in status, as upstream.
const maxParallelismForIndexedJob = 100_000

func validateSpec(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	nonneg := func(v *int32, name string) {
		if v != nil {
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*v), fldPath.Child(name))...)
		}
	}
	nonneg(spec.Parallelism, "parallelism")
	nonneg(spec.Completions, "completions")
	nonneg(spec.BackoffLimit, "backoffLimit")
	nonneg(spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished")
	nonneg(spec.BackoffLimitPerIndex, "backoffLimitPerIndex")
	nonneg(spec.MaxFailedIndexes, "maxFailedIndexes")
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}

	indexed := false
	if spec.CompletionMode != nil {
		switch *spec.CompletionMode {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			indexed = true
			if spec.Completions == nil {
				allErrs = append(allErrs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
			}
			if p := ptr.Deref(spec.Parallelism, 0); p > maxParallelismForIndexedJob {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), p,
					fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("completionMode"), *spec.CompletionMode,
				[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
	}
	if spec.BackoffLimitPerIndex != nil && !indexed {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("backoffLimitPerIndex"), "requires indexed completion mode"))
	}
	if spec.MaxFailedIndexes != nil && spec.BackoffLimitPerIndex == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	if spec.PodReplacementPolicy != nil {
		prp := *spec.PodReplacementPolicy
		switch {
		case spec.PodFailurePolicy != nil && prp != batchv1.Failed:
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("podReplacementPolicy"), prp, []batchv1.PodReplacementPolicy{batchv1.Failed}))
		case prp != batchv1.Failed && prp != batchv1.TerminatingOrFailed:
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("podReplacementPolicy"), prp,
				[]batchv1.PodReplacementPolicy{batchv1.TerminatingOrFailed, batchv1.Failed}))
		}
	}

	selPath := fldPath.Child("selector")
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(selPath, ""))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
		// Generated or manual, the selector must match the pods the job makes.
		if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
		}
	}

	tPath := fldPath.Child("template")
	allErrs = append(allErrs, validation.PodTemplateSpec(&spec.Template, tPath)...)
	// A job's pods run to completion; Always would restart them forever.
	if rp := spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
		allErrs = append(allErrs, field.NotSupported(tPath.Child("spec", "restartPolicy"), rp,
			[]corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	return allErrs
}

// validateGeneratedSelector checks, on create, that selector generation was
// not defeated by labels the user set: the template must carry the job's
// name and UID and the selector must select on them.
func validateGeneratedSelector(j *batchv1.Job) field.ErrorList {
	if ptr.Deref(j.Spec.ManualSelector, false) || j.Spec.Selector == nil {
		return nil
	}
	metaPath := field.NewPath("spec", "template", "metadata")
	if j.Spec.Template.Labels == nil {
		return field.ErrorList{field.Required(metaPath.Child("labels"), "")}
	}
	var allErrs field.ErrorList
	if j.UID == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	expected := map[string]string{
		legacyControllerUIDLabel:   string(j.UID),
		legacyJobNameLabel:         j.Name,
		batchv1.ControllerUidLabel: string(j.UID),
		batchv1.JobNameLabel:       j.Name,
	}
	for _, key := range []string{legacyControllerUIDLabel, legacyJobNameLabel, batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
		want := expected[key]
		got, ok := j.Spec.Template.Labels[key]
		switch {
		case !ok:
			allErrs = append(allErrs, field.Required(metaPath.Child("labels").Key(key), "must be '"+want+"'"))
		case got != want:
			allErrs = append(allErrs, field.Invalid(metaPath.Child("labels").Key(key), got, "must be '"+want+"'"))
		}
	}
	if selector, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !selector.Matches(labels.Set(expected)) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return allErrs
}

func validateSpecUpdate(newJ, oldJ *batchv1.Job, fldPath *field.Path) field.ErrorList {
	spec, old := &newJ.Spec, &oldJ.Spec
	var allErrs field.ErrorList
	immutable := func(n, o interface{}, name string) {
		if !apiequality.Semantic.DeepEqual(n, o) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(name), n, "field is immutable"))
		}
	}
	immutable(spec.Selector, old.Selector, "selector")
	immutable(spec.Completions, old.Completions, "completions")
	immutable(spec.CompletionMode, old.CompletionMode, "completionMode")
	immutable(spec.PodFailurePolicy, old.PodFailurePolicy, "podFailurePolicy")
	immutable(spec.BackoffLimitPerIndex, old.BackoffLimitPerIndex, "backoffLimitPerIndex")
	immutable(spec.PodReplacementPolicy, old.PodReplacementPolicy, "podReplacementPolicy")
	immutable(spec.SuccessPolicy, old.SuccessPolicy, "successPolicy")
	immutable(spec.ManagedBy, old.ManagedBy, "managedBy")
	allErrs = append(allErrs, validateTemplateUpdate(newJ, oldJ, fldPath.Child("template"))...)
	return allErrs
}

// validateTemplateUpdate keeps the template immutable, except that a job
// which is suspended and has never started may still have its scheduling
// directives changed (upstream allows it so that queueing controllers can
// place a job before letting it run).
func validateTemplateUpdate(newJ, oldJ *batchv1.Job, fldPath *field.Path) field.ErrorList {
	t, old := newJ.Spec.Template.DeepCopy(), &oldJ.Spec.Template
	if ptr.Deref(oldJ.Spec.Suspend, false) && oldJ.Status.StartTime == nil {
		t.Labels, t.Annotations = old.Labels, old.Annotations
		t.Spec.NodeSelector = old.Spec.NodeSelector
		t.Spec.Tolerations = old.Spec.Tolerations
		t.Spec.Affinity = old.Spec.Affinity
		t.Spec.SchedulingGates = old.Spec.SchedulingGates
	}
	if !apiequality.Semantic.DeepEqual(t, old) {
		return field.ErrorList{field.Invalid(fldPath, newJ.Spec.Template, "field is immutable")}
	}
	return nil
}

func validateStatus(status *batchv1.JobStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	counts := []struct {
		name  string
		value int32
	}{
		{"active", status.Active},
		{"succeeded", status.Succeeded},
		{"failed", status.Failed},
		{"ready", ptr.Deref(status.Ready, 0)},
		{"terminating", ptr.Deref(status.Terminating, 0)},
	}
	for _, c := range counts {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(c.value), fldPath.Child(c.name))...)
	}
	if status.StartTime != nil && status.CompletionTime != nil && status.CompletionTime.Before(status.StartTime) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("completionTime"), status.CompletionTime, "completionTime cannot be set before startTime"))
	}
	if status.CompletionTime != nil && !hasCondition(status.Conditions, batchv1.JobComplete) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("completionTime"), status.CompletionTime, "cannot set completionTime when there is no Complete=True condition"))
	}
	for i, c := range status.Conditions {
		switch c.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		default:
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("conditions").Index(i).Child("status"), c.Status,
				[]corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}))
		}
	}
	return allErrs
}

func hasCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
