// Package job runs a Job's pods to completion: up to parallelism at once,
// until completions succeeded, failing the Job past backoffLimit or
// activeDeadlineSeconds.
package job

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "job"

const (
	labelControllerUID       = "batch.kubernetes.io/controller-uid"
	labelJobName             = "batch.kubernetes.io/job-name"
	legacyLabelControllerUID = "controller-uid"
	legacyLabelJobName       = "job-name"

	defaultBackoffLimit = 6
)

var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// DefaultPodFailureBackoff and maxPodFailureBackoff are upstream's.
const (
	DefaultPodFailureBackoff = 10 * time.Second
	maxPodFailureBackoff     = 6 * time.Minute
)

// backoffLeft is how long to wait before replacing failed pods: the back-off
// for failed failures, counted from when the last one finished.
func (c *Controller) backoffLeft(pods []*corev1.Pod, failed int32, now time.Time) time.Duration {
	if c.PodFailureBackoff <= 0 || failed == 0 {
		return 0
	}
	var last time.Time
	for _, p := range pods {
		if p.Status.Phase == corev1.PodFailed {
			if t := finishedAt(p); t.After(last) {
				last = t
			}
		}
	}
	return backoffAfter(c.PodFailureBackoff, failed, last, now)
}

// backoffAfter is what is left of the back-off after failures, the last
// of them at last: base doubled with each failure after the first, up to
// maxPodFailureBackoff.
func backoffAfter(base time.Duration, failures int32, last, now time.Time) time.Duration {
	if last.IsZero() {
		return 0
	}
	d := base
	for i := int32(1); i < failures && d < maxPodFailureBackoff; i++ {
		d *= 2
	}
	d = min(d, maxPodFailureBackoff)
	return max(last.Add(d).Sub(now), 0)
}

// finishedAt is when a failed pod's last container ended, or when it
// stopped being ready if the kubelet did not say.
func finishedAt(p *corev1.Pod) time.Time {
	var t time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if term := cs.State.Terminated; term != nil && term.FinishedAt.After(t) {
			t = term.FinishedAt.Time
		}
	}
	if t.IsZero() {
		if rc := controllerutil.PodReadyCondition(p); rc != nil {
			t = rc.LastTransitionTime.Time
		}
	}
	return t
}

// Controller reconciles Jobs.
type Controller struct {
	client       kubernetes.Interface
	jobLister    batchlisters.JobLister
	podLister    corelisters.PodLister
	synced       []cache.InformerSynced
	queue        controllerutil.Queue
	expectations *controllerutil.Expectations
	clock        clock.Clock
	// Events records what the controller did; set it before Run.
	Events controllerutil.Recorder
	// PodFailureBackoff is the delay before replacing the first failed pod,
	// doubling with each failure up to maxPodFailureBackoff; 0 disables it.
	PodFailureBackoff time.Duration

	deletions *controllerutil.PodDeletions
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, jobs batchinformers.JobInformer, pods coreinformers.PodInformer, mp workqueue.MetricsProvider, clk clock.Clock) *Controller {
	expectations := controllerutil.NewExpectations(clk)
	c := &Controller{
		client:            client,
		jobLister:         jobs.Lister(),
		podLister:         pods.Lister(),
		synced:            []cache.InformerSynced{jobs.Informer().HasSynced, pods.Informer().HasSynced},
		queue:             controllerutil.NewQueue(Name, mp),
		expectations:      expectations,
		clock:             clk,
		Events:            controllerutil.NopRecorder{},
		PodFailureBackoff: DefaultPodFailureBackoff,
		deletions:         controllerutil.NewPodDeletions(expectations),
	}
	_, _ = jobs.Informer().AddEventHandler(controllerutil.EnqueueHandler(c.queue))
	_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.podEvent(obj, true, false) },
		UpdateFunc: func(oldObj, obj any) {
			if oldObj.(*corev1.Pod).ResourceVersion != obj.(*corev1.Pod).ResourceVersion {
				c.podEvent(obj, false, false)
			}
		},
		DeleteFunc: func(obj any) { c.podEvent(obj, false, true) },
	})
	return c
}

func (c *Controller) podEvent(obj any, added, deleted bool) {
	pod, ok := controllerutil.FromDeleted[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := controllerutil.ControllerRef(pod)
	if ref == nil || ref.Kind != controllerKind.Kind || ref.APIVersion != controllerKind.GroupVersion().String() {
		return
	}
	job, err := c.jobLister.Jobs(pod.Namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return
	}
	key, _ := controllerutil.KeyFunc(job)
	switch {
	case deleted || pod.DeletionTimestamp != nil:
		c.deletions.Observed(key, pod.UID)
	case added:
		c.expectations.CreationObserved(key)
	}
	c.queue.Add(key)
}

// Run processes Jobs with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced...) {
		return
	}
	controllerutil.RunWorkers(ctx, Name, c.queue, workers, c.sync)
}

func finished(job *batchv1.Job) bool {
	return condition(&job.Status, batchv1.JobComplete) != nil || condition(&job.Status, batchv1.JobFailed) != nil
}

func (c *Controller) selector(job *batchv1.Job) (labels.Selector, error) {
	if job.Spec.Selector == nil {
		// The apiserver normally generates one; select on our own label.
		return labels.SelectorFromSet(labels.Set{labelControllerUID: string(job.UID)}), nil
	}
	return metav1.LabelSelectorAsSelector(job.Spec.Selector)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.jobLister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.deletions.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if finished(cached) {
		return nil
	}
	job := cached.DeepCopy()
	sel, err := c.selector(job)
	if err != nil {
		return nil
	}
	all, err := c.podLister.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	pods, err := controllerutil.Claim(ctx, job, controllerutil.NewControllerRef(job, controllerKind.GroupVersion().String(), controllerKind.Kind), sel, all,
		controllerutil.PodPatcher(c.client), controllerutil.CanAdopt("job", job, c.client.BatchV1().Jobs(ns).Get))
	if err != nil {
		return err
	}

	now := c.clock.Now()
	var active []*corev1.Pod
	// failed leaves out the failures the pod failure policy ignores;
	// allFailed, which paces replacements, does not.
	var succeeded, failed, allFailed, ready, restarts, terminating int32
	var failJob string
	var failJobAt time.Time
	var terminatingPods []*corev1.Pod
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			succeeded++
		case p.Status.Phase == corev1.PodFailed:
			allFailed++
			v := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
			if v.counts {
				failed++
			}
			// The first pod to fail a FailJob rule names the reason.
			if at := finishedAt(p); v.failJob != "" && (failJob == "" || at.Before(failJobAt)) {
				failJob, failJobAt = v.failJob, at
			}
		case p.DeletionTimestamp != nil:
			terminating++
			terminatingPods = append(terminatingPods, p)
		default:
			active = append(active, p)
			if controllerutil.IsPodReady(p) {
				ready++
			}
			for _, cs := range p.Status.ContainerStatuses {
				restarts += cs.RestartCount
			}
		}
	}
	st := job.Status.DeepCopy()
	indexed := isIndexed(job)
	perIndex := hasBackoffLimitPerIndex(job)
	var done, failedIdx map[int]bool
	if indexed {
		// An index counts once, however many of its pods succeeded, and
		// stays counted after its pod is gone: status keeps the record.
		done = completedIndexes(job.Status.CompletedIndexes, int(*job.Spec.Completions), pods)
		succeeded = int32(len(done))
		st.CompletedIndexes = formatIndexes(done, int(*job.Spec.Completions))
	}
	if perIndex {
		failedIdx = failedIndexes(job, int(*job.Spec.Completions), pods)
		st.FailedIndexes = ptr.To(formatIndexes(failedIdx, int(*job.Spec.Completions)))
	}
	// Upstream's counters never go down: a finished pod that is deleted
	// afterwards (kubectl delete, pod GC) stays counted, and does not get
	// its work run again or its failure forgiven.
	if !indexed {
		succeeded = max(succeeded, job.Status.Succeeded)
	}
	counted := max(failed, job.Status.Failed)
	st.Succeeded, st.Failed = succeeded, counted
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend
	if st.StartTime == nil && !suspended {
		t := metav1.NewTime(now)
		st.StartTime = &t
	}

	backoffLimit := int32(defaultBackoffLimit)
	if perIndex {
		// Each index has its own limit; the API defaults this one away.
		backoffLimit = math.MaxInt32
	}
	if job.Spec.BackoffLimit != nil {
		backoffLimit = *job.Spec.BackoffLimit
	}
	var failReason, failMessage string
	successCond := condition(&job.Status, batchv1.JobSuccessCriteriaMet)
	failureTarget := condition(&job.Status, batchv1.JobFailureTarget)
	switch {
	case successCond != nil:
		// The Job has succeeded; failures of the pods it is stopping
		// change nothing.
	case failureTarget != nil:
		// The verdict is in; the pods are still going.
		failReason, failMessage = failureTarget.Reason, failureTarget.Message
	case failJob != "":
		failReason, failMessage = batchv1.JobReasonPodFailurePolicy, failJob
	case counted > backoffLimit || (job.Spec.Template.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && restarts > 0 && restarts >= backoffLimit && backoffLimit > 0):
		failReason, failMessage = batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"
	case job.Spec.ActiveDeadlineSeconds != nil && st.StartTime != nil && !suspended &&
		!now.Before(st.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second)):
		failReason, failMessage = batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline"
	case perIndex && job.Spec.MaxFailedIndexes != nil && len(failedIdx) > int(*job.Spec.MaxFailedIndexes):
		failReason, failMessage = batchv1.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes"
	case perIndex && len(failedIdx) > 0 && len(failedIdx)+len(done) >= int(*job.Spec.Completions):
		// Every index has run to its end, and some failed.
		failReason, failMessage = batchv1.JobReasonFailedIndexes, "Job has failed indexes"
	}

	parallelism := int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	complete := false
	successReason, successMessage := batchv1.JobReasonCompletionsReached, completionsReachedMessage
	switch msg, met := matchSuccessPolicy(job.Spec.SuccessPolicy, int(ptr.Deref(job.Spec.Completions, 0)), done); {
	case successCond != nil:
		complete, successReason, successMessage = true, successCond.Reason, successCond.Message
	case failReason != "":
	case met:
		complete, successReason, successMessage = true, batchv1.JobReasonSuccessPolicy, msg
	case job.Spec.Completions != nil:
		complete = succeeded >= *job.Spec.Completions
	default:
		// Work-queue Job: done once a pod succeeded and none still runs.
		complete = succeeded > 0 && len(active) == 0
	}

	var manageErr error
	activeCount := len(active)
	switch {
	case failReason != "":
		manageErr = c.deletePods(ctx, job, key, active)
		if setCondition(st, batchv1.JobFailureTarget, failReason, failMessage, now) {
			slog.Info("job failed", "job", key, "reason", failReason)
			c.Events.Eventf(job, corev1.EventTypeWarning, failReason, failMessage)
		}
	case complete:
		manageErr = c.deletePods(ctx, job, key, active)
		setCondition(st, batchv1.JobSuccessCriteriaMet, successReason, successMessage, now)
	case c.expectations.Satisfied(key):
		want := parallelism
		if suspended {
			want = 0
		} else if job.Spec.Completions != nil {
			want = min(parallelism, *job.Spec.Completions-succeeded)
		} else if succeeded > 0 {
			want = 0
		}
		want = max(want, 0)
		if wait := c.backoffLeft(pods, allFailed, now); !perIndex && wait > 0 && int(want) > len(active) {
			// Recent failures: hold new pods back, as upstream does, so a
			// crashing Job does not spin.
			want = int32(len(active))
			c.queue.AddAfter(key, wait)
		}
		// With podReplacementPolicy Failed a deleted pod keeps its place,
		// and its index, until it has stopped.
		holding := active
		if onlyReplaceFailedPods(job) {
			holding = append(slices.Clip(active), terminatingPods...)
		}
		var delta int
		var todo []int
		var stray []*corev1.Pod
		var last map[int]*corev1.Pod
		if indexed {
			// A failed index gets no more pods.
			todo = pendingIndexes(int(*job.Spec.Completions), union(done, failedIdx), holding)
			stray = strayPods(active, int(*job.Spec.Completions))
		}
		if perIndex {
			last = lastFailures(job, int(*job.Spec.Completions), pods)
			var wait time.Duration
			if todo, wait = c.indexesDue(todo, last, now); wait > 0 {
				c.queue.AddAfter(key, wait)
			}
		}
		delta, manageErr = c.manage(ctx, key, job, active, int(want), len(holding)-len(active), todo, stray, last)
		activeCount += delta
	}
	if failReason != "" || complete {
		// The pods just deleted are terminating too. Pods killed because
		// the Job is over count as failed, as upstream counts them; the
		// count never drops once such a pod is gone from the API.
		activeCount = 0
		ready = 0
		terminating += int32(len(active))
		st.Failed = max(job.Status.Failed, failed+terminating)
		// The terminal condition waits for the last pod to stop, so that
		// whoever waits on it finds nothing of the Job still running.
		if terminating == 0 && manageErr == nil {
			t := metav1.NewTime(now)
			if failReason != "" {
				setCondition(st, batchv1.JobFailed, failReason, failMessage, now)
			} else {
				setCondition(st, batchv1.JobComplete, successReason, successMessage, now)
				st.CompletionTime = &t
				slog.Info("job complete", "job", key)
				c.Events.Eventf(job, corev1.EventTypeNormal, "Completed", "Job completed")
			}
		}
	}
	st.Ready = &ready
	st.Terminating = &terminating
	if st.UncountedTerminatedPods == nil {
		// Upstream always shows it; kube-lite counts pods without the
		// tracking finalizer, so nothing is ever waiting in it.
		st.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	st.Active = int32(activeCount)
	if job.Spec.ActiveDeadlineSeconds != nil && st.StartTime != nil && failReason == "" && !complete {
		left := st.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second).Sub(now)
		c.queue.AddAfter(key, controllerutil.ResyncAfter(left))
	}
	if !apiequality.Semantic.DeepEqual(&job.Status, st) {
		job.Status = *st
		if _, err := c.client.BatchV1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update status of job %s: %w", key, err)
		}
	}
	return manageErr
}

const completionsReachedMessage = "Reached expected number of succeeded pods"

// condition is st's true condition of type t, or nil.
func condition(st *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if c := &st.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// setCondition adds a true condition of type t unless there is one; true
// if it added it.
func setCondition(st *batchv1.JobStatus, t batchv1.JobConditionType, reason, msg string, now time.Time) bool {
	if condition(st, t) != nil {
		return false
	}
	st.Conditions = append(st.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)})
	return true
}

// manage creates or deletes pods so that want are active; it returns by
// how much the active count changed, as status reports it right away.
// Terminating pods that are not to be replaced yet hold a place each. For
// an Indexed Job, todo are the indexes still without a pod, lowest first,
// stray the active pods to delete in any case, and replaced the failed
// pods their new pods take failure counts from.
func (c *Controller) manage(ctx context.Context, key string, job *batchv1.Job, active []*corev1.Pod, want, holding int, todo []int, stray []*corev1.Pod, replaced map[int]*corev1.Pod) (int, error) {
	diff := len(active) - want
	switch {
	case diff > 0 || len(stray) > 0:
		// Upstream only deletes in such a sync: the pods to create are
		// counted once the strays are gone.
		var rest []*corev1.Pod
		for _, p := range active {
			if !slices.Contains(stray, p) {
				rest = append(rest, p)
			}
		}
		n := max(diff, len(stray))
		victims := append(slices.Clip(stray), controllerutil.PodsToDelete(rest, n-len(stray))...)
		return -n, c.deletePods(ctx, job, key, victims)
	case diff < 0:
		n := max(-diff-holding, 0)
		var next chan int
		if todo != nil {
			n = min(n, len(todo))
			next = make(chan int, n)
			for _, i := range todo[:n] {
				next <- i
			}
		}
		if n == 0 {
			return 0, nil
		}
		c.expectations.Expect(key, n, 0)
		failed, first := controllerutil.Parallel(n, func() error {
			index := -1
			if next != nil {
				index = <-next
			}
			err := c.createPod(ctx, job, index, replaced)
			if err != nil {
				// No pod will show up for this create.
				c.expectations.CreationObserved(key)
			}
			return err
		})
		if first != nil {
			return n - failed, fmt.Errorf("create pod for job %s: %w", key, first)
		}
		return n, nil
	}
	return 0, nil
}

func (c *Controller) deletePods(ctx context.Context, job *batchv1.Job, key string, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	c.deletions.Expect(key, pods)
	var errs []error
	for _, p := range pods {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil {
			c.deletions.Observed(key, p.UID)
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		c.Events.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
	}
	if len(errs) > 0 {
		return fmt.Errorf("delete pods of job %s: %v", key, errs)
	}
	return nil
}

// createPod creates one of job's pods; index >= 0 makes it that
// completion index's pod, as upstream names and marks it.
func (c *Controller) createPod(ctx context.Context, job *batchv1.Job, index int, replaced map[int]*corev1.Pod) error {
	lbls := map[string]string{}
	for k, v := range job.Spec.Template.Labels {
		lbls[k] = v
	}
	if job.Spec.Selector == nil {
		lbls[labelControllerUID] = string(job.UID)
		lbls[legacyLabelControllerUID] = string(job.UID)
		lbls[labelJobName] = job.Name
		lbls[legacyLabelJobName] = job.Name
	}
	var ann map[string]string
	if len(job.Spec.Template.Annotations) > 0 {
		ann = map[string]string{}
		for k, v := range job.Spec.Template.Annotations {
			ann[k] = v
		}
	}
	generateName := job.Name + "-"
	if index >= 0 {
		generateName = fmt.Sprintf("%s-%d-", job.Name, index)
		if ann == nil {
			ann = map[string]string{}
		}
		ann[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
		if hasBackoffLimitPerIndex(job) {
			inheritFailures(job, replaced[index], ann)
		}
		lbls[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    generateName,
			Namespace:       job.Namespace,
			Labels:          lbls,
			Annotations:     ann,
			OwnerReferences: []metav1.OwnerReference{controllerutil.NewControllerRef(job, controllerKind.GroupVersion().String(), controllerKind.Kind)},
		},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if index >= 0 {
		withCompletionIndex(job.Name, index, &pod.Spec)
	}
	created, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.Events.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return err
	}
	c.Events.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", created.Name)
	return nil
}
