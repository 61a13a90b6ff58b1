package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/manager"
)

func newJob(name string, completions, parallelism, backoffLimit int32, exitCode string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			Completions:  ptr.To(completions),
			Parallelism:  ptr.To(parallelism),
			BackoffLimit: ptr.To(backoffLimit),
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{exitCodeAnnotation: exitCode}},
				Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
					Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}},
			},
		},
	}
}

func (c *cluster) waitJobCondition(name string, want batchv1.JobConditionType) *batchv1.Job {
	c.t.Helper()
	var job *batchv1.Job
	waitFor(c.t, "job "+name+" "+string(want), func() (bool, error) {
		j, err := c.client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		job = j
		return jobCondition(j, want) != "", nil
	})
	return job
}

// waitRunningPod waits for job's one pod to run, and returns it.
func (c *cluster) waitRunningPod(job *batchv1.Job) v1.Pod {
	c.t.Helper()
	var pod v1.Pod
	waitFor(c.t, "the job's pod to run", func() (bool, error) {
		pods := c.jobPods(job)
		if len(pods) == 1 && pods[0].Status.Phase == v1.PodRunning {
			pod = pods[0]
			return true, nil
		}
		return false, nil
	})
	return pod
}

func (c *cluster) jobPods(job *batchv1.Job) []v1.Pod {
	c.t.Helper()
	list, err := c.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []v1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == job.UID {
			out = append(out, p)
		}
	}
	return out
}

func TestJobRunsToCompletion(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	if _, err := c.client.BatchV1().Jobs(ns).Create(context.Background(), newJob("ok", 4, 2, 6, "0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := c.waitJobCondition("ok", batchv1.JobComplete)
	if job.Status.Succeeded != 4 || job.Status.Failed != 0 || job.Status.CompletionTime == nil {
		t.Errorf("status %+v, want 4 succeeded and a completion time", job.Status)
	}
	if n := len(c.jobPods(job)); n != 4 {
		t.Errorf("%d pods, want exactly the 4 completions", n)
	}
}

func TestJobRespectsBackoffLimit(t *testing.T) {
	// A short back-off so that replacing the failed pods waits, but briefly.
	c := start(t, func(o *manager.Options) { o.JobPodFailureBackoff = 200 * time.Millisecond })
	c.addNode("node-a")
	if _, err := c.client.BatchV1().Jobs(ns).Create(context.Background(), newJob("crash", 1, 1, 2, "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := c.waitJobCondition("crash", batchv1.JobFailed)
	var reason string
	for _, cond := range job.Status.Conditions {
		if cond.Type == batchv1.JobFailed {
			reason = cond.Reason
		}
	}
	if reason != batchv1.JobReasonBackoffLimitExceeded {
		t.Errorf("Failed reason %q, want %s", reason, batchv1.JobReasonBackoffLimitExceeded)
	}
	// backoffLimit 2 allows two retries: three pods in all, all failed.
	if job.Status.Failed != 3 {
		t.Errorf("status.failed %d, want 3", job.Status.Failed)
	}
	if n := len(c.jobPods(job)); n != 3 {
		t.Errorf("%d pods created, want 3", n)
	}
}

// TestFinishedJobGoesAfterItsTTL: spec.ttlSecondsAfterFinished removes the
// Job, and with it its pods, once it has finished.
func TestFinishedJobGoesAfterItsTTL(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	j := newJob("brief", 1, 1, 6, "0")
	j.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
	created, err := c.client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A watch sees the Job Complete however soon the TTL removes it after:
	// condition times have whole seconds, so that can be at once.
	w, err := c.client.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=brief", ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	complete, deadline := false, time.After(90*time.Second)
	for deleted := false; !deleted; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the job watch ended early")
			}
			j, _ := ev.Object.(*batchv1.Job)
			deleted = ev.Type == watch.Deleted
			if j != nil && !deleted && jobCondition(j, batchv1.JobComplete) != "" {
				complete = true
			}
		case <-deadline:
			t.Fatalf("job brief still there after 90s (seen Complete: %t)", complete)
		}
	}
	if !complete {
		t.Fatal("job brief was deleted without being seen Complete")
	}
	waitFor(t, "the finished job and its pods to be deleted", func() (bool, error) {
		_, err := c.client.BatchV1().Jobs(ns).Get(ctx, "brief", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		return len(c.jobPods(created)) == 0, nil
	})
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) string {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == v1.ConditionTrue {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// TestJobBackoffLimitPerIndex: through the apiserver, an Indexed Job whose
// pods all fail retries each index once (backoffLimitPerIndex 1), then
// fails with FailedIndexes listing them all.
func TestJobBackoffLimitPerIndex(t *testing.T) {
	c := start(t, func(o *manager.Options) { o.JobPodFailureBackoff = 100 * time.Millisecond })
	c.addNode("node-a")
	j := newJob("per-index", 3, 3, 6, "1")
	j.Spec.BackoffLimit = nil
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	if _, err := c.client.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := c.waitJobCondition("per-index", batchv1.JobFailed)
	if got, want := jobCondition(job, batchv1.JobFailed), "FailedIndexes: Job has failed indexes"; got != want {
		t.Errorf("Failed %q, want %q", got, want)
	}
	if job.Status.Failed != 6 || ptr.Deref(job.Status.FailedIndexes, "") != "0-2" {
		t.Errorf("failed %d, failedIndexes %q; want 6 and \"0-2\"", job.Status.Failed, ptr.Deref(job.Status.FailedIndexes, "<nil>"))
	}
}

// TestJobPodFailurePolicyFailJob: a FailJob rule on a pod condition fails
// the Job at the first such pod, whatever backoffLimit says.
func TestJobPodFailurePolicyFailJob(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	j := newJob("fail-fast", 1, 1, 6, "1")
	// The fake kubelet leaves the failed pod Ready=False.
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.PodReady, Status: v1.ConditionFalse}}}}}
	if _, err := c.client.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := c.waitJobCondition("fail-fast", batchv1.JobFailed)
	pods := c.jobPods(job)
	if len(pods) != 1 {
		t.Fatalf("%d pods, want the one that failed", len(pods))
	}
	want := "PodFailurePolicy: Pod " + ns + "/" + pods[0].Name + " has condition Ready matching FailJob rule at index 0"
	if got := jobCondition(job, batchv1.JobFailed); got != want || job.Status.Failed != 1 {
		t.Errorf("Failed %q with %d failed, want %q with 1", got, job.Status.Failed, want)
	}
}

// TestJobCountsAPodDeletedAfterItFailed: the Job controller's pods carry
// the job-tracking finalizer, so a pod that fails and is deleted at once
// (kubectl delete --grace-period=0) while the controller is not looking
// stays until it is counted: the Job still fails past backoffLimit 0,
// and then the pod goes.
func TestJobCountsAPodDeletedAfterItFailed(t *testing.T) {
	c := startWithoutManager(t)
	c.addNode("node-a")
	stop := c.runManager(nil)
	ctx := context.Background()
	j := newJob("deleted", 1, 1, 0, "")
	j.Spec.Template.Annotations = nil // the fake kubelet keeps it running
	created, err := c.client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := c.waitRunningPod(created)
	if !slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer) {
		t.Fatalf("pod finalizers %v, want %s", pod.Finalizers, batchv1.JobTrackingFinalizer)
	}
	stop()

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Phase = v1.PodFailed
		_, err = c.client.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	left, err := c.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || left.DeletionTimestamp == nil {
		t.Fatalf("the deleted pod should stay, terminating, until counted: %v %v", left, err)
	}

	c.runManager(nil)
	job := c.waitJobCondition("deleted", batchv1.JobFailed)
	if got := jobCondition(job, batchv1.JobFailed); got != "BackoffLimitExceeded: Job has reached the specified backoff limit" || job.Status.Failed != 1 {
		t.Errorf("Failed %q with failed=%d, want BackoffLimitExceeded with 1", got, job.Status.Failed)
	}
	if u := job.Status.UncountedTerminatedPods; u == nil || len(u.Succeeded)+len(u.Failed) != 0 {
		t.Errorf("uncountedTerminatedPods %+v, want empty", u)
	}
	waitFor(t, "the counted pod to go", func() (bool, error) {
		_, err := c.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// TestDeletedJobReleasesItsPods: deleting a Job with its pods running
// (propagation Background) leaves no pod held by the job-tracking
// finalizer: the garbage collector's deletions complete.
func TestDeletedJobReleasesItsPods(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	j := newJob("doomed", 2, 2, 6, "")
	j.Spec.Template.Annotations = nil
	created, err := c.client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job's pods", func() (bool, error) { return len(c.jobPods(created)) == 2, nil })
	if err := c.client.BatchV1().Jobs(ns).Delete(ctx, "doomed", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted job's pods to go", func() (bool, error) { return len(c.jobPods(created)) == 0, nil })
}

// TestDeletedPodOfAJobReplacingOnlyFailedPods: with podReplacementPolicy
// Failed, a running pod deleted by a user is waited for until the kubelet
// has stopped it, then counted as failed and replaced; the finalizer does
// not keep it, or the Job, waiting for ever.
func TestDeletedPodOfAJobReplacingOnlyFailedPods(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	j := newJob("replace-failed", 1, 1, 6, "")
	j.Spec.Template.Annotations = nil
	j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	created, err := c.client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := c.waitRunningPod(created).Name
	if err := c.client.CoreV1().Pods(ns).Delete(ctx, first, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted pod to be replaced and counted", func() (bool, error) {
		job, err := c.client.BatchV1().Jobs(ns).Get(ctx, "replace-failed", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pods := c.jobPods(created)
		return job.Status.Failed == 1 && len(pods) == 1 && pods[0].Name != first && pods[0].DeletionTimestamp == nil, nil
	})
}

// TestJobSuspendedThenResumed: through the apiserver, a Job created
// suspended says so in its Suspended condition and starts no pod; resumed,
// the condition turns False (JobResumed), startTime is set and the Job runs
// to completion, as upstream.
func TestJobSuspendedThenResumed(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	j := newJob("held", 1, 1, 6, "0")
	j.Spec.Suspend = ptr.To(true)
	created, err := c.client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job := c.waitJobCondition("held", batchv1.JobSuspended)
	if got, want := jobCondition(job, batchv1.JobSuspended), "JobSuspended: Job suspended"; got != want {
		t.Errorf("Suspended %q, want %q", got, want)
	}
	if job.Status.StartTime != nil || len(c.jobPods(created)) != 0 {
		t.Errorf("suspended job started: startTime %v, %d pods", job.Status.StartTime, len(c.jobPods(created)))
	}
	if _, err := c.client.BatchV1().Jobs(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	job = c.waitJobCondition("held", batchv1.JobComplete)
	var resumed string
	for _, cond := range job.Status.Conditions {
		if cond.Type == batchv1.JobSuspended {
			resumed = string(cond.Status) + " " + cond.Reason + ": " + cond.Message
		}
	}
	if want := "False JobResumed: Job resumed"; resumed != want || job.Status.StartTime == nil {
		t.Errorf("Suspended %q (want %q), startTime %v", resumed, want, job.Status.StartTime)
	}
}
