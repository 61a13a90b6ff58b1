package job

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
)

// table renders `kubectl get jobs` as upstream:
// NAME STATUS COMPLETIONS DURATION AGE, wide adds CONTAINERS IMAGES SELECTOR.
func table(c clock.PassiveClock) registry.TableConvertor {
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Status", "string", 0, "Status of the job."),
		tableutil.Column("Completions", "string", 0, batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
		tableutil.Column("Duration", "string", 0, "Time required to complete the job."),
		tableutil.AgeColumn(),
		tableutil.Column("Containers", "string", 1, "Names of each container in the template."),
		tableutil.Column("Images", "string", 1, "Images referenced by each container in the template."),
		tableutil.Column("Selector", "string", 1, batchv1.JobSpec{}.SwaggerDoc()["selector"]),
	}
	return tableutil.New(cols, func(j *batchv1.Job) []interface{} {
		now := c.Now()
		names, images := tableutil.ContainersAndImages(j.Spec.Template.Spec.Containers)
		return []interface{}{
			j.Name,
			status(j),
			completions(j),
			jobDuration(j, now),
			tableutil.Age(j.CreationTimestamp, now),
			names,
			images,
			metav1.FormatLabelSelector(j.Spec.Selector),
		}
	})
}

// status is the job's state in kubectl's order of precedence: an outcome
// first, then deletion, then the transient states.
func status(j *batchv1.Job) string {
	switch conds := j.Status.Conditions; {
	case hasCondition(conds, batchv1.JobComplete):
		return "Complete"
	case hasCondition(conds, batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case hasCondition(conds, batchv1.JobSuspended):
		return "Suspended"
	case hasCondition(conds, batchv1.JobFailureTarget):
		return "FailureTarget"
	case hasCondition(conds, batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	default:
		return "Running"
	}
}

func completions(j *batchv1.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	if p := j.Spec.Parallelism; p != nil && *p > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *p)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

func jobDuration(j *batchv1.Job, now time.Time) string {
	switch {
	case j.Status.StartTime == nil:
		return ""
	case j.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	default:
		return duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}
}
