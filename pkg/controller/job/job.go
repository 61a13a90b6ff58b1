// Package job runs a Job's pods to completion: up to parallelism at once,
// until completions succeeded, failing the Job past backoffLimit or
// activeDeadlineSeconds.
package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
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
// for the Job's failures since its last success, counted from when the last
// one ended, whether or not its pod is still there.
func (c *Controller) backoffLeft(rec backoffRecord, now time.Time) time.Duration {
	if c.PodFailureBackoff <= 0 || rec.failures == 0 {
		return 0
	}
	return backoffAfter(c.PodFailureBackoff, rec.failures, rec.last, now)
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
	backoffs          *backoffRecords
	// maxPodsPerSync is MaxPodCreateDeletePerSync; tests lower it.
	maxPodsPerSync int

	deletions *controllerutil.PodDeletions
	removals  *finalizerRemovals
	writes    *statusWrites
	// orphans are the pods whose tracking finalizer is to go because no
	// unfinished Job counts them.
	orphans controllerutil.Queue
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
		backoffs:          newBackoffRecords(),
		maxPodsPerSync:    MaxPodCreateDeletePerSync,
		deletions:         controllerutil.NewPodDeletions(expectations),
		removals:          newFinalizerRemovals(),
		writes:            &statusWrites{rv: map[string]uint64{}},
		orphans:           controllerutil.NewQueue(orphanQueueName, mp),
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
	if ref != nil && isJobRef(ref) && (deleted || !hasTracking(pod)) {
		c.removals.observed(pod.Namespace+"/"+ref.Name, pod.UID)
	}
	// A pod still holding the finalizer that no Job counts loses it.
	orphan := func() {
		if !deleted && hasTracking(pod) {
			if key, ok := controllerutil.KeyFunc(pod); ok {
				c.orphans.Add(key)
			}
		}
	}
	if ref == nil {
		orphan()
		return
	}
	if !isJobRef(ref) {
		return
	}
	job, err := c.jobLister.Jobs(pod.Namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		orphan()
		return
	}
	key, _ := controllerutil.KeyFunc(job)
	switch {
	case deleted || pod.DeletionTimestamp != nil:
		c.deletions.Observed(key, pod.UID)
	case added:
		c.expectations.CreationObserved(key)
	}
	if finished(job) && (deleted || !hasTracking(pod)) {
		// A finished Job's sync only releases its pods still holding the
		// finalizer, listing the namespace's pods to find them: a pod
		// without it gives it nothing to do.
		return
	}
	c.queue.Add(key)
}

// Run processes Jobs with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	defer c.orphans.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced...) {
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		controllerutil.RunWorkers(ctx, Name, c.orphans, 1, c.syncOrphanPod)
	}()
	controllerutil.RunWorkers(ctx, Name, c.queue, workers, c.sync)
	wg.Wait()
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
		c.removals.forget(key)
		c.writes.forget(key)
		c.backoffs.forget(key)
		c.enqueueOrphans(ns, name)
		return nil
	}
	if err != nil {
		return err
	}
	if m := cached.Spec.ManagedBy; m != nil && *m != batchv1.JobControllerName {
		// As upstream: another controller (MultiKueue, say) runs this Job's
		// pods and writes its status.
		slog.Debug("skipping job managed by another controller", "job", key, "managedBy", *m)
		return nil
	}
	if finished(cached) {
		c.backoffs.forget(key)
		return c.releaseFinished(ctx, cached)
	}
	if c.writes.stale(key, cached.ResourceVersion) {
		// The counts in this copy are older than those this controller
		// wrote, and the pods it released no longer show what it counted:
		// a sync on it would undercount and start pods for work done. The
		// write's own event brings the Job back.
		c.queue.AddAfter(key, time.Second)
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
	pods, err := controllerutil.Claim(ctx, job, controllerutil.NewControllerRef(job, controllerKind.GroupVersion().String(), controllerKind.Kind), batchv1.JobTrackingFinalizer, sel, all,
		controllerutil.PodPatcher(c.client), controllerutil.CanAdopt("job", job, c.client.BatchV1().Jobs(ns).Get))
	if err != nil {
		return err
	}

	now := c.clock.Now()
	indexed := isIndexed(job)
	perIndex := hasBackoffLimitPerIndex(job)
	// Only pods holding the finalizer are still to count; those whose
	// finalizer this controller already removed were counted, even if the
	// cache does not show it yet.
	removing := c.removals.expected(key)
	tracked := func(p *corev1.Pod) bool { return hasTracking(p) && !removing.Has(p.UID) }
	unc := job.Status.UncountedTerminatedPods
	if unc == nil {
		unc = &batchv1.UncountedTerminatedPods{}
	}
	uncSucceeded, uncFailed := sets.New(unc.Succeeded...), sets.New(unc.Failed...)
	fresh := func(p *corev1.Pod) bool {
		return tracked(p) && !uncSucceeded.Has(p.UID) && !uncFailed.Has(p.UID)
	}

	var active []*corev1.Pod
	// newFailed leaves out the failures the pod failure policy ignores;
	// endedFailed, which paces replacements, does not. endedSucceeded and
	// endedFailed are the pods that finished since the last count.
	var newSucceeded, newFailed, ready, restarts, terminating int32
	var endedSucceeded, endedFailed []*corev1.Pod
	var failJob string
	var failJobAt time.Time
	var terminatingPods []*corev1.Pod
	for _, p := range pods {
		// Finished since the last count, and of a countable index.
		isNew := fresh(p) && countable(job, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			if isNew && !indexed {
				newSucceeded++
			}
			if isNew {
				endedSucceeded = append(endedSucceeded, p)
			}
		case p.Status.Phase == corev1.PodFailed || stoppedWhileDeleted(p):
			if isNew {
				endedFailed = append(endedFailed, p)
			}
			v := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
			if v.counts && isNew {
				newFailed++
			}
			// The first pod to fail a FailJob rule names the reason.
			if at := finishedAt(p); tracked(p) && v.failJob != "" && (failJob == "" || at.Before(failJobAt)) {
				failJob, failJobAt = v.failJob, at
			}
		case p.DeletionTimestamp != nil:
			terminating++
			terminatingPods = append(terminatingPods, p)
			// Deleted before it could finish: a failure, as upstream
			// counts it, unless only failed pods are replaced.
			if isPodFailed(p, job) && isNew {
				newFailed++
				endedFailed = append(endedFailed, p)
			}
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
	var done, failedIdx map[int]bool
	succeeded := job.Status.Succeeded + int32(len(uncSucceeded)) + newSucceeded
	if indexed {
		// An index counts once, however many of its pods succeeded, and
		// stays counted after its pod is gone: status keeps the record.
		done = completedIndexes(job.Status.CompletedIndexes, int(*job.Spec.Completions), pods)
		succeeded = int32(len(done))
		st.CompletedIndexes = formatIndexes(done, int(*job.Spec.Completions))
		st.Succeeded = succeeded
	}
	if perIndex {
		failedIdx = failedIndexes(job, int(*job.Spec.Completions), pods)
		st.FailedIndexes = ptr.To(formatIndexes(failedIdx, int(*job.Spec.Completions)))
	}
	backoff := c.backoffs.next(key, job.UID, endedSucceeded, endedFailed)
	// Counted failures, including those not yet moved into status.failed.
	counted := job.Status.Failed + int32(len(uncFailed)) + newFailed
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
	running := sets.New[int]()
	if indexed {
		for _, p := range active {
			if i := podIndex(p, int(*job.Spec.Completions)); i >= 0 {
				running.Insert(i)
			}
		}
	}
	switch {
	case failReason != "":
		_, manageErr = c.deletePods(ctx, job, key, active, true)
		if setCondition(st, batchv1.JobFailureTarget, failReason, failMessage, now) {
			slog.Info("job failed", "job", key, "reason", failReason)
			c.Events.Eventf(job, corev1.EventTypeWarning, failReason, failMessage)
		}
	case complete:
		_, manageErr = c.deletePods(ctx, job, key, active, true)
		setCondition(st, batchv1.JobSuccessCriteriaMet, successReason, successMessage, now)
	case job.DeletionTimestamp != nil:
		// A Job being deleted starts no more pods.
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
		if wait := c.backoffLeft(backoff, now); !perIndex && wait > 0 && int(want) > len(active) {
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
		var created int
		var deleted []*corev1.Pod
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
		created, deleted, manageErr = c.manage(ctx, key, job, active, int(want), len(holding)-len(active), todo, stray, last, running)
		activeCount += created - len(deleted)
		// The pods just deleted are terminating, and no longer ready, as
		// upstream reports them right away: ready must not exceed active.
		terminating += int32(len(deleted))
		for _, p := range deleted {
			if controllerutil.IsPodReady(p) {
				ready--
			}
		}
		if reason, msg, changed := setSuspended(st, suspended, now); changed {
			c.Events.Eventf(job, corev1.EventTypeNormal, reason, msg)
		}
	}
	finishing := failReason != "" || complete
	if finishing {
		// The pods just deleted are terminating too.
		activeCount = 0
		ready = 0
		terminating += int32(len(active))
	}
	st.Ready = &ready
	st.Terminating = &terminating
	st.Active = int32(activeCount)
	if job.Spec.ActiveDeadlineSeconds != nil && st.StartTime != nil && failReason == "" && !complete {
		left := st.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second).Sub(now)
		c.queue.AddAfter(key, controllerutil.ResyncAfter(left))
	}

	allCounted, trackErr := c.track(ctx, key, job, st, pods, trackState{finishing: finishing, failing: failReason != "", failedIdx: failedIdx, running: running, removing: removing,
		uncSucceeded: uncSucceeded, uncFailed: uncFailed, backoff: backoff})
	if allCounted && finishing && terminating == 0 && manageErr == nil {
		// The terminal condition waits for the last pod to stop and be
		// counted, so that whoever waits on it finds nothing of the Job
		// still running and the counts final.
		t := metav1.NewTime(now)
		if failReason != "" {
			setCondition(st, batchv1.JobFailed, failReason, failMessage, now)
		} else {
			setCondition(st, batchv1.JobComplete, successReason, successMessage, now)
			st.CompletionTime = &t
			slog.Info("job complete", "job", key)
			if job.Spec.Completions != nil && st.Succeeded > *job.Spec.Completions {
				c.Events.Eventf(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
			}
			c.Events.Eventf(job, corev1.EventTypeNormal, "Completed", "Job completed")
		}
	}
	if !apiequality.Semantic.DeepEqual(&job.Status, st) {
		job.Status = *st
		updated, err := c.client.BatchV1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update status of job %s: %w", key, err)
		}
		c.writes.wrote(key, updated.ResourceVersion)
	}
	return errors.Join(manageErr, trackErr)
}

// trackState is what track needs to know of the sync.
type trackState struct {
	// finishing: the Job has met its success or failure criteria; all its
	// pods are released. failing: it failed, and every pod not succeeded
	// counts as failed, as upstream counts them; a Job that succeeded does
	// not count the pods it stops.
	finishing, failing bool
	failedIdx          map[int]bool
	// running are the indexes with a pod running, including the pods
	// this sync created.
	running sets.Set[int]
	// removing are the pods whose finalizer was removed already.
	removing sets.Set[types.UID]
	// uncSucceeded and uncFailed are the UIDs the Job's
	// uncountedTerminatedPods held at the start of the sync.
	uncSucceeded, uncFailed sets.Set[types.UID]
	// backoff is the Job's back-off record with the pods that finished
	// since the last count; it is kept once they are counted.
	backoff backoffRecord
}

// track counts the pods that finished into st and releases their
// finalizers, in upstream's order: first the status naming them (their
// UIDs in uncountedTerminatedPods, an Indexed Job's completed indexes, the
// FailureTarget or SuccessCriteriaMet condition) is written, then the
// finalizers go, then st moves the released UIDs into the counters for the
// caller to write. job is updated to what was written. allCounted says
// whether every pod due was released and nothing is left uncounted.
func (c *Controller) track(ctx context.Context, key string, job *batchv1.Job, st *batchv1.JobStatus, pods []*corev1.Pod, ts trackState) (allCounted bool, err error) {
	indexed := isIndexed(job)
	if st.UncountedTerminatedPods == nil {
		st.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	unc := st.UncountedTerminatedPods
	uncSucceeded, uncFailed := ts.uncSucceeded, ts.uncFailed
	var waiting sets.Set[types.UID]
	if hasBackoffLimitPerIndex(job) {
		waiting = podsWaitingForReplacement(job, pods, ts.failedIdx, ts.running)
	}
	withFinalizer := sets.New[types.UID]()
	var release []*corev1.Pod
	capped := false
	for _, p := range pods {
		if !hasTracking(p) {
			continue
		}
		withFinalizer.Insert(p.UID)
		if ts.removing.Has(p.UID) || capped {
			continue
		}
		failed := isPodFailed(p, job) || (ts.failing && p.Status.Phase != corev1.PodSucceeded)
		switch {
		case job.DeletionTimestamp != nil || ts.finishing || p.Status.Phase == corev1.PodSucceeded:
		case failed && !waiting.Has(p.UID):
		default:
			continue
		}
		release = append(release, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !uncFailed.Has(p.UID):
			if !indexed && !uncSucceeded.Has(p.UID) {
				unc.Succeeded = append(unc.Succeeded, p.UID)
			}
		case failed:
			if !uncFailed.Has(p.UID) && countable(job, p) && matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).counts {
				unc.Failed = append(unc.Failed, p.UID)
			}
		}
		capped = len(release) >= maxUncountedPods
	}
	if capped {
		// The rest are counted in the next sync.
		c.queue.Add(key)
	}
	moveUncounted(st, withFinalizer)
	if len(release) == 0 {
		return !capped && len(unc.Succeeded)+len(unc.Failed) == 0, nil
	}
	if !apiequality.Semantic.DeepEqual(&job.Status, st) {
		job.Status = *st.DeepCopy()
		updated, err := c.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
		if err != nil {
			return false, fmt.Errorf("add uncounted pods to status of job %s: %w", key, err)
		}
		c.writes.wrote(key, updated.ResourceVersion)
		*job = *updated
	}
	// As upstream, the record moves on once the status counts the pods:
	// released, they are no longer new to the next sync.
	c.backoffs.store(key, ts.backoff)
	ok, err := c.releasePods(ctx, key, release)
	for i, p := range release {
		if ok[i] {
			withFinalizer.Delete(p.UID)
		}
	}
	moveUncounted(st, withFinalizer)
	return err == nil && !capped && len(unc.Succeeded)+len(unc.Failed) == 0, err
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

// setSuspended keeps the Suspended condition in step with spec.suspend, as
// upstream: True (JobSuspended) while suspended, False (JobResumed) once a
// suspended Job resumes, when status.startTime restarts so that
// activeDeadlineSeconds counts only the time the Job runs. It returns the
// event to record when the condition changed.
func setSuspended(st *batchv1.JobStatus, suspended bool, now time.Time) (string, string, bool) {
	status, reason, msg, event := corev1.ConditionFalse, "JobResumed", "Job resumed", "Resumed"
	if suspended {
		status, reason, msg, event = corev1.ConditionTrue, "JobSuspended", "Job suspended", "Suspended"
	}
	cond := batchv1.JobCondition{Type: batchv1.JobSuspended, Status: status, Reason: reason, Message: msg,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
	i := slices.IndexFunc(st.Conditions, func(c batchv1.JobCondition) bool { return c.Type == batchv1.JobSuspended })
	switch {
	case i < 0 && !suspended, i >= 0 && st.Conditions[i].Status == status:
		return "", "", false
	case i < 0:
		st.Conditions = append(st.Conditions, cond)
	default:
		st.Conditions[i] = cond
	}
	if !suspended {
		st.StartTime = ptr.To(metav1.NewTime(now))
	}
	return event, msg, true
}

// MaxPodCreateDeletePerSync bounds the pods one sync creates or deletes, as
// upstream's: a Job of thousands of pods gets them over several syncs, each
// waiting for the last one's pods to show up, so that one sync neither
// holds a worker for long nor floods the apiserver.
const MaxPodCreateDeletePerSync = 500

// manage creates or deletes pods so that want are active; it returns how
// many pods it created and the pods it deleted, as status reports them
// right away.
// Terminating pods that are not to be replaced yet hold a place each. For
// an Indexed Job, todo are the indexes still without a pod, lowest first,
// stray the active pods to delete in any case, replaced the failed pods
// their new pods take failure counts from; running gets the indexes it
// started a pod for.
func (c *Controller) manage(ctx context.Context, key string, job *batchv1.Job, active []*corev1.Pod, want, holding int, todo []int, stray []*corev1.Pod, replaced map[int]*corev1.Pod, running sets.Set[int]) (int, []*corev1.Pod, error) {

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
		if !ptr.Deref(job.Spec.Suspend, false) {
			// Suspending stops every pod at once, as upstream's does.
			victims = victims[:min(len(victims), c.maxPodsPerSync)]
		}
		deleted, err := c.deletePods(ctx, job, key, victims, false)
		return 0, deleted, err
	case diff < 0:
		n := min(max(-diff-holding, 0), c.maxPodsPerSync)
		if todo != nil {
			n = min(n, len(todo))
		}
		if n == 0 {
			return 0, nil, nil
		}
		c.expectations.Expect(key, n, 0)
		created := make([]bool, n)
		// In slow-start batches, as upstream: a quota refusing the pods
		// stops this sync after a few FailedCreate events, not one per pod.
		succeeded, first := controllerutil.SlowStart(n, func(i int) error {
			index := -1
			if todo != nil {
				index = todo[i]
			}
			err := c.createPod(ctx, job, index, replaced)
			created[i] = err == nil
			return err
		})
		// No pod will show up for the creates that failed or were skipped.
		for range n - succeeded {
			c.expectations.CreationObserved(key)
		}
		for i, ok := range created {
			if ok && todo != nil {
				running.Insert(todo[i])
			}
		}
		if first != nil {
			return succeeded, nil, fmt.Errorf("create pod for job %s: %w", key, first)
		}
		return n, nil, nil
	}
	return 0, nil, nil
}

// deletePods deletes pods of job. Pods the Job stops because it is over
// keep their finalizer, to be counted (as failed when the Job failed);
// pods it merely has too many of lose it first, as upstream's do, so that
// their end does not count as a failure. It returns the pods that are
// going, those found gone included.
func (c *Controller) deletePods(ctx context.Context, job *batchv1.Job, key string, pods []*corev1.Pod, keepFinalizer bool) ([]*corev1.Pod, error) {
	if len(pods) == 0 {
		return nil, nil
	}
	var deleted []*corev1.Pod
	c.deletions.Expect(key, pods)
	var errs []error
	for _, p := range pods {
		if !keepFinalizer && hasTracking(p) {
			if _, err := c.removeTracking(ctx, p); err != nil {
				c.deletions.Observed(key, p.UID)
				errs = append(errs, err)
				continue
			}
		}
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil {
			c.deletions.Observed(key, p.UID)
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
		} else {
			c.Events.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
		}
		deleted = append(deleted, p)
	}
	if len(errs) > 0 {
		return deleted, fmt.Errorf("delete pods of job %s: %v", key, errs)
	}
	return deleted, nil
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
			Finalizers:      []string{batchv1.JobTrackingFinalizer},
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
		// As upstream, no event for the refusals of a namespace being deleted.
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.Events.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return err
	}
	c.Events.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", created.Name)
	return nil
}
