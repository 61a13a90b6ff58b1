// Package replicaset keeps the number of pods of each ReplicaSet equal to its
// spec.replicas, and its status in line with those pods.
package replicaset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "replicaset"

// burstReplicas caps creates or deletes per sync, as upstream does, so one
// huge scale-up cannot flood the apiserver before the cache catches up.
const burstReplicas = 500

var errDelete = errors.New("delete pods")

var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Controller reconciles ReplicaSets.
type Controller struct {
	client       kubernetes.Interface
	rsLister     appslisters.ReplicaSetLister
	podLister    corelisters.PodLister
	synced       []cache.InformerSynced
	queue        controllerutil.Queue
	expectations *controllerutil.Expectations
	clock        clock.Clock
	// Events records what the controller did; set it before Run.
	Events    controllerutil.Recorder
	deletions *controllerutil.PodDeletions
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer,
	mp workqueue.MetricsProvider, clk clock.Clock) *Controller {
	expectations := controllerutil.NewExpectations(clk)
	c := &Controller{
		client:       client,
		rsLister:     rsInformer.Lister(),
		podLister:    podInformer.Lister(),
		synced:       []cache.InformerSynced{rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:        controllerutil.NewQueue(Name, mp),
		expectations: expectations,
		clock:        clk,
		Events:       controllerutil.NopRecorder{},
		deletions:    controllerutil.NewPodDeletions(expectations),
	}
	_, _ = rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: func(obj any) {
			if key, ok := controllerutil.KeyFunc(obj); ok {
				c.deletions.Forget(key)
				c.queue.Add(key)
			}
		},
	})
	_, _ = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	})
	return c
}

// Run processes ReplicaSets with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced...) {
		return
	}
	controllerutil.RunWorkers(ctx, Name, c.queue, workers, c.sync)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := controllerutil.KeyFunc(obj); ok {
		c.queue.Add(key)
	}
}

func (c *Controller) resolveRef(ns string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref == nil || ref.Kind != controllerKind.Kind || ref.APIVersion != controllerKind.GroupVersion().String() {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(ns).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// enqueueMatching wakes every ReplicaSet whose selector matches an orphan, so
// one of them can adopt it.
func (c *Controller) enqueueMatching(pod *corev1.Pod) {
	rss, err := c.rsLister.ReplicaSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, rs := range rss {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		c.enqueue(rs)
	}
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if ref := controllerutil.ControllerRef(pod); ref != nil {
		rs := c.resolveRef(pod.Namespace, ref)
		if rs == nil {
			return
		}
		key, _ := controllerutil.KeyFunc(rs)
		if pod.DeletionTimestamp != nil {
			c.deletions.Observed(key, pod.UID)
		} else {
			c.expectations.CreationObserved(key)
		}
		c.queue.Add(key)
		return
	}
	c.enqueueMatching(pod)
}

func (c *Controller) updatePod(oldObj, newObj any) {
	oldPod, pod := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	if oldPod.ResourceVersion == pod.ResourceVersion {
		return
	}
	oldRef, ref := controllerutil.ControllerRef(oldPod), controllerutil.ControllerRef(pod)
	if oldRef != nil && (ref == nil || oldRef.UID != ref.UID) {
		if rs := c.resolveRef(oldPod.Namespace, oldRef); rs != nil {
			c.enqueue(rs)
		}
	}
	if ref == nil {
		c.enqueueMatching(pod)
		return
	}
	rs := c.resolveRef(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key, _ := controllerutil.KeyFunc(rs)
	if pod.DeletionTimestamp != nil {
		c.deletions.Observed(key, pod.UID)
	}
	c.queue.Add(key)
	// A pod that just became ready turns available minReadySeconds later;
	// nothing will be written then, so come back on our own.
	if rs.Spec.MinReadySeconds > 0 && !controllerutil.IsPodReady(oldPod) && controllerutil.IsPodReady(pod) {
		c.queue.AddAfter(key, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := controllerutil.FromDeleted[*corev1.Pod](obj)
	if !ok {
		return
	}
	rs := c.resolveRef(pod.Namespace, controllerutil.ControllerRef(pod))
	if rs == nil {
		return
	}
	key, _ := controllerutil.KeyFunc(rs)
	c.deletions.Observed(key, pod.UID)
	c.queue.Add(key)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.deletions.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return nil // invalid selector: validation should have refused it
	}
	all, err := c.podLister.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	var candidates []*corev1.Pod
	for _, p := range all {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		candidates = append(candidates, p)
	}
	owned, claimErr := controllerutil.Claim(ctx, rs, controllerutil.NewControllerRef(rs, controllerKind.GroupVersion().String(), controllerKind.Kind), "", sel, candidates,
		controllerutil.PodPatcher(c.client), controllerutil.CanAdopt("replicaset", rs, c.client.AppsV1().ReplicaSets(ns).Get))
	var active []*corev1.Pod
	for _, p := range owned {
		if controllerutil.IsPodActive(p) {
			active = append(active, p)
		}
	}

	var manageErr error
	if claimErr == nil && rs.DeletionTimestamp == nil && c.expectations.Satisfied(key) {
		manageErr = c.manageReplicas(ctx, key, rs, active, all)
	}
	if err := c.updateStatus(ctx, rs, owned, active, manageErr); err != nil {
		return err
	}
	if claimErr != nil {
		return claimErr
	}
	return manageErr
}

func (c *Controller) manageReplicas(ctx context.Context, key string, rs *appsv1.ReplicaSet, active, all []*corev1.Pod) error {
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	diff := len(active) - int(want)
	switch {
	case diff < 0:
		n := min(-diff, burstReplicas)
		c.expectations.Expect(key, n, 0)
		created, err := controllerutil.SlowStart(n, func(int) error { return c.createPod(ctx, rs) })
		// Creates that were never attempted or failed will not be observed.
		for range n - created {
			c.expectations.CreationObserved(key)
		}
		if err != nil {
			return fmt.Errorf("create pods for %s: %w", key, err)
		}
	case diff > 0:
		n := min(diff, burstReplicas)
		victims := c.podsToDelete(rs, active, all, n)
		c.deletions.Expect(key, victims)
		var errs []error
		for _, p := range victims {
			err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
			if err != nil {
				c.deletions.Observed(key, p.UID)
				if !apierrors.IsNotFound(err) {
					errs = append(errs, err)
					c.Events.Eventf(rs, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
				}
				continue
			}
			c.Events.Eventf(rs, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w of %s: %v", errDelete, key, errs)
		}
	}
	return nil
}

func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          copyMap(rs.Spec.Template.Labels),
			Annotations:     copyMap(rs.Spec.Template.Annotations),
			Finalizers:      append([]string(nil), rs.Spec.Template.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{controllerutil.NewControllerRef(rs, controllerKind.GroupVersion().String(), controllerKind.Kind)},
		},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
	// An error (a generated-name collision included) means no pod will show
	// up for this create, so the caller stops expecting one.
	created, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// As upstream: a namespace being deleted refuses every create, and
		// saying so for each pod would only bury the events that matter.
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.Events.Eventf(rs, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return err
	}
	c.Events.Eventf(rs, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", created.Name)
	return nil
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, owned, active []*corev1.Pod, manageErr error) error {
	now := c.clock.Now()
	st := appsv1.ReplicaSetStatus{
		Replicas:           int32(len(active)),
		ObservedGeneration: rs.Generation,
	}
	var terminating int32
	var nextAvailable time.Duration
	templateSel := labels.SelectorFromSet(rs.Spec.Template.Labels)
	for _, p := range owned {
		if p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			terminating++
		}
	}
	for _, p := range active {
		if templateSel.Matches(labels.Set(p.Labels)) {
			st.FullyLabeledReplicas++
		}
		if controllerutil.IsPodReady(p) {
			st.ReadyReplicas++
			if controllerutil.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) {
				st.AvailableReplicas++
			} else if d := controllerutil.AvailableIn(p, rs.Spec.MinReadySeconds, now); d > 0 && (nextAvailable == 0 || d < nextAvailable) {
				nextAvailable = d
			}
		}
	}
	// Always set, 0 included: upstream 1.36 serves the field by default
	// (DeploymentReplicaSetTerminatingReplicas is beta), and the Deployment
	// sums it only when every ReplicaSet reports it.
	st.TerminatingReplicas = &terminating
	st.Conditions = failureCondition(rs.Status.Conditions, manageErr, now)
	if nextAvailable > 0 {
		key, _ := controllerutil.KeyFunc(rs)
		c.queue.AddAfter(key, nextAvailable+100*time.Millisecond)
	}
	if apiequality.Semantic.DeepEqual(rs.Status, st) {
		return nil
	}
	next := rs.DeepCopy()
	next.Status = st
	_, err := c.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	slog.Debug("replicaset status", "rs", rs.Namespace+"/"+rs.Name, "replicas", st.Replicas, "ready", st.ReadyReplicas, "available", st.AvailableReplicas)
	return nil
}

// failureCondition keeps ReplicaFailure in step with the last manage error,
// as upstream does for quota and admission refusals.
func failureCondition(conds []appsv1.ReplicaSetCondition, manageErr error, now time.Time) []appsv1.ReplicaSetCondition {
	var out []appsv1.ReplicaSetCondition
	var existing *appsv1.ReplicaSetCondition
	for i := range conds {
		if conds[i].Type == appsv1.ReplicaSetReplicaFailure {
			existing = &conds[i]
			continue
		}
		out = append(out, conds[i])
	}
	if manageErr == nil {
		return out
	}
	reason := "FailedCreate"
	if errors.Is(manageErr, errDelete) {
		reason = "FailedDelete"
	}
	// As upstream, the message is the apiserver's own refusal (quota,
	// admission), not this controller's wrapping of it.
	msg := manageErr.Error()
	var apiErr apierrors.APIStatus
	if reason == "FailedCreate" && errors.As(manageErr, &apiErr) {
		msg = apiErr.Status().Message
	}
	if existing != nil && existing.Reason == reason && existing.Message == msg {
		return append(out, *existing)
	}
	return append(out, appsv1.ReplicaSetCondition{
		Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: reason,
		Message: msg, LastTransitionTime: metav1.NewTime(now),
	})
}
