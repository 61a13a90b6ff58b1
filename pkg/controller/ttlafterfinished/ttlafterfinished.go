// Package ttlafterfinished deletes finished Jobs once their
// spec.ttlSecondsAfterFinished has passed, as upstream's TTL-after-finished
// controller does.
package ttlafterfinished

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "ttlafterfinished"

// Controller deletes expired finished Jobs.
type Controller struct {
	client    kubernetes.Interface
	jobLister batchlisters.JobLister
	synced    cache.InformerSynced
	queue     controllerutil.Queue
	clock     clock.Clock
}

// New wires the controller to the Job informer.
func New(client kubernetes.Interface, jobs batchinformers.JobInformer, mp workqueue.MetricsProvider, clk clock.Clock) *Controller {
	c := &Controller{
		client:    client,
		jobLister: jobs.Lister(),
		synced:    jobs.Informer().HasSynced,
		queue:     controllerutil.NewQueue(Name, mp),
		clock:     clk,
	}
	enqueue := func(obj any) {
		j, ok := obj.(*batchv1.Job)
		if !ok || j.DeletionTimestamp != nil || j.Spec.TTLSecondsAfterFinished == nil {
			return
		}
		if key, ok := controllerutil.KeyFunc(j); ok {
			c.queue.Add(key)
		}
	}
	_, _ = jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	return c
}

// Run processes Jobs with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced) {
		return
	}
	controllerutil.RunWorkers(ctx, Name, c.queue, workers, c.sync)
}

// finishedAt is when the Job got its Complete or Failed condition.
func finishedAt(j *batchv1.Job) (time.Time, bool) {
	for _, cond := range j.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			return cond.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// expiresIn is how long j has left; ok=false if it is not due to expire.
func (c *Controller) expiresIn(j *batchv1.Job) (time.Duration, bool) {
	if j.DeletionTimestamp != nil || j.Spec.TTLSecondsAfterFinished == nil {
		return 0, false
	}
	at, ok := finishedAt(j)
	if !ok {
		return 0, false
	}
	expire := at.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second)
	return expire.Sub(c.clock.Now()), true
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.jobLister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// notDue says whether j is not (yet) to go; one that will be is
	// looked at again then.
	notDue := func(j *batchv1.Job) bool {
		left, ok := c.expiresIn(j)
		if ok && left > 0 {
			c.queue.AddAfter(key, left)
		}
		return !ok || left > 0
	}
	if notDue(cached) {
		return nil
	}
	// The cache may be behind a user who just raised or removed the TTL:
	// decide on the Job as the apiserver has it now.
	fresh, err := c.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get job %s: %w", key, err)
	}
	if notDue(fresh) {
		return nil
	}
	// Foreground, as upstream: the Job goes once its pods are gone.
	policy := metav1.DeletePropagationForeground
	err = c.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &fresh.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete expired job %s: %w", key, err)
	}
	slog.Info("deleted finished job past its TTL", "job", key, "ttlSecondsAfterFinished", *fresh.Spec.TTLSecondsAfterFinished)
	return nil
}
