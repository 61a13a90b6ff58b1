// Package deployment rolls Deployments out through ReplicaSets, one per pod
// template, as upstream's deployment controller does.
package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
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
const Name = "deployment"

var (
	deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")
	rsKind         = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
)

// Controller reconciles Deployments.
type Controller struct {
	client    kubernetes.Interface
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced
	queue     controllerutil.Queue
	clock     clock.Clock
	// Events records what the controller did; set it before Run.
	Events controllerutil.Recorder
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, dInformer appsinformers.DeploymentInformer, rsInformer appsinformers.ReplicaSetInformer,
	podInformer coreinformers.PodInformer, mp workqueue.MetricsProvider, clk clock.Clock) *Controller {
	c := &Controller{
		client:    client,
		dLister:   dInformer.Lister(),
		rsLister:  rsInformer.Lister(),
		podLister: podInformer.Lister(),
		synced:    []cache.InformerSynced{dInformer.Informer().HasSynced, rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:     controllerutil.NewQueue(Name, mp),
		clock:     clk,
		Events:    controllerutil.NopRecorder{},
	}
	_, _ = dInformer.Informer().AddEventHandler(controllerutil.EnqueueHandler(c.queue))
	rsHandler := func(obj any) {
		rs, ok := controllerutil.FromDeleted[*appsv1.ReplicaSet](obj)
		if !ok {
			return
		}
		if ref := controllerutil.ControllerRef(rs); ref != nil {
			if d := c.resolveRef(rs.Namespace, ref); d != nil {
				c.enqueue(d)
			}
			return
		}
		for _, d := range c.matching(rs) {
			c.enqueue(d)
		}
	}
	_, _ = rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    rsHandler,
		UpdateFunc: func(_, obj any) { rsHandler(obj) },
		DeleteFunc: rsHandler,
	})
	// Recreate waits for the old pods to be gone, which only pod events show.
	_, _ = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			pod, ok := controllerutil.FromDeleted[*corev1.Pod](obj)
			if !ok {
				return
			}
			ref := controllerutil.ControllerRef(pod)
			if ref == nil || ref.Kind != rsKind.Kind {
				return
			}
			rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
			if err != nil || rs.UID != ref.UID {
				return
			}
			if d := c.resolveRef(rs.Namespace, controllerutil.ControllerRef(rs)); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
				c.enqueue(d)
			}
		},
	})
	return c
}

// Run processes Deployments with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced...) {
		return
	}
	controllerutil.RunWorkers(ctx, Name, c.queue, workers, c.sync)
}

func (c *Controller) enqueue(d *appsv1.Deployment) {
	if key, ok := controllerutil.KeyFunc(d); ok {
		c.queue.Add(key)
	}
}

func (c *Controller) resolveRef(ns string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref == nil || ref.Kind != deploymentKind.Kind || ref.APIVersion != deploymentKind.GroupVersion().String() {
		return nil
	}
	d, err := c.dLister.Deployments(ns).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

func (c *Controller) matching(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	ds, err := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range ds {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		// Selecting everything (or nothing) would fight every other
		// controller in the namespace; upstream refuses as well.
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, err := c.client.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return err
		}
		return nil
	}
	rsList, err := c.claimReplicaSets(ctx, d, sel)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		return c.syncStatusOnly(ctx, d, rsList)
	}
	if done, err := c.checkPaused(ctx, d); done || err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.syncScale(ctx, d, rsList)
	}
	if c.isScalingEvent(d, rsList) {
		return c.syncScale(ctx, d, rsList)
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return c.rolloutRecreate(ctx, d, rsList, sel)
	}
	return c.rolloutRolling(ctx, d, rsList)
}

func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	patch := func(ctx context.Context, ns, name string, b []byte) (*appsv1.ReplicaSet, error) {
		return c.client.AppsV1().ReplicaSets(ns).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	}
	ref := controllerutil.NewControllerRef(d, deploymentKind.GroupVersion().String(), deploymentKind.Kind)
	owned, err := controllerutil.Claim(ctx, d, ref, "", sel, all, patch, controllerutil.CanAdopt("deployment", d, c.client.AppsV1().Deployments(d.Namespace).Get))
	out := make([]*appsv1.ReplicaSet, 0, len(owned))
	for _, rs := range owned {
		out = append(out, rs.DeepCopy())
	}
	return out, err
}

// checkPaused records pause and resume in the Progressing condition; true
// means it wrote the status and this sync is over.
func (c *Controller) checkPaused(ctx context.Context, d *appsv1.Deployment) (bool, error) {
	if !hasProgressDeadline(d) {
		return false, nil
	}
	cond := getCondition(&d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == reasonTimedOut {
		// As upstream: pausing does not hide that the rollout failed.
		return false, nil
	}
	pausedRecorded := cond != nil && cond.Reason == reasonPaused
	now := c.clock.Now()
	switch {
	case d.Spec.Paused && !pausedRecorded:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonPaused, "Deployment is paused", now))
	case !d.Spec.Paused && pausedRecorded:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonResumed, "Deployment is resumed", now))
	default:
		return false, nil
	}
	_, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return true, err // the status write brings the Deployment back for the rest
}

// split returns the ReplicaSet running d's current template (oldest first
// if several do) and all the others.
func split(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	sorted := append([]*appsv1.ReplicaSet(nil), rsList...)
	byCreation(sorted)
	var newRS *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range sorted {
		if newRS == nil && sameTemplate(&rs.Spec.Template, &d.Spec.Template) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}

// replicaSetsAndRevision finds (and with create, makes) the new ReplicaSet,
// and keeps the revision annotations on it and on the Deployment in step:
// the new ReplicaSet always carries the highest revision, so rolling back
// to an old template gives that ReplicaSet a new revision number.
func (c *Controller) replicaSetsAndRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	newRS, old := split(d, rsList)
	newRevision := maxRevision(old) + 1
	now := c.clock.Now()
	var err error
	switch {
	case newRS != nil:
		if newRS, err = c.refreshNewRS(ctx, d, newRS, newRevision); err != nil {
			return nil, nil, err
		}
		if hasProgressDeadline(d) && getCondition(&d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonFoundNewRS,
				fmt.Sprintf("Found new replica set %q", newRS.Name), now))
			updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
			if err != nil {
				return nil, nil, err
			}
			d.ResourceVersion = updated.ResourceVersion
		}
	case create:
		if newRS, err = c.createNewRS(ctx, d, old, newRevision); err != nil {
			return nil, nil, err
		}
	}
	if newRS != nil {
		if err := c.setDeploymentRevision(ctx, d, newRS.Annotations[RevisionAnnotation]); err != nil {
			return nil, nil, err
		}
	}
	return newRS, old, nil
}

func (c *Controller) refreshNewRS(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision int64) (*appsv1.ReplicaSet, error) {
	changed := copyAnnotations(d, rs)
	if revision(rs) < newRevision {
		if old, ok := rs.Annotations[RevisionAnnotation]; ok {
			// Rolled back to: keep the revisions it had, as upstream.
			recordRevisionHistory(rs, old)
		}
		rs.Annotations[RevisionAnnotation] = fmt.Sprint(newRevision)
		changed = true
	}
	if rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
		rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
		changed = true
	}
	if !changed {
		return rs, nil
	}
	return c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
}

// setDeploymentRevision writes the annotation with a merge patch of just
// that key, so it cannot clobber a concurrent change to the spec. It goes
// through the status subresource, as upstream does, because an annotation
// change on the main resource bumps metadata.generation: every rollout
// would count twice and `kubectl rollout status` would wait for an
// observedGeneration the controller never wrote.
func (c *Controller) setDeploymentRevision(ctx context.Context, d *appsv1.Deployment, rev string) error {
	if rev == "" || d.Annotations[RevisionAnnotation] == rev {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, RevisionAnnotation, rev)
	updated, err := c.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("set revision of %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.Annotations = updated.Annotations
	d.ResourceVersion = updated.ResourceVersion
	return nil
}

func (c *Controller) createNewRS(ctx context.Context, d *appsv1.Deployment, old []*appsv1.ReplicaSet, newRevision int64) (*appsv1.ReplicaSet, error) {
	hash := templateHash(&d.Spec.Template, d.Status.CollisionCount)
	tmpl := *d.Spec.Template.DeepCopy()
	tmpl.Labels = withLabel(tmpl.Labels, hash)
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	surge, _ := surgeAndUnavailable(d)
	size := int32(0)
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		size = newRSReplicas(d, append(old, nil), nil)
	} else {
		size = replicas(d)
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			Labels:          withLabel(d.Spec.Template.Labels, hash),
			OwnerReferences: []metav1.OwnerReference{controllerutil.NewControllerRef(d, deploymentKind.GroupVersion().String(), deploymentKind.Kind)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        &size,
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        sel,
			Template:        tmpl,
		},
	}
	copyAnnotations(d, rs)
	rs.Annotations[RevisionAnnotation] = fmt.Sprint(newRevision)
	setReplicasAnnotations(rs, replicas(d), replicas(d)+surge)
	now := c.clock.Now()
	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		existing, getErr := c.rsLister.ReplicaSets(d.Namespace).Get(rs.Name)
		if getErr != nil {
			return nil, fmt.Errorf("replicaset %s exists but is not in the cache yet: %w", rs.Name, err)
		}
		if ref := controllerutil.ControllerRef(existing); ref != nil && ref.UID == d.UID && sameTemplate(&existing.Spec.Template, &d.Spec.Template) {
			return existing.DeepCopy(), nil
		}
		// A hash collision with someone else's ReplicaSet: bump the count so
		// the next attempt hashes to a different name.
		n := int32(0)
		if d.Status.CollisionCount != nil {
			n = *d.Status.CollisionCount
		}
		n++
		d.Status.CollisionCount = &n
		if _, uerr := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); uerr != nil {
			return nil, uerr
		}
		return nil, fmt.Errorf("hash collision for replicaset %s, collision count now %d", rs.Name, n)
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonFailedCreate, msg, now))
			_, _ = c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		c.Events.Eventf(d, corev1.EventTypeWarning, reasonFailedCreate, "%s", msg)
		return nil, fmt.Errorf("create replicaset for %s/%s: %w", d.Namespace, d.Name, err)
	}
	slog.Info("created replicaset", "deployment", d.Namespace+"/"+d.Name, "replicaset", created.Name, "replicas", size)
	if size > 0 {
		c.Events.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, size)
	}
	if hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSCreated,
			fmt.Sprintf("Created new replica set %q", created.Name), now))
	}
	return created, nil
}

func withLabel(m map[string]string, hash string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	return out
}

// scaleRS sets a ReplicaSet's size; the update carries the cached
// resourceVersion, so a decision made on a stale cache conflicts instead of
// landing twice.
func (c *Controller) scaleRS(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, size int32) (bool, error) {
	surge, _ := surgeAndUnavailable(d)
	sizeChanged := rsReplicas(rs) != size
	annChanged := setReplicasAnnotations(rs, replicas(d), replicas(d)+surge)
	if !sizeChanged && !annChanged {
		return false, nil
	}
	from := rsReplicas(rs)
	rs.Spec.Replicas = &size
	updated, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
	if err != nil {
		return false, fmt.Errorf("scale replicaset %s/%s to %d: %w", rs.Namespace, rs.Name, size, err)
	}
	*rs = *updated
	if sizeChanged {
		slog.Info("scaled replicaset", "deployment", d.Namespace+"/"+d.Name, "replicaset", rs.Name, "replicas", size)
		dir := "up"
		if size < from {
			dir = "down"
		}
		c.Events.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", dir, rs.Name, from, size)
	}
	return sizeChanged, nil
}

// isScalingEvent: some active ReplicaSet was sized for a different
// Deployment size than the current one.
func (c *Controller) isScalingEvent(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) bool {
	want := fmt.Sprint(replicas(d))
	for _, rs := range rsList {
		if rsReplicas(rs) == 0 {
			continue
		}
		if v, ok := rs.Annotations[DesiredReplicasAnnotation]; ok && v != want {
			return true
		}
	}
	return false
}

// syncScale resizes without rolling out (paused, or the Deployment's size
// changed mid-rollout), then records status.
func (c *Controller) syncScale(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.replicaSetsAndRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	// As upstream, a paused Deployment's history is trimmed whatever its
	// template or conditions: a lowered revisionHistoryLimit takes effect.
	if d.Spec.Paused {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	all := append(old, newRS)
	return c.syncStatus(ctx, d, all, newRS)
}

func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	var active []*appsv1.ReplicaSet
	for _, rs := range append([]*appsv1.ReplicaSet{newRS}, old...) {
		if rs != nil && rsReplicas(rs) > 0 {
			active = append(active, rs)
		}
	}
	want := replicas(d)
	if len(active) <= 1 {
		target := newRS
		if len(active) == 1 {
			target = active[0]
		}
		if target == nil {
			if len(old) == 0 {
				return nil
			}
			target = old[len(old)-1]
		}
		_, err := c.scaleRS(ctx, d, target, want)
		return err
	}
	// Mid-rollout: move the difference onto the newest ReplicaSets when
	// growing and take it from the oldest when shrinking, so the rollout's
	// bounds hold for the new size.
	surge, _ := surgeAndUnavailable(d)
	diff := want + surge - specSum(active)
	if d.Spec.Paused {
		diff = want - specSum(active)
	}
	ordered := append([]*appsv1.ReplicaSet(nil), active...)
	byCreation(ordered)
	sizes := map[*appsv1.ReplicaSet]int32{}
	for _, rs := range ordered {
		sizes[rs] = rsReplicas(rs)
	}
	if diff > 0 {
		target := ordered[len(ordered)-1]
		if newRS != nil && rsReplicas(newRS) > 0 {
			target = newRS
		}
		sizes[target] += diff
	}
	for i := 0; diff < 0 && i < len(ordered); i++ {
		take := min(sizes[ordered[i]], -diff)
		sizes[ordered[i]] -= take
		diff += take
	}
	for _, rs := range ordered {
		if _, err := c.scaleRS(ctx, d, rs, sizes[rs]); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.replicaSetsAndRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaled, err := c.reconcileNewRS(ctx, d, all, newRS)
	if err != nil {
		return err
	}
	if scaled {
		return c.syncRolloutStatus(ctx, d, all, newRS)
	}
	scaled, err = c.reconcileOldRSs(ctx, d, all, old, newRS)
	if err != nil {
		return err
	}
	if scaled {
		return c.syncRolloutStatus(ctx, d, all, newRS)
	}
	if st := c.calculateStatus(d, all, newRS); complete(d, &st) {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, d, all, newRS)
}

// newRSReplicas is how big the new ReplicaSet may be now: up to the
// Deployment's size, without the pods passing replicas + maxSurge. An old
// ReplicaSet just scaled down still has its pods until its controller has
// deleted them, so each counts with the larger of its size and its pods.
func newRSReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	surge, _ := surgeAndUnavailable(d)
	var current int32
	for _, rs := range all {
		if rs != nil {
			current += max(rsReplicas(rs), rs.Status.Replicas)
		}
	}
	maxTotal := replicas(d) + surge
	cur := rsReplicas(newRS)
	if current >= maxTotal {
		return cur
	}
	up := min(maxTotal-current, replicas(d)-cur)
	return cur + max(up, 0)
}

func (c *Controller) reconcileNewRS(ctx context.Context, d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (bool, error) {
	want := replicas(d)
	switch cur := rsReplicas(newRS); {
	case cur == want:
		return false, nil
	case cur > want:
		return c.scaleRS(ctx, d, newRS, want)
	}
	return c.scaleRS(ctx, d, newRS, newRSReplicas(d, all, newRS))
}

func (c *Controller) reconcileOldRSs(ctx context.Context, d *appsv1.Deployment, all, old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (bool, error) {
	if specSum(old) == 0 {
		return false, nil
	}
	_, unavail := surgeAndUnavailable(d)
	minAvailable := replicas(d) - unavail
	newUnavailable := rsReplicas(newRS) - min(newRS.Status.AvailableReplicas, rsReplicas(newRS))
	maxScaleDown := specSum(all) - minAvailable - newUnavailable
	if maxScaleDown <= 0 {
		return false, nil
	}
	sorted := append([]*appsv1.ReplicaSet(nil), old...)
	byCreation(sorted)

	// First drop old pods that are not available anyway: they cost nothing.
	var cleaned int32
	for _, rs := range sorted {
		if cleaned >= maxScaleDown {
			break
		}
		size := rsReplicas(rs)
		unhealthy := size - min(rs.Status.AvailableReplicas, size)
		if size == 0 || unhealthy <= 0 {
			continue
		}
		n := min(maxScaleDown-cleaned, unhealthy)
		if _, err := c.scaleRS(ctx, d, rs, size-n); err != nil {
			return false, err
		}
		cleaned += n
	}

	// Then scale down available old pods, never below minAvailable.
	var scaledDown int32
	if avail := availableSum(all); avail > minAvailable {
		total := avail - minAvailable
		for _, rs := range sorted {
			if scaledDown >= total {
				break
			}
			size := rsReplicas(rs)
			if size == 0 {
				continue
			}
			n := min(size, total-scaledDown)
			if _, err := c.scaleRS(ctx, d, rs, size-n); err != nil {
				return false, err
			}
			scaledDown += n
		}
	}
	return cleaned+scaledDown > 0, nil
}

func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, sel labels.Selector) error {
	newRS, old, err := c.replicaSetsAndRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaledDown := false
	for _, rs := range old {
		if rsReplicas(rs) == 0 {
			continue
		}
		if _, err := c.scaleRS(ctx, d, rs, 0); err != nil {
			return err
		}
		scaledDown = true
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, d, all, newRS)
	}
	running, err := c.oldPodsRunning(d, newRS, old, sel)
	if err != nil {
		return err
	}
	if running {
		return c.syncRolloutStatus(ctx, d, all, newRS)
	}
	if newRS == nil {
		if newRS, old, err = c.replicaSetsAndRevision(ctx, d, rsList, true); err != nil {
			return err
		}
		all = append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	}
	if _, err := c.scaleRS(ctx, d, newRS, replicas(d)); err != nil {
		return err
	}
	if st := c.calculateStatus(d, all, newRS); complete(d, &st) {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, d, all, newRS)
}

// oldPodsRunning: Recreate must not start the new pods while any old one
// may still run, terminating ones included.
func (c *Controller) oldPodsRunning(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet, sel labels.Selector) (bool, error) {
	for _, rs := range old {
		if rs.Status.Replicas > 0 {
			return true, nil
		}
	}
	pods, err := c.podLister.Pods(d.Namespace).List(sel)
	if err != nil {
		return false, err
	}
	oldUIDs := map[types.UID]bool{}
	for _, rs := range old {
		oldUIDs[rs.UID] = true
	}
	for _, p := range pods {
		ref := controllerutil.ControllerRef(p)
		if ref == nil || !oldUIDs[ref.UID] || (newRS != nil && ref.UID == newRS.UID) {
			continue
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return true, nil
		}
	}
	return false, nil
}

// cleanup deletes the oldest scaled-down ReplicaSets beyond revisionHistoryLimit.
func (c *Controller) cleanup(ctx context.Context, d *appsv1.Deployment, old []*appsv1.ReplicaSet) error {
	limit := int32(10)
	if d.Spec.RevisionHistoryLimit != nil {
		limit = *d.Spec.RevisionHistoryLimit
	}
	var cleanable []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	extra := len(cleanable) - int(limit)
	if extra <= 0 {
		return nil
	}
	byCreation(cleanable)
	sortByRevision(cleanable)
	for _, rs := range cleanable {
		if extra == 0 {
			break
		}
		if rs.Status.Replicas != 0 || rsReplicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rs.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		slog.Info("deleted old replicaset", "deployment", d.Namespace+"/"+d.Name, "replicaset", rs.Name)
		extra--
	}
	return nil
}

func sortByRevision(rss []*appsv1.ReplicaSet) {
	for i := 1; i < len(rss); i++ {
		for j := i; j > 0 && revision(rss[j]) < revision(rss[j-1]); j-- {
			rss[j], rss[j-1] = rss[j-1], rss[j]
		}
	}
}

func (c *Controller) calculateStatus(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) appsv1.DeploymentStatus {
	var rss []*appsv1.ReplicaSet
	for _, rs := range all {
		if rs != nil {
			rss = append(rss, rs)
		}
	}
	avail := statusSum(rss, func(s *appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            statusSum(rss, func(s *appsv1.ReplicaSetStatus) int32 { return s.Replicas }),
		ReadyReplicas:       statusSum(rss, func(s *appsv1.ReplicaSetStatus) int32 { return s.ReadyReplicas }),
		AvailableReplicas:   avail,
		UnavailableReplicas: max(specSum(rss)-avail, 0),
		TerminatingReplicas: terminatingSum(rss),
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if newRS != nil {
		st.UpdatedReplicas = newRS.Status.Replicas
	}
	now := c.clock.Now()
	if avail >= replicas(d)-maxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, reasonMinAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, reasonMinUnavailable, "Deployment does not have minimum availability.", now))
	}
	return st
}

func (c *Controller) syncStatusOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old := split(d, rsList)
	return c.syncStatus(ctx, d, append(old, newRS), newRS)
}

func (c *Controller) syncStatus(ctx context.Context, d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) error {
	return c.writeStatus(ctx, d, c.calculateStatus(d, all, newRS))
}

func (c *Controller) writeStatus(ctx context.Context, d *appsv1.Deployment, st appsv1.DeploymentStatus) error {
	if apiequality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	next := d.DeepCopy()
	next.Status = st
	_, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// syncRolloutStatus is syncStatus plus the Progressing condition, and a
// wake-up for the moment the progress deadline would pass.
func (c *Controller) syncRolloutStatus(ctx context.Context, d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) error {
	st := c.calculateStatus(d, all, newRS)
	now := c.clock.Now()
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := getCondition(&d.Status, appsv1.DeploymentProgressing)
	done := complete(d, &st)
	// As upstream: a completed rollout keeps NewReplicaSetAvailable while
	// pods come and go, until a new rollout; and a rollout that timed out
	// turns back to progressing or complete once its pods get there.
	settled := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == reasonNewRSAvailable
	if hasProgressDeadline(d) && !settled {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case done:
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSAvailable,
				subject+" has successfully progressed.", now))
		case progressing(d, &st):
			cond := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonRSUpdated, subject+" is progressing.", now)
			if cur != nil && cur.Status == corev1.ConditionTrue {
				cond.LastTransitionTime = cur.LastTransitionTime
			}
			// Progress refreshes the deadline, so replace even if equal.
			removeCondition(&st, appsv1.DeploymentProgressing)
			st.Conditions = append(st.Conditions, cond)
		case timedOut(d, &st, now):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonTimedOut,
				subject+" has timed out progressing.", now))
		}
	}
	if newRS != nil {
		for _, rc := range newRS.Status.Conditions {
			if rc.Type == appsv1.ReplicaSetReplicaFailure && rc.Status == corev1.ConditionTrue {
				setCondition(&st, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
					Reason: rc.Reason, Message: rc.Message, LastUpdateTime: metav1.NewTime(now), LastTransitionTime: rc.LastTransitionTime})
			}
		}
		if !hasReplicaFailure(newRS) {
			removeCondition(&st, appsv1.DeploymentReplicaFailure)
		}
	}
	if hasProgressDeadline(d) && !done && !timedOut(d, &st, now) {
		if pc := getCondition(&st, appsv1.DeploymentProgressing); pc != nil {
			deadline := pc.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
			if key, ok := controllerutil.KeyFunc(d); ok {
				c.queue.AddAfter(key, controllerutil.ResyncAfter(deadline.Sub(now)+time.Second))
			}
		}
	}
	return c.writeStatus(ctx, d, st)
}

func hasReplicaFailure(rs *appsv1.ReplicaSet) bool {
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
