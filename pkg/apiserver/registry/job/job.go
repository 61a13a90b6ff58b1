// Package job holds the rules for batch/v1 Jobs: defaults, selector
// generation, validation, the status subresource, table columns and the
// status.successful field selector.
package job

import (
	"context"
	"maps"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/pod"
)

// The pre-1.27 label keys; upstream still sets them next to the
// batch.kubernetes.io/ ones because older clients select pods with them.
const (
	legacyControllerUIDLabel = "controller-uid"
	legacyJobNameLabel       = "job-name"
)

// Resource describes jobs for the generic REST handler; c is the clock that
// table ages and durations are measured against.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: batchv1.SchemeGroupVersion,
		Name:         "jobs",
		Singular:     "job",
		Kind:         "Job",
		Namespaced:   true,
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &batchv1.Job{} },
		NewList:      func() runtime.Object { return &batchv1.JobList{} },
		Strategy:     strategy{},
		Status:       statusStrategy{},
		Table:        table(c),
		Attrs:        Attrs,
	}
}

// Attrs adds status.successful, the field selector upstream serves for jobs.
func Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	j := obj.(*batchv1.Job)
	return labels.Set(j.Labels), fields.Set{"status.successful": strconv.Itoa(int(j.Status.Succeeded))}, nil
}

type strategy struct{}

func (strategy) Default(obj runtime.Object) {
	j := obj.(*batchv1.Job)
	spec := &j.Spec
	// A job that names neither runs one pod to completion.
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = ptr.To[int32](1<<31 - 1)
		} else {
			spec.BackoffLimit = ptr.To[int32](6)
		}
	}
	if spec.Template.Labels != nil && len(j.Labels) == 0 {
		j.Labels = maps.Clone(spec.Template.Labels)
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.PodFailurePolicy != nil {
		for _, rule := range spec.PodFailurePolicy.Rules {
			for i := range rule.OnPodConditions {
				if rule.OnPodConditions[i].Status == "" {
					rule.OnPodConditions[i].Status = "True"
				}
			}
		}
	}
	if spec.PodReplacementPolicy == nil {
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = ptr.To(false)
	}
	pod.DefaultPodSpec(&spec.Template.Spec)
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	j := obj.(*batchv1.Job)
	j.Status = batchv1.JobStatus{}
	j.Generation = 1
	if ptr.Deref(j.Spec.ManualSelector, false) {
		return
	}
	// The generated selector names the job's UID, so the UID must exist
	// now; the handler keeps a UID that is already set.
	if j.UID == "" {
		j.UID = uuid.NewUUID()
	}
	// A job labelled only by defaulting from its template ends up, upstream,
	// with the generated labels too (defaulting shares the map, and storage
	// reads default again); clients select jobs by job-name.
	inherited := len(j.Labels) == 0 || maps.Equal(j.Labels, j.Spec.Template.Labels)
	generateSelector(j)
	if inherited {
		j.Labels = maps.Clone(j.Spec.Template.Labels)
	}
}

// generateSelector labels the template with the job's name and UID and
// selects on the UID, so that no other job's pods can ever match. Labels the
// user set already are left alone; validation rejects wrong ones.
func generateSelector(j *batchv1.Job) {
	t := &j.Spec.Template
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	for _, key := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
		if _, ok := t.Labels[key]; !ok {
			t.Labels[key] = j.Name
		}
	}
	for _, key := range []string{legacyControllerUIDLabel, batchv1.ControllerUidLabel} {
		if _, ok := t.Labels[key]; !ok {
			t.Labels[key] = string(j.UID)
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	j := obj.(*batchv1.Job)
	allErrs := validateGeneratedSelector(j)
	allErrs = append(allErrs, validateSpec(&j.Spec, field.NewPath("spec"))...)
	return append(allErrs, validateIndexedName(j)...)
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newJ, oldJ := obj.(*batchv1.Job), old.(*batchv1.Job)
	newJ.Status = oldJ.Status
	newJ.Generation = registry.NextGeneration(oldJ.Generation, !apiequality.Semantic.DeepEqual(newJ.Spec, oldJ.Spec))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	newJ, oldJ := obj.(*batchv1.Job), old.(*batchv1.Job)
	specPath := field.NewPath("spec")
	allErrs := validateSpec(&newJ.Spec, specPath)
	return append(allErrs, validateSpecUpdate(newJ, oldJ, specPath)...)
}

type statusStrategy struct{}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newJ, oldJ := obj.(*batchv1.Job), old.(*batchv1.Job)
	newJ.Spec = oldJ.Spec
	newJ.Generation = oldJ.Generation
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validateStatusUpdate(obj.(*batchv1.Job), old.(*batchv1.Job))
}
