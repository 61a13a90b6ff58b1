package job

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// validateStatusUpdate holds a status write to upstream's rules for a Job's
// status, which since spec.managedBy lets controllers other than the Job
// controller write it, keep what clients rely on: a finished Job stays
// finished, runs nothing and counts everything, counters only grow, and
// the conditions follow one another in order (FailureTarget before Failed,
// SuccessCriteriaMet before Complete). As upstream's, most rules are
// checked only when a field they read changes, so that a status already
// off a rule (made so by a spec change such as fewer completions, until the
// controller catches up) does not refuse unrelated writes.
func validateStatusUpdate(newJ, oldJ *batchv1.Job) field.ErrorList {
	fld := field.NewPath("status")
	st, old := &newJ.Status, &oldJ.Status
	allErrs := validateStatusFields(st, fld)

	complete, failed := hasCondition(st.Conditions, batchv1.JobComplete), hasCondition(st.Conditions, batchv1.JobFailed)
	failureTarget := hasCondition(st.Conditions, batchv1.JobFailureTarget)
	successMet := hasCondition(st.Conditions, batchv1.JobSuccessCriteriaMet)
	finished := complete || failed
	wasComplete, wasFailed := hasCondition(old.Conditions, batchv1.JobComplete), hasCondition(old.Conditions, batchv1.JobFailed)
	wasSuccessMet := hasCondition(old.Conditions, batchv1.JobSuccessCriteriaMet)

	completeChanged, failedChanged := complete != wasComplete, failed != wasFailed
	finishedChanged := finished != (wasComplete || wasFailed)
	failureTargetChanged := failureTarget != hasCondition(old.Conditions, batchv1.JobFailureTarget)
	successMetChanged := successMet != wasSuccessMet
	completedIndexesChanged := st.CompletedIndexes != old.CompletedIndexes
	failedIndexesChanged := !ptr.Equal(st.FailedIndexes, old.FailedIndexes)
	activeChanged := st.Active != old.Active
	startTimeChanged := !st.StartTime.Equal(old.StartTime)
	completionTimeChanged := !st.CompletionTime.Equal(old.CompletionTime)
	uncountedChanged := !apiequality.Semantic.DeepEqual(st.UncountedTerminatedPods, old.UncountedTerminatedPods)
	readyChanged := !ptr.Equal(st.Ready, old.Ready)
	terminatingChanged := !ptr.Equal(st.Terminating, old.Terminating)

	conds := fld.Child("conditions")
	omit := field.OmitValueType{}
	if (completeChanged || failedChanged) && complete && failed {
		allErrs = append(allErrs, field.Invalid(conds, omit, "cannot set Complete=True and Failed=true conditions"))
	}
	if (completeChanged || failureTargetChanged) && complete && failureTarget {
		allErrs = append(allErrs, field.Invalid(conds, omit, "cannot set Complete=True and FailureTarget=true conditions"))
	}
	if completeChanged || completionTimeChanged {
		if st.CompletionTime != nil && !complete {
			allErrs = append(allErrs, field.Invalid(fld.Child("completionTime"), st.CompletionTime, "cannot set completionTime when there is no Complete=True condition"))
		}
		if st.CompletionTime == nil && complete {
			allErrs = append(allErrs, field.Required(fld.Child("completionTime"), "completionTime is required for Complete jobs"))
		}
	}
	if (startTimeChanged || completionTimeChanged) && st.StartTime != nil && st.CompletionTime != nil && st.CompletionTime.Before(st.StartTime) {
		allErrs = append(allErrs, field.Invalid(fld.Child("completionTime"), st.CompletionTime, "must be equal to or after `startTime`"))
	}
	if (failedChanged || failedIndexesChanged) && failed && !failureTarget {
		allErrs = append(allErrs, field.Invalid(conds, omit, "cannot set Failed=True condition without the FailureTarget=true condition"))
	}
	if (completeChanged || successMetChanged) && complete && !successMet {
		allErrs = append(allErrs, field.Invalid(conds, omit, "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"))
	}
	if (finishedChanged || activeChanged) && finished && st.Active > 0 {
		allErrs = append(allErrs, field.Invalid(fld.Child("active"), st.Active, "active>0 is invalid for finished job"))
	}
	// A suspended Job of no completions finishes without ever starting.
	startsNever := ptr.Deref(newJ.Spec.Suspend, false) && ptr.Equal(newJ.Spec.Completions, ptr.To[int32](0))
	if (finishedChanged || startTimeChanged) && !startsNever && finished && st.StartTime == nil {
		allErrs = append(allErrs, field.Required(fld.Child("startTime"), "startTime is required for finished job"))
	}
	if (finishedChanged || uncountedChanged) && finished && st.UncountedTerminatedPods != nil &&
		len(st.UncountedTerminatedPods.Succeeded)+len(st.UncountedTerminatedPods.Failed) > 0 {
		allErrs = append(allErrs, field.Invalid(fld.Child("uncountedTerminatedPods"), st.UncountedTerminatedPods, "must be empty for finished job"))
	}
	allErrs = append(allErrs, validateStatusIndexes(newJ, fld, completedIndexesChanged, failedIndexesChanged)...)
	if (finishedChanged || terminatingChanged) && finished && ptr.Deref(st.Terminating, 0) > 0 {
		allErrs = append(allErrs, field.Invalid(fld.Child("terminating"), st.Terminating, "terminating>0 is invalid for finished job"))
	}
	if (readyChanged || activeChanged) && st.Ready != nil && *st.Ready > st.Active {
		allErrs = append(allErrs, field.Invalid(fld.Child("ready"), *st.Ready, "cannot set more ready pods than active"))
	}
	// SuccessCriteriaMet, which any Job may carry, says the Job succeeded.
	if successMet && failed {
		allErrs = append(allErrs, field.Invalid(conds, omit, "cannot set SuccessCriteriaMet=True and Failed=true conditions"))
	}
	if successMet && failureTarget {
		allErrs = append(allErrs, field.Invalid(conds, omit, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"))
	}
	if newJ.Spec.SuccessPolicy != nil && complete && !successMet {
		allErrs = append(allErrs, field.Invalid(conds, omit, "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"))
	}

	// The transitions: what a Job reached it keeps.
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
		if hasCondition(old.Conditions, t) && !hasCondition(st.Conditions, t) {
			allErrs = append(allErrs, field.Invalid(conds, omit, fmt.Sprintf("cannot disable the terminal %s=True condition", t)))
		}
	}
	if st.Failed < old.Failed {
		allErrs = append(allErrs, field.Invalid(fld.Child("failed"), st.Failed, "cannot decrease the failed counter"))
	}
	// An Indexed Job with as many pods as completions may be scaled down,
	// and its succeeded indexes above the new completions drop out.
	elastic := isIndexed(&newJ.Spec) && ptr.Equal(newJ.Spec.Completions, newJ.Spec.Parallelism)
	if !elastic && st.Succeeded < old.Succeeded {
		allErrs = append(allErrs, field.Invalid(fld.Child("succeeded"), st.Succeeded, "cannot decrease the succeeded counter"))
	}
	if st.CompletionTime != nil && old.CompletionTime != nil && !st.CompletionTime.Equal(old.CompletionTime) {
		allErrs = append(allErrs, field.Invalid(fld.Child("completionTime"), st.CompletionTime, "field is immutable"))
	}
	// A Job that resumes (Suspended turns False) starts its clock again.
	resuming := conditionIs(old.Conditions, batchv1.JobSuspended, corev1.ConditionTrue) &&
		conditionIs(st.Conditions, batchv1.JobSuspended, corev1.ConditionFalse)
	if startTimeChanged && !resuming && old.StartTime != nil && !ptr.Deref(newJ.Spec.Suspend, false) {
		allErrs = append(allErrs, field.Invalid(fld.Child("startTime"), st.StartTime, "field is immutable for unsuspended job once set"))
	}
	if wasSuccessMet && !successMet {
		allErrs = append(allErrs, field.Invalid(conds, omit, "cannot disable the SuccessCriteriaMet=True condition"))
	}
	if wasComplete && !wasSuccessMet && successMet {
		allErrs = append(allErrs, field.Invalid(conds, omit, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
	}
	return allErrs
}

// validateStatusFields checks what a status holds on its own: counts that
// are not negative and uncounted pods named once each.
func validateStatusFields(st *batchv1.JobStatus, fld *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	counts := []struct {
		name  string
		value *int32
	}{
		{"active", &st.Active},
		{"succeeded", &st.Succeeded},
		{"failed", &st.Failed},
		{"ready", st.Ready},
		{"terminating", st.Terminating},
	}
	for _, c := range counts {
		if c.value != nil {
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*c.value), fld.Child(c.name))...)
		}
	}
	if unc := st.UncountedTerminatedPods; unc != nil {
		seen := sets.New[types.UID]()
		uncPath := fld.Child("uncountedTerminatedPods")
		for _, list := range []struct {
			name string
			uids []types.UID
		}{{"succeeded", unc.Succeeded}, {"failed", unc.Failed}} {
			for i, uid := range list.uids {
				p := uncPath.Child(list.name).Index(i)
				switch {
				case uid == "":
					allErrs = append(allErrs, field.Invalid(p, uid, "must not be empty"))
				case seen.Has(uid):
					allErrs = append(allErrs, field.Duplicate(p, uid))
				default:
					seen.Insert(uid)
				}
			}
		}
	}
	for i, c := range st.Conditions {
		switch c.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		default:
			allErrs = append(allErrs, field.NotSupported(fld.Child("conditions").Index(i).Child("status"), c.Status,
				[]corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}))
		}
	}
	return allErrs
}

// validateStatusIndexes checks completedIndexes and failedIndexes, when
// they changed: well-formed lists of indexes below completions, failed
// ones only for a Job with backoffLimitPerIndex, completed ones only for an
// Indexed Job, and no index both.
func validateStatusIndexes(j *batchv1.Job, fld *field.Path, completedChanged, failedChanged bool) field.ErrorList {
	var allErrs field.ErrorList
	st := &j.Status
	// Each list is parsed once, for its format and for the overlap.
	var completed, failed []indexInterval
	if (completedChanged || failedChanged) && j.Spec.Completions != nil {
		var err error
		if completed, err = parseIndexes(st.CompletedIndexes, *j.Spec.Completions); err != nil && completedChanged {
			allErrs = append(allErrs, field.Invalid(fld.Child("completedIndexes"), st.CompletedIndexes, fmt.Sprintf("error parsing completedIndexes: %s", err)))
		}
		if st.FailedIndexes != nil {
			if failed, err = parseIndexes(*st.FailedIndexes, *j.Spec.Completions); err != nil && failedChanged && j.Spec.BackoffLimitPerIndex != nil {
				allErrs = append(allErrs, field.Invalid(fld.Child("failedIndexes"), st.FailedIndexes, fmt.Sprintf("error parsing failedIndexes: %s", err)))
			}
		}
	}
	if completedChanged && st.CompletedIndexes != "" && !isIndexed(&j.Spec) {
		allErrs = append(allErrs, field.Invalid(fld.Child("completedIndexes"), st.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode"))
	}
	if failedChanged && j.Spec.BackoffLimitPerIndex == nil && st.FailedIndexes != nil {
		allErrs = append(allErrs, field.Invalid(fld.Child("failedIndexes"), *st.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
	}
	if at, ok := indexesOverlap(completed, failed); ok {
		allErrs = append(allErrs, field.Invalid(fld.Child("failedIndexes"), *st.FailedIndexes, fmt.Sprintf("failedIndexes and completedIndexes overlap at index: %d", at)))
	}
	return allErrs
}

// indexesOverlap returns the lowest index in both lists, which it reads as
// ascending; parseIndexes left out the intervals that do not parse (the
// format checks report those).
func indexesOverlap(c, f []indexInterval) (int32, bool) {
	for i, k := 0, 0; i < len(c) && k < len(f); {
		if c[i].first <= f[k].last && f[k].first <= c[i].last {
			return max(c[i].first, f[k].first), true
		}
		if c[i].first <= f[k].first {
			i++
		} else {
			k++
		}
	}
	return 0, false
}
