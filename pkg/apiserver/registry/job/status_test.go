package job

import (
	"context"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func conds(of ...batchv1.JobConditionType) []batchv1.JobCondition {
	var out []batchv1.JobCondition
	for _, t := range of {
		out = append(out, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue})
	}
	return out
}

// TestStatusUpdateAsUpstream walks upstream 1.36's status rules: each case
// is a write a controller other than the Job controller could make, with
// the field and message upstream refuses it with.
func TestStatusUpdateAsUpstream(t *testing.T) {
	start := metav1.NewTime(now.Add(-time.Minute))
	end := metav1.NewTime(now)
	running := batchv1.JobStatus{Active: 2, Ready: ptr.To[int32](1), Terminating: ptr.To[int32](0), StartTime: &start,
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{}}
	finished := func(c ...batchv1.JobConditionType) batchv1.JobStatus {
		s := batchv1.JobStatus{Succeeded: 1, StartTime: &start, Conditions: conds(c...), Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{}}
		if slices.Contains(c, batchv1.JobComplete) {
			s.CompletionTime = &end
		}
		return s
	}
	indexed := func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions = ptr.To[int32](4)
		j.Spec.Parallelism = ptr.To[int32](2)
	}
	perIndex := func(j *batchv1.Job) {
		indexed(j)
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	}
	type want struct{ field, msg string }
	tests := []struct {
		name     string
		mutate   []func(*batchv1.Job)
		old, new batchv1.JobStatus
		want     []want
	}{
		{name: "more ready than active", old: running, new: with(running, func(s *batchv1.JobStatus) { s.Ready = ptr.To[int32](3) }),
			want: []want{{"status.ready", "cannot set more ready pods than active"}}},
		{name: "more ready than active, unchanged", old: with(running, func(s *batchv1.JobStatus) { s.Ready = ptr.To[int32](3) }),
			new: with(running, func(s *batchv1.JobStatus) { s.Ready = ptr.To[int32](3); s.Failed = 1 })},
		{name: "terminating on finished", old: running, new: with(finished(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete), func(s *batchv1.JobStatus) { s.Terminating = ptr.To[int32](1) }),
			want: []want{{"status.terminating", "terminating>0 is invalid for finished job"}}},
		{name: "active on finished", old: running, new: with(finished(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete), func(s *batchv1.JobStatus) { s.Active = 1 }),
			want: []want{{"status.active", "active>0 is invalid for finished job"}}},
		{name: "finished without startTime", old: batchv1.JobStatus{}, new: with(finished(batchv1.JobFailureTarget, batchv1.JobFailed), func(s *batchv1.JobStatus) { s.StartTime = nil }),
			want: []want{{"status.startTime", "startTime is required for finished job"}}},
		{name: "finished with uncounted pods", old: running, new: with(finished(batchv1.JobFailureTarget, batchv1.JobFailed), func(s *batchv1.JobStatus) {
			s.UncountedTerminatedPods.Failed = []types.UID{"a"}
		}), want: []want{{"status.uncountedTerminatedPods", "must be empty for finished job"}}},
		{name: "uncounted pod twice", old: running, new: with(running, func(s *batchv1.JobStatus) {
			s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a", ""}, Failed: []types.UID{"a"}}
		}), want: []want{{"status.uncountedTerminatedPods.succeeded[1]", "must not be empty"}, {"status.uncountedTerminatedPods.failed[0]", ""}}},
		{name: "complete without SuccessCriteriaMet", old: running, new: finished(batchv1.JobComplete),
			want: []want{{"status.conditions", "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"}}},
		{name: "failed without FailureTarget", old: running, new: finished(batchv1.JobFailed),
			want: []want{{"status.conditions", "cannot set Failed=True condition without the FailureTarget=true condition"}}},
		{name: "complete and failed", old: running, new: finished(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobFailureTarget, batchv1.JobFailed),
			want: []want{
				{"status.conditions", "cannot set Complete=True and Failed=true conditions"},
				{"status.conditions", "cannot set Complete=True and FailureTarget=true conditions"},
				{"status.conditions", "cannot set SuccessCriteriaMet=True and Failed=true conditions"},
				{"status.conditions", "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"},
			}},
		{name: "complete without completionTime", old: running, new: with(finished(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete), func(s *batchv1.JobStatus) { s.CompletionTime = nil }),
			want: []want{{"status.completionTime", "completionTime is required for Complete jobs"}}},
		{name: "completionTime without Complete", old: running, new: with(running, func(s *batchv1.JobStatus) { s.CompletionTime = &end }),
			want: []want{{"status.completionTime", "cannot set completionTime when there is no Complete=True condition"}}},
		{name: "completed before started", old: running, new: with(finished(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete), func(s *batchv1.JobStatus) {
			s.CompletionTime = ptr.To(metav1.NewTime(now.Add(-time.Hour)))
		}), want: []want{{"status.completionTime", "must be equal to or after `startTime`"}}},
		{name: "completionTime moved", old: finished(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete),
			new:  with(finished(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete), func(s *batchv1.JobStatus) { s.CompletionTime = ptr.To(metav1.NewTime(now.Add(time.Second))) }),
			want: []want{{"status.completionTime", "field is immutable"}}},
		{name: "startTime moved while running", old: running, new: with(running, func(s *batchv1.JobStatus) { s.StartTime = &end }),
			want: []want{{"status.startTime", "field is immutable for unsuspended job once set"}}},
		{name: "startTime moved on resume", old: with(running, func(s *batchv1.JobStatus) {
			s.Active, s.Ready = 0, ptr.To[int32](0)
			s.Conditions = conds(batchv1.JobSuspended)
		}), new: with(running, func(s *batchv1.JobStatus) {
			s.StartTime = &end
			s.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse}}
		})},
		{name: "terminal condition dropped", old: finished(batchv1.JobFailureTarget, batchv1.JobFailed), new: finished(batchv1.JobFailureTarget),
			want: []want{{"status.conditions", "cannot disable the terminal Failed=True condition"}}},
		{name: "SuccessCriteriaMet dropped", old: finished(batchv1.JobSuccessCriteriaMet), new: finished(),
			want: []want{{"status.conditions", "cannot disable the SuccessCriteriaMet=True condition"}}},
		{name: "SuccessCriteriaMet after Complete", old: finished(batchv1.JobComplete), new: finished(batchv1.JobComplete, batchv1.JobSuccessCriteriaMet),
			want: []want{{"status.conditions", "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"}}},
		{name: "failed decreased", old: with(running, func(s *batchv1.JobStatus) { s.Failed = 2 }), new: with(running, func(s *batchv1.JobStatus) { s.Failed = 1 }),
			want: []want{{"status.failed", "cannot decrease the failed counter"}}},
		{name: "succeeded decreased", old: with(running, func(s *batchv1.JobStatus) { s.Succeeded = 2 }), new: running,
			want: []want{{"status.succeeded", "cannot decrease the succeeded counter"}}},
		{name: "succeeded decreased, elastic indexed", mutate: []func(*batchv1.Job){indexed, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](4) }},
			old: with(running, func(s *batchv1.JobStatus) { s.Succeeded, s.CompletedIndexes = 2, "0,3" }),
			new: with(running, func(s *batchv1.JobStatus) { s.Succeeded, s.CompletedIndexes = 1, "0" })},
		{name: "completed indexes too large", mutate: []func(*batchv1.Job){indexed}, old: running,
			new:  with(running, func(s *batchv1.JobStatus) { s.Succeeded, s.CompletedIndexes = 1, "4" }),
			want: []want{{"status.completedIndexes", `error parsing completedIndexes: too large index: "4"`}}},
		{name: "completed indexes of non-indexed", old: running, new: with(running, func(s *batchv1.JobStatus) { s.CompletedIndexes = "0" }),
			want: []want{{"status.completedIndexes", "cannot set non-empty completedIndexes when non-indexed completion mode"}}},
		{name: "failed indexes without backoffLimitPerIndex", mutate: []func(*batchv1.Job){indexed}, old: running,
			new:  with(running, func(s *batchv1.JobStatus) { s.FailedIndexes = ptr.To("1") }),
			want: []want{{"status.failedIndexes", "cannot set non-null failedIndexes when backoffLimitPerIndex is null"}}},
		{name: "failed indexes out of order", mutate: []func(*batchv1.Job){perIndex}, old: running,
			new:  with(running, func(s *batchv1.JobStatus) { s.FailedIndexes = ptr.To("2,1") }),
			want: []want{{"status.failedIndexes", "error parsing failedIndexes: non-increasing order, previous: 2, current: 1"}}},
		{name: "failed indexes overlap completed", mutate: []func(*batchv1.Job){perIndex}, old: running,
			new:  with(running, func(s *batchv1.JobStatus) { s.Succeeded, s.CompletedIndexes, s.FailedIndexes = 2, "0,2", ptr.To("1-3") }),
			want: []want{{"status.failedIndexes", "failedIndexes and completedIndexes overlap at index: 2"}}},
		{name: "complete with success policy without SuccessCriteriaMet", mutate: []func(*batchv1.Job){indexed, func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
		}}, old: finished(batchv1.JobComplete), new: with(finished(batchv1.JobComplete), func(s *batchv1.JobStatus) { s.Failed = 1 }),
			want: []want{{"status.conditions", "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resource()
			stored := created(t, newJob(tt.mutate...))
			stored.Status = tt.old
			obj := stored.DeepCopy()
			obj.Status = tt.new
			r.Status.PrepareForUpdate(context.Background(), obj, stored)
			errs := r.Status.ValidateUpdate(context.Background(), obj, stored)
			var got []want
			for _, e := range errs {
				got = append(got, want{e.Field, e.Detail})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("errors %v, want %v", errs, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("error %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func with(s batchv1.JobStatus, mutate func(*batchv1.JobStatus)) batchv1.JobStatus {
	c := s.DeepCopy()
	mutate(c)
	return *c
}
