package job

import (
	"math"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// spec.backoffLimitPerIndex: an Indexed Job retries each index on its own
// budget. The failures an index has had travel from each of its pods to
// the next in the job-index-failure-count annotation (and, for the ones a
// pod failure policy ignored, job-index-ignored-failure-count), as
// upstream keeps them.

func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return job.Spec.BackoffLimitPerIndex != nil && isIndexed(job)
}

// isPodFailed says whether p is a failure of its index: Failed, or deleted
// before it could succeed: at once, unless only failed pods are replaced,
// then once it has stopped.
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed || stoppedWhileDeleted(p) {
		return true
	}
	return !onlyReplaceFailedPods(job) && p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// annotationCount reads one of the failure count annotations; a missing
// or mangled one counts as 0, as upstream reads it.
func annotationCount(p *corev1.Pod, key string) int32 {
	n, err := strconv.Atoi(p.Annotations[key])
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int32(n)
}

// indexFailed says whether p's failure is its index's last: a FailIndex
// rule matched, or the index had used up backoffLimitPerIndex before it.
func indexFailed(job *batchv1.Job, p *corev1.Pod) bool {
	if !isPodFailed(p, job) {
		return false
	}
	v := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
	if v.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	return v.counts && annotationCount(p, batchv1.JobIndexFailureCountAnnotation) >= *job.Spec.BackoffLimitPerIndex
}

// failedIndexes merges the indexes status.failedIndexes already records
// with those whose pods just failed them.
func failedIndexes(job *batchv1.Job, completions int, pods []*corev1.Pod) map[int]bool {
	set := map[int]bool{}
	if job.Status.FailedIndexes != nil {
		set = parseIndexes(*job.Status.FailedIndexes, completions)
	}
	for _, p := range pods {
		if i := podIndex(p, completions); i >= 0 && indexFailed(job, p) {
			set[i] = true
		}
	}
	return set
}

// lastFailures is, for each index, the failed pod the index's next pod
// takes its failure counts from: the one with the most failures behind
// it, the latest to finish among equals.
func lastFailures(job *batchv1.Job, completions int, pods []*corev1.Pod) map[int]*corev1.Pod {
	last := map[int]*corev1.Pod{}
	for _, p := range pods {
		i := podIndex(p, completions)
		if i < 0 || !isPodFailed(p, job) {
			continue
		}
		if prev, ok := last[i]; !ok || (absoluteFailures(prev) <= absoluteFailures(p) && !finishedAt(p).Before(finishedAt(prev))) {
			last[i] = p
		}
	}
	return last
}

func absoluteFailures(p *corev1.Pod) int32 {
	return annotationCount(p, batchv1.JobIndexFailureCountAnnotation) + annotationCount(p, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

// inheritFailures writes on a new pod of an index the failure counts of
// the index so far: those of the pod it replaces plus that pod's failure.
func inheritFailures(job *batchv1.Job, replaced *corev1.Pod, ann map[string]string) {
	var failures, ignored int32
	if replaced != nil {
		failures = annotationCount(replaced, batchv1.JobIndexFailureCountAnnotation)
		ignored = annotationCount(replaced, batchv1.JobIndexIgnoredFailureCountAnnotation)
		if matchPodFailurePolicy(job.Spec.PodFailurePolicy, replaced).counts {
			failures++
		} else {
			ignored++
		}
	}
	ann[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(failures))
	if ignored > 0 {
		ann[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
	}
}

// indexesDue keeps the indexes whose back-off has passed: each index backs
// off on its own failures. wait is how long until the next of the others
// is due.
func (c *Controller) indexesDue(todo []int, last map[int]*corev1.Pod, now time.Time) (due []int, wait time.Duration) {
	due = []int{}
	for _, i := range todo {
		left := time.Duration(0)
		if p := last[i]; p != nil && c.PodFailureBackoff > 0 {
			left = backoffAfter(c.PodFailureBackoff, absoluteFailures(p)+1, finishedAt(p), now)
		}
		switch {
		case left <= 0:
			due = append(due, i)
		case wait == 0 || left < wait:
			wait = left
		}
	}
	return due, wait
}
