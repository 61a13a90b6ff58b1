// Package nodelifecycle notices Nodes whose kubelet stopped renewing its
// Lease (or reports NotReady), taints them, and evicts their pods once the
// pods' tolerations run out, so that their controllers replace them.
package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "nodelifecycle"

const podsByNodeIndex = "spec.nodeName"

// Config holds the timings (upstream's flags).
type Config struct {
	// GracePeriod is how long a Node may go without a Lease renewal or
	// status heartbeat before it is marked Unknown.
	GracePeriod time.Duration
	// MonitorPeriod is how often Nodes are checked.
	MonitorPeriod time.Duration
}

// Controller watches Node health and evicts pods from unhealthy Nodes.
type Controller struct {
	client      kubernetes.Interface
	nodeLister  corelisters.NodeLister
	leaseLister coordlisters.LeaseLister
	podLister   corelisters.PodLister
	podIndexer  cache.Indexer
	synced      []cache.InformerSynced
	evictions   controllerutil.Queue
	clock       clock.Clock
	cfg         Config
	// Events records what the controller did; set it before Run.
	Events controllerutil.Recorder
	// EvictionEvents records the NoExecute evictions (TaintManagerEviction),
	// which upstream's separate taint-eviction-controller reports under its
	// own name; set it before Run.
	EvictionEvents controllerutil.Recorder

	mu     sync.Mutex
	health map[string]*nodeHealth
	// scheduled are the pods whose eviction waits for a tolerationSeconds
	// to run out, so that calling it off can be told, as upstream does.
	scheduled map[string]bool
}

// nodeHealth is what this process last saw of a Node's liveness, stamped
// with its own clock: comparing with the kubelet's timestamps would trust
// two clocks to agree.
type nodeHealth struct {
	uid       types.UID
	probed    time.Time
	leaseRV   string
	heartbeat metav1.Time
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, nodes coreinformers.NodeInformer, leases coordinformers.LeaseInformer, pods coreinformers.PodInformer,
	cfg Config, mp workqueue.MetricsProvider, clk clock.Clock) *Controller {
	c := &Controller{
		client:         client,
		nodeLister:     nodes.Lister(),
		leaseLister:    leases.Lister(),
		podLister:      pods.Lister(),
		podIndexer:     pods.Informer().GetIndexer(),
		synced:         []cache.InformerSynced{nodes.Informer().HasSynced, leases.Informer().HasSynced, pods.Informer().HasSynced},
		evictions:      controllerutil.NewQueue(Name, mp),
		clock:          clk,
		cfg:            cfg,
		Events:         controllerutil.NopRecorder{},
		EvictionEvents: controllerutil.NopRecorder{},
		health:         map[string]*nodeHealth{},
		scheduled:      map[string]bool{},
	}
	_ = pods.Informer().AddIndexers(cache.Indexers{podsByNodeIndex: func(obj any) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{p.Spec.NodeName}, nil
	}})
	_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueuePod,
		UpdateFunc: func(_, obj any) { c.enqueuePod(obj) },
	})
	_, _ = nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueuePodsOf,
		UpdateFunc: func(oldObj, obj any) {
			o, n := oldObj.(*corev1.Node), obj.(*corev1.Node)
			if !apiequality.Semantic.DeepEqual(noExecute(o.Spec.Taints), noExecute(n.Spec.Taints)) {
				c.enqueuePodsOf(obj)
			}
		},
	})
	return c
}

func (c *Controller) enqueuePod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	if key, ok := controllerutil.KeyFunc(p); ok {
		c.evictions.Add(key)
	}
}

func (c *Controller) enqueuePodsOf(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	objs, _ := c.podIndexer.ByIndex(podsByNodeIndex, n.Name)
	for _, o := range objs {
		c.enqueuePod(o)
	}
}

// Run monitors Nodes every MonitorPeriod and evicts pods until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.evictions.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced...) {
		return
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.monitor(ctx); err != nil {
			slog.Warn("node monitor", "err", err)
		}
	}, c.cfg.MonitorPeriod)
	controllerutil.RunWorkers(ctx, Name, c.evictions, workers, c.syncPod)
}

// Taints, as upstream names them.
var (
	unreachableNoExecute  = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReadyNoExecute     = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	unreachableNoSchedule = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}
	notReadyNoSchedule    = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	unschedulable         = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	// conditionTaints are upstream's TaintNodesByCondition: a NoSchedule
	// taint for each of these conditions while it is True.
	conditionTaints = map[corev1.NodeConditionType]corev1.Taint{
		corev1.NodeMemoryPressure:     {Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule},
		corev1.NodeDiskPressure:       {Key: corev1.TaintNodeDiskPressure, Effect: corev1.TaintEffectNoSchedule},
		corev1.NodePIDPressure:        {Key: corev1.TaintNodePIDPressure, Effect: corev1.TaintEffectNoSchedule},
		corev1.NodeNetworkUnavailable: {Key: corev1.TaintNodeNetworkUnavailable, Effect: corev1.TaintEffectNoSchedule},
	}
	ourTaints = append([]corev1.Taint{unreachableNoExecute, notReadyNoExecute, unreachableNoSchedule, notReadyNoSchedule, unschedulable},
		slices.Collect(maps.Values(conditionTaints))...)
)

func (c *Controller) monitor(ctx context.Context) error {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var errs []error
	for _, n := range nodes {
		seen[n.Name] = true
		if err := c.monitorNode(ctx, n); err != nil {
			errs = append(errs, err)
		}
	}
	var gone []*corev1.ObjectReference
	c.mu.Lock()
	for name, h := range c.health {
		if !seen[name] {
			delete(c.health, name)
			gone = append(gone, &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: h.uid})
		}
	}
	c.mu.Unlock()
	for _, ref := range gone {
		c.Events.Eventf(ref, corev1.EventTypeNormal, "RemovingNode", "Node %s event: Removing Node %s from Controller", ref.Name, ref.Name)
	}
	if len(errs) > 0 {
		return fmt.Errorf("monitor nodes: %v", errs)
	}
	return nil
}

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// probe records liveness signals and reports whether the Node is overdue,
// and whether this is the first sight of it.
func (c *Controller) probe(n *corev1.Node) (overdue, first bool) {
	now := c.clock.Now()
	var lease *coordinationv1.Lease
	if l, err := c.leaseLister.Leases(corev1.NamespaceNodeLease).Get(n.Name); err == nil {
		lease = l
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.health[n.Name]
	if !ok {
		// First sight (or a restart of this process): give the full grace.
		h = &nodeHealth{uid: n.UID, probed: now}
		c.health[n.Name] = h
	}
	if lease != nil && lease.ResourceVersion != h.leaseRV {
		h.leaseRV = lease.ResourceVersion
		h.probed = now
	}
	if rc := readyCondition(n); rc != nil && !rc.LastHeartbeatTime.Equal(&h.heartbeat) {
		h.heartbeat = rc.LastHeartbeatTime
		if ok {
			h.probed = now
		}
	}
	return now.Sub(h.probed) > c.cfg.GracePeriod, !ok
}

func (c *Controller) monitorNode(ctx context.Context, n *corev1.Node) error {
	overdue, first := c.probe(n)
	if first {
		// As upstream, on first sight (after a restart too).
		c.Events.Eventf(n, corev1.EventTypeNormal, "RegisteredNode", "Node %s event: Registered Node %s in Controller", n.Name, n.Name)
	}
	now := metav1.NewTime(c.clock.Now())
	if overdue {
		if rc := readyCondition(n); rc == nil || rc.Status != corev1.ConditionUnknown {
			wasReady := rc != nil && rc.Status == corev1.ConditionTrue
			next := n.DeepCopy()
			markUnknown(next, now)
			updated, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, next, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("mark node %s unknown: %w", n.Name, err)
			}
			slog.Info("node stopped reporting, marked Unknown", "node", n.Name, "grace", c.cfg.GracePeriod)
			if wasReady {
				c.Events.Eventf(n, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", n.Name)
			}
			n = updated
		}
	}
	if err := c.reconcileTaints(ctx, n, now); err != nil {
		return err
	}
	if rc := readyCondition(n); rc != nil && rc.Status != corev1.ConditionTrue {
		return c.markPodsNotReady(ctx, n, now)
	}
	return nil
}

// markPodsNotReady turns Ready off on the pods of a Node that is not Ready,
// as upstream does: nobody can vouch for them any more, so Services and
// Deployments stop counting them before they are evicted.
func (c *Controller) markPodsNotReady(ctx context.Context, n *corev1.Node, now metav1.Time) error {
	objs, err := c.podIndexer.ByIndex(podsByNodeIndex, n.Name)
	if err != nil {
		return fmt.Errorf("pods of node %s: %w", n.Name, err)
	}
	var errs []error
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Spec.NodeName != n.Name {
			continue
		}
		stillReady := func(cond corev1.PodCondition) bool {
			return cond.Type == corev1.PodReady && cond.Status != corev1.ConditionFalse
		}
		// Most passes find the pods marked already: copy only to change.
		if !slices.ContainsFunc(p.Status.Conditions, stillReady) {
			continue
		}
		next := p.DeepCopy()
		for i := range next.Status.Conditions {
			if cond := &next.Status.Conditions[i]; stillReady(*cond) {
				cond.Status = corev1.ConditionFalse
				cond.LastTransitionTime = now
			}
		}
		_, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // gone, or changed: the next pass looks again
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("mark pod %s/%s not ready: %w", p.Namespace, p.Name, err))
			continue
		}
		c.Events.Eventf(p, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return errors.Join(errs...)
}

// markUnknown sets every kubelet-owned condition to Unknown, keeping the
// last heartbeat, as upstream does.
func markUnknown(n *corev1.Node, now metav1.Time) {
	types := []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}
	for _, t := range types {
		found := false
		for i := range n.Status.Conditions {
			cond := &n.Status.Conditions[i]
			if cond.Type != t {
				continue
			}
			found = true
			if cond.Status != corev1.ConditionUnknown {
				cond.Status = corev1.ConditionUnknown
				cond.Reason = "NodeStatusUnknown"
				cond.Message = "Kubelet stopped posting node status."
				cond.LastTransitionTime = now
			}
		}
		if !found {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.", LastHeartbeatTime: n.CreationTimestamp, LastTransitionTime: now})
		}
	}
}

func (c *Controller) reconcileTaints(ctx context.Context, n *corev1.Node, now metav1.Time) error {
	var want []corev1.Taint
	if rc := readyCondition(n); rc != nil {
		switch rc.Status {
		case corev1.ConditionUnknown:
			want = []corev1.Taint{unreachableNoExecute, unreachableNoSchedule}
		case corev1.ConditionFalse:
			want = []corev1.Taint{notReadyNoExecute, notReadyNoSchedule}
		}
	}
	for _, cond := range n.Status.Conditions {
		if t, ok := conditionTaints[cond.Type]; ok && cond.Status == corev1.ConditionTrue {
			want = append(want, t)
		}
	}
	// As upstream, a cordoned Node carries the unschedulable taint.
	if n.Spec.Unschedulable {
		want = append(want, unschedulable)
	}
	var taints []corev1.Taint
	changed := false
	for _, t := range n.Spec.Taints {
		if isOurs(t) && !containsTaint(want, t) {
			changed = true
			continue
		}
		taints = append(taints, t)
	}
	for _, w := range want {
		if !containsTaint(n.Spec.Taints, w) {
			w.TimeAdded = &now
			taints = append(taints, w)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	next := n.DeepCopy()
	next.Spec.Taints = taints
	if _, err := c.client.CoreV1().Nodes().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("taint node %s: %w", n.Name, err)
	}
	slog.Info("node taints", "node", n.Name, "taints", taintKeys(taints))
	return nil
}

func isOurs(t corev1.Taint) bool { return containsTaint(ourTaints, t) }

func containsTaint(ts []corev1.Taint, t corev1.Taint) bool {
	for _, x := range ts {
		if x.Key == t.Key && x.Effect == t.Effect {
			return true
		}
	}
	return false
}

func taintKeys(ts []corev1.Taint) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

func noExecute(ts []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range ts {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// evictAt is when the pod must leave a Node with these NoExecute taints:
// at once for a taint it does not tolerate, at the earliest expiry of its
// tolerationSeconds otherwise; ok=false means it may stay for good.
func evictAt(p *corev1.Pod, taints []corev1.Taint, now time.Time) (time.Time, bool) {
	var at time.Time
	found := false
	for i := range taints {
		t := &taints[i]
		var tol *corev1.Toleration
		for j := range p.Spec.Tolerations {
			if p.Spec.Tolerations[j].ToleratesTaint(logr.Discard(), t, true) {
				tol = &p.Spec.Tolerations[j]
				break
			}
		}
		if tol == nil {
			return now, true
		}
		if tol.TolerationSeconds == nil {
			continue
		}
		added := now
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		when := added.Add(time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second)
		if !found || when.Before(at) {
			at, found = when, true
		}
	}
	return at, found
}

func (c *Controller) syncPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	p, err := c.podLister.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if p == nil || p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
		c.setScheduled(key, false) // going anyway: nothing to call off
		return nil
	}
	n, err := c.nodeLister.Get(p.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	taints := noExecute(n.Spec.Taints)
	now := c.clock.Now()
	at, evict := evictAt(p, taints, now)
	if !evict {
		if c.setScheduled(key, false) {
			// The taints went, or the pod now tolerates them for ever.
			c.EvictionEvents.Eventf(p, corev1.EventTypeNormal, "TaintManagerEviction", "Cancelling deletion of Pod %s", key)
		}
		return nil
	}
	if at.After(now) {
		c.setScheduled(key, true)
		c.evictions.AddAfter(key, at.Sub(now))
		return nil
	}
	c.setScheduled(key, false)
	if err := c.markDisruptionTarget(ctx, p, now); err != nil {
		return err
	}
	err = c.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("evict pod %s: %w", key, err)
	}
	slog.Info("evicted pod from tainted node", "pod", key, "node", n.Name, "taints", taintKeys(taints))
	c.EvictionEvents.Eventf(p, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s", key)
	return nil
}

// setScheduled records whether the pod's eviction waits for a
// tolerationSeconds to run out; it returns whether it did before.
func (c *Controller) setScheduled(key string, on bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.scheduled[key]
	if on {
		c.scheduled[key] = true
	} else {
		delete(c.scheduled, key)
	}
	return was
}

// markDisruptionTarget says on the pod why it is about to be deleted, as
// upstream's taint eviction does: a Job's podFailurePolicy and
// `kubectl describe pod` read it.
func (c *Controller) markDisruptionTarget(ctx context.Context, p *corev1.Pod, now time.Time) error {
	want := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: metav1.NewTime(now)}
	next := p.DeepCopy()
	found := false
	for i := range next.Status.Conditions {
		cond := &next.Status.Conditions[i]
		if cond.Type != corev1.DisruptionTarget {
			continue
		}
		found = true
		if cond.Status == want.Status && cond.Reason == want.Reason && cond.Message == want.Message {
			return nil
		}
		*cond = want
	}
	if !found {
		next.Status.Conditions = append(next.Status.Conditions, want)
	}
	_, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark pod %s/%s as a disruption target: %w", p.Namespace, p.Name, err)
	}
	return nil
}
