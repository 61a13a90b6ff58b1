// Package disruption keeps the status of PodDisruptionBudgets, as upstream's
// disruption controller does: how many of the pods a budget selects are
// healthy, how many must stay so, and so how many disruptions the eviction
// subresource may allow now. It also clears a DisruptionTarget condition
// that was left on a pod whose eviction never deleted it.
package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "disruption"

const (
	// DeletionTimeout is how long a pod an eviction was allowed for stays
	// out of a budget's healthy count while it has not started going.
	DeletionTimeout = 2 * time.Minute
	// StaleDisruptionTimeout is how long a pod may carry DisruptionTarget
	// without being deleted before the condition is set back to False.
	StaleDisruptionTimeout = 2 * time.Minute
)

// Controller keeps PodDisruptionBudget status.
type Controller struct {
	client      kubernetes.Interface
	pdbs        policylisters.PodDisruptionBudgetLister
	pods        corelisters.PodLister
	replicaSets appslisters.ReplicaSetLister
	deployments appslisters.DeploymentLister
	scales      Scales
	synced      []cache.InformerSynced
	queue       controllerutil.Queue
	stale       controllerutil.Queue
	clock       clock.Clock

	// Events records what `kubectl describe pdb` shows; NopRecorder by default.
	Events controllerutil.Recorder
}

// New wires the controller to its informers. The ReplicaSet and Deployment
// informers, and scales for pods of any other controller, give the scale
// that a percentage (or maxUnavailable) is taken of.
func New(client kubernetes.Interface, pdbs policyinformers.PodDisruptionBudgetInformer, pods coreinformers.PodInformer,
	replicaSets appsinformers.ReplicaSetInformer, deployments appsinformers.DeploymentInformer, scales Scales,
	mp workqueue.MetricsProvider, clk clock.Clock) *Controller {
	c := &Controller{
		client:      client,
		pdbs:        pdbs.Lister(),
		pods:        pods.Lister(),
		replicaSets: replicaSets.Lister(),
		deployments: deployments.Lister(),
		scales:      scales,
		synced: []cache.InformerSynced{pdbs.Informer().HasSynced, pods.Informer().HasSynced,
			replicaSets.Informer().HasSynced, deployments.Informer().HasSynced},
		queue:  controllerutil.NewQueue(Name, mp),
		stale:  controllerutil.NewQueue(Name+"-stale-pod-disruption", mp),
		clock:  clk,
		Events: controllerutil.NopRecorder{},
	}
	_, _ = pdbs.Informer().AddEventHandler(controllerutil.EnqueueHandler(c.queue))
	_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.podChanged(nil, obj) },
		UpdateFunc: func(old, obj any) {
			// A pod whose labels changed may have left a budget.
			c.podChanged(old, obj)
		},
		DeleteFunc: func(obj any) {
			if p, ok := controllerutil.FromDeleted[*corev1.Pod](obj); ok {
				c.enqueueBudgetsOf(p)
			}
		},
	})
	return c
}

// Run keeps budgets with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	defer c.stale.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced...) {
		return
	}
	go controllerutil.RunWorkers(ctx, Name+"-stale-pod-disruption", c.stale, 1, c.syncStale)
	controllerutil.RunWorkers(ctx, Name, c.queue, workers, c.sync)
}

func (c *Controller) podChanged(old, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.enqueueBudgetsOf(p)
	if o, ok := old.(*corev1.Pod); ok && !apiequality.Semantic.DeepEqual(o.Labels, p.Labels) {
		c.enqueueBudgetsOf(o)
	}
	if wait, ok := c.staleDisruption(p); ok {
		if key, ok := controllerutil.KeyFunc(p); ok {
			c.stale.AddAfter(key, wait)
		}
	}
}

func (c *Controller) enqueueBudgetsOf(p *corev1.Pod) {
	for _, pdb := range c.budgetsOf(p) {
		if key, ok := controllerutil.KeyFunc(pdb); ok {
			c.queue.Add(key)
		}
	}
}

// budgetsOf returns the budgets whose selector matches p; in policy/v1 an
// empty selector matches every pod of the namespace and a missing one none.
func (c *Controller) budgetsOf(p *corev1.Pod) []*policyv1.PodDisruptionBudget {
	all, err := c.pdbs.PodDisruptionBudgets(p.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range all {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, pdb)
		}
	}
	return out
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pdb, err := c.pdbs.PodDisruptionBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	err = c.trySync(ctx, key, pdb)
	if err == nil || apierrors.IsConflict(err) {
		return err
	}
	slog.Info("cannot work out a disruption budget; it allows no disruption until then", "pdb", key, "err", err)
	return c.failSafe(ctx, pdb, err)
}

func (c *Controller) trySync(ctx context.Context, key string, pdb *policyv1.PodDisruptionBudget) error {
	pods, err := c.podsOf(pdb)
	if err != nil {
		c.Events.Eventf(pdb, corev1.EventTypeWarning, "NoPods", "Failed to get pods: %v", err)
		return err
	}
	if len(pods) == 0 {
		c.Events.Eventf(pdb, corev1.EventTypeNormal, "NoPods", "No matching pods found")
	}
	expected, desired, unmanaged, err := c.expectedPods(ctx, pdb, pods)
	if err != nil {
		c.Events.Eventf(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		return err
	}
	if unmanaged {
		c.Events.Eventf(pdb, corev1.EventTypeWarning, "UnmanagedPods", "Pods selected by this PodDisruptionBudget (selector: %v) were found "+
			"to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
			"To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.", pdb.Spec.Selector)
	}
	now := c.clock.Now()
	disrupted, recheck := c.disruptedPods(pods, pdb, now)
	healthy := healthyPods(pods, disrupted, now)
	if err := c.writeStatus(ctx, pdb, healthy, desired, expected, disrupted); err != nil {
		return err
	}
	if recheck != nil {
		c.queue.AddAfter(key, recheck.Sub(now))
	}
	return nil
}

func (c *Controller) podsOf(pdb *policyv1.PodDisruptionBudget) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return nil, err
	}
	return c.pods.Pods(pdb.Namespace).List(sel)
}

// expectedPods works out how many pods the budget is about and how many of
// them must be healthy. An integer minAvailable counts the pods there are;
// a percentage, or maxUnavailable, is taken of the scale of the pods'
// controllers. unmanaged reports pods without a controller, which such a
// budget cannot account for.
func (c *Controller) expectedPods(ctx context.Context, pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, unmanaged bool, err error) {
	// maxUnavailable, when set, is the one that counts.
	bound, isMax := pdb.Spec.MaxUnavailable, true
	if bound == nil {
		bound, isMax = pdb.Spec.MinAvailable, false
	}
	switch {
	case bound == nil:
		return 0, 0, false, nil
	case !isMax && bound.Type == intstr.Int:
		return int32(len(pods)), bound.IntVal, false, nil
	}
	expected, unmanaged, err = c.controllersScale(ctx, pods)
	if err != nil {
		return 0, 0, false, err
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(bound, int(expected), true)
	if err != nil {
		return 0, 0, false, err
	}
	if isMax {
		return expected, max(expected-int32(n), 0), unmanaged, nil
	}
	return expected, int32(n), unmanaged, nil
}

// controllersScale sums the desired replicas of the controllers of pods,
// each counted once.
func (c *Controller) controllersScale(ctx context.Context, pods []*corev1.Pod) (total int32, unmanaged bool, err error) {
	scales := map[types.UID]int32{}
	for _, p := range pods {
		ref := controllerutil.ControllerRef(p)
		if ref == nil {
			unmanaged = true
			continue
		}
		if _, ok := scales[ref.UID]; ok {
			continue
		}
		uid, scale, found, err := c.scaleOf(ctx, ref, p.Namespace)
		if err != nil {
			return 0, false, err
		}
		if !found {
			return 0, false, fmt.Errorf("found no controllers for pod %q", p.Name)
		}
		scales[uid] = scale
	}
	for _, n := range scales {
		total += n
	}
	return total, unmanaged, nil
}

// scaleOf finds the controller a pod's controllerRef names and its desired
// replicas, trying in upstream's order: the Deployment of the pod's
// ReplicaSet (its rollouts move pods between ReplicaSets), a ReplicaSet no
// Deployment controls, then the scale subresource of whatever the owner is.
// The first two read the caches; the last one asks the apiserver.
func (c *Controller) scaleOf(ctx context.Context, ref *metav1.OwnerReference, ns string) (types.UID, int32, bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, fmt.Errorf("controller of pod: %w", err)
	}
	if ref.Kind == "ReplicaSet" && workloadGroups[gv.Group] {
		rs, err := c.replicaSets.ReplicaSets(ns).Get(ref.Name)
		if err != nil && !apierrors.IsNotFound(err) {
			return "", 0, false, err
		}
		if err == nil && rs.UID == ref.UID {
			dref := controllerutil.ControllerRef(rs)
			if dref == nil || dref.Kind != "Deployment" {
				return rs.UID, ptr.Deref(rs.Spec.Replicas, 1), true, nil
			}
			if uid, n, found, err := c.deploymentOf(rs, dref); err != nil || found {
				return uid, n, found, err
			}
			// A ReplicaSet a missing Deployment still controls is left to
			// the scale subresource, as upstream leaves it.
		}
	}
	return c.scales.scaleOf(ctx, ref, gv, ns)
}

// workloadGroups are the groups whose ReplicaSet and Deployment kinds
// upstream's disruption controller reads from its caches.
var workloadGroups = map[string]bool{"apps": true, "extensions": true}

// deploymentOf finds the Deployment dref, the controllerRef of rs, names.
func (c *Controller) deploymentOf(rs *appsv1.ReplicaSet, dref *metav1.OwnerReference) (types.UID, int32, bool, error) {
	gv, err := schema.ParseGroupVersion(dref.APIVersion)
	if err != nil {
		return "", 0, false, fmt.Errorf("controller of replica set %s: %w", rs.Name, err)
	}
	if !workloadGroups[gv.Group] {
		return "", 0, false, nil
	}
	d, err := c.deployments.Deployments(rs.Namespace).Get(dref.Name)
	if apierrors.IsNotFound(err) || (err == nil && d.UID != dref.UID) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, err
	}
	return d.UID, ptr.Deref(d.Spec.Replicas, 1), true, nil
}

// disruptedPods keeps the entries of status.disruptedPods whose pod has
// neither started going nor outlived DeletionTimeout, and says when the
// oldest of them expires.
func (c *Controller) disruptedPods(pods []*corev1.Pod, pdb *policyv1.PodDisruptionBudget, now time.Time) (map[string]metav1.Time, *time.Time) {
	kept := map[string]metav1.Time{}
	var recheck *time.Time
	for _, p := range pods {
		at, ok := pdb.Status.DisruptedPods[p.Name]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		expires := at.Add(DeletionTimeout)
		if expires.Before(now) {
			c.Events.Eventf(p, corev1.EventTypeWarning, "NotDeleted", "Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)
			continue
		}
		if recheck == nil || expires.Before(*recheck) {
			recheck = &expires
		}
		kept[p.Name] = at
	}
	return kept, recheck
}

// healthyPods counts the ready pods that are neither going nor about to.
func healthyPods(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if at, ok := disrupted[p.Name]; ok && at.Add(DeletionTimeout).After(now) {
			continue
		}
		if controllerutil.IsPodReady(p) {
			n++
		}
	}
	return n
}

// writeStatus writes the budget's status when it changed. A budget that
// expects no pods allows no disruption: its first pods may appear before
// the next sync.
func (c *Controller) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, healthy, desired, expected int32, disrupted map[string]metav1.Time) error {
	allowed := healthy - desired
	if expected <= 0 || allowed <= 0 {
		allowed = 0
	}
	s := pdb.Status
	if s.CurrentHealthy == healthy && s.DesiredHealthy == desired && s.ExpectedPods == expected &&
		s.DisruptionsAllowed == allowed && apiequality.Semantic.DeepEqual(s.DisruptedPods, disrupted) &&
		s.ObservedGeneration == pdb.Generation && pdbhelper.ConditionsAreUpToDate(pdb) {
		return nil
	}
	next := pdb.DeepCopy()
	next.Status = policyv1.PodDisruptionBudgetStatus{
		CurrentHealthy:     healthy,
		DesiredHealthy:     desired,
		ExpectedPods:       expected,
		DisruptionsAllowed: allowed,
		DisruptedPods:      disrupted,
		ObservedGeneration: pdb.Generation,
		Conditions:         next.Status.Conditions,
	}
	pdbhelper.UpdateDisruptionAllowedCondition(next)
	_, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	return err
}

// failSafe makes a budget whose status cannot be worked out allow no
// disruption, saying why, rather than leave a stale allowance.
func (c *Controller) failSafe(ctx context.Context, pdb *policyv1.PodDisruptionBudget, cause error) error {
	next := pdb.DeepCopy()
	next.Status.DisruptionsAllowed = 0
	apimeta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.SyncFailedReason,
		Message:            cause.Error(),
		ObservedGeneration: next.Status.ObservedGeneration,
	})
	_, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	return err
}

// staleDisruption says whether p carries a DisruptionTarget condition that
// an eviction set but no deletion followed, and how long until it counts as
// stale. The kubelet's own (TerminationByKubelet) and those of pods that
// ended stay.
func (c *Controller) staleDisruption(p *corev1.Pod) (time.Duration, bool) {
	if !controllerutil.IsPodActive(p) {
		return 0, false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type != corev1.DisruptionTarget {
			continue
		}
		if cond.Status != corev1.ConditionTrue || cond.Reason == corev1.PodReasonTerminationByKubelet {
			return 0, false
		}
		return max(StaleDisruptionTimeout-c.clock.Since(cond.LastTransitionTime.Time), 0), true
	}
	return 0, false
}

func (c *Controller) syncStale(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	p, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	wait, ok := c.staleDisruption(p)
	if !ok {
		return nil
	}
	if wait > 0 {
		c.stale.AddAfter(key, wait)
		return nil
	}
	next := p.DeepCopy()
	for i := range next.Status.Conditions {
		if cond := &next.Status.Conditions[i]; cond.Type == corev1.DisruptionTarget {
			*cond = corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(c.clock.Now())}
		}
	}
	if _, err := c.client.CoreV1().Pods(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("clear stale DisruptionTarget of pod %s: %w", key, err)
	}
	slog.Info("cleared a DisruptionTarget condition no deletion followed", "pod", key)
	return nil
}
