// Package endpointslice is the EndpointSlice controller: it keeps the
// discovery.k8s.io/v1 EndpointSlices of every Service with a selector, as
// upstream's endpointslice controller does. Reconcile decides; this file
// watches and writes.
package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
	"github.com/kube-lite/kube-lite/pkg/controller/endpoint/servicepods"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "endpointslice"

// Controller reconciles the EndpointSlices of Services.
type Controller struct {
	client      kubernetes.Interface
	services    corelisters.ServiceLister
	pods        corelisters.PodLister
	nodes       corelisters.NodeLister
	slices      discoverylisters.EndpointSliceLister
	synced      []cache.InformerSynced
	queue       controllerutil.Queue
	triggers    servicepods.TriggerTimes
	tracker     writeTracker
	maxPerSlice int
	mu          sync.Mutex
	waiting     map[string]struct{} // Services with pods of unknown Nodes
	// Events records failed syncs on the Service; set it before Run.
	Events controllerutil.Recorder
}

// New wires the controller to the shared informers; maxPerSlice is
// --max-endpoints-per-slice.
func New(client kubernetes.Interface, svcInformer coreinformers.ServiceInformer, podInformer coreinformers.PodInformer,
	nodeInformer coreinformers.NodeInformer, sliceInformer discoveryinformers.EndpointSliceInformer, maxPerSlice int, mp workqueue.MetricsProvider) *Controller {
	c := &Controller{
		client:   client,
		services: svcInformer.Lister(),
		pods:     podInformer.Lister(),
		nodes:    nodeInformer.Lister(),
		slices:   sliceInformer.Lister(),
		synced: []cache.InformerSynced{svcInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
			nodeInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced},
		queue:       controllerutil.NewQueue(Name, mp),
		maxPerSlice: maxPerSlice,
		waiting:     map[string]struct{}{},
		Events:      controllerutil.NopRecorder{},
	}
	_, _ = svcInformer.Informer().AddEventHandler(controllerutil.EnqueueHandler(c.queue))
	_, _ = podInformer.Informer().AddEventHandler(servicepods.PodHandler(c.services, c.queue))
	_, _ = sliceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onSlice,
		UpdateFunc: func(_, obj any) { c.onSlice(obj) },
		DeleteFunc: func(obj any) {
			s, ok := controllerutil.FromDeleted[*discoveryv1.EndpointSlice](obj)
			if !ok || s.Labels[discoveryv1.LabelManagedBy] != ControllerName {
				return
			}
			key := serviceKey(s)
			c.tracker.forgetSlice(key, s.Name)
			c.queue.Add(key)
		},
	})
	// A Node that appears lets in the pods skipped while it was unknown; a
	// Node's zone is part of its pods' endpoints, and a Node that goes takes
	// them out.
	_, _ = nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.queueWaiting() },
		UpdateFunc: func(oldObj, newObj any) {
			a, okA := oldObj.(*corev1.Node)
			b, okB := newObj.(*corev1.Node)
			if okA && okB && a.Labels[corev1.LabelTopologyZone] != b.Labels[corev1.LabelTopologyZone] {
				c.queueServicesOnNode(b.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if n, ok := controllerutil.FromDeleted[*corev1.Node](obj); ok {
				c.queueServicesOnNode(n.Name)
			}
		},
	})
	return c
}

// queueWaiting queues the Services that left out pods of unknown Nodes.
func (c *Controller) queueWaiting() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.waiting {
		c.queue.Add(key)
	}
}

// queueServicesOnNode queues the Services of the pods on a Node.
func (c *Controller) queueServicesOnNode(node string) {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if p.Spec.NodeName != node {
			continue
		}
		for _, key := range servicepods.ServicesFor(c.services, p) {
			c.queue.Add(key)
		}
	}
}

// setWaiting records whether Service key left out pods of unknown Nodes.
func (c *Controller) setWaiting(key string, waiting bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if waiting {
		c.waiting[key] = struct{}{}
	} else {
		delete(c.waiting, key)
	}
}

// Run processes Services with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced...) {
		return
	}
	controllerutil.RunWorkers(ctx, Name, c.queue, workers, c.sync)
}

func serviceKey(s *discoveryv1.EndpointSlice) string {
	return s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
}

// onSlice brings back the Service of a slice someone else changed.
func (c *Controller) onSlice(obj any) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || s.Labels[discoveryv1.LabelManagedBy] != ControllerName || s.Labels[discoveryv1.LabelServiceName] == "" {
		return
	}
	c.queue.Add(serviceKey(s))
}

var errStaleCache = errors.New("the EndpointSlice cache does not show this controller's last writes yet")

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.triggers.Forget(key)
		c.tracker.forgetService(key)
		c.setWaiting(key, false)
		return c.deleteLeftovers(ctx, ns, name)
	}
	if err != nil {
		return err
	}
	if !servicepods.Managed(svc) {
		return nil // the user writes these Services' slices
	}
	pods, err := c.pods.Pods(ns).List(servicepods.Selector(svc))
	if err != nil {
		return err
	}
	existing, err := c.ownSlices(ns, name)
	if err != nil {
		return err
	}
	if c.tracker.stale(key, existing) {
		return fmt.Errorf("service %s: %w", key, errStaleCache)
	}
	plan := Reconcile(Input{
		Service:  svc,
		Pods:     pods,
		Existing: existing,
		Node: func(n string) (*corev1.Node, bool) {
			node, err := c.nodes.Get(n)
			return node, err == nil
		},
		MaxEndpointsPerSlice: c.maxPerSlice,
		TriggerTime:          c.triggers.Compute(key, svc, pods),
	})
	c.setWaiting(key, len(plan.Skipped) > 0)
	if err := c.apply(ctx, key, svc, plan); err != nil {
		c.Events.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices",
			"Error updating Endpoint Slices for Service %s/%s: %v", ns, name, err)
		return err
	}
	if len(plan.Skipped) > 0 {
		return fmt.Errorf("service %s: pods %s left out until their Node is known", key, strings.Join(plan.Skipped, ", "))
	}
	return nil
}

// ownSlices lists the Service's slices this controller manages, but those
// already being deleted.
func (c *Controller) ownSlices(ns, name string) ([]*discoveryv1.EndpointSlice, error) {
	all, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName}))
	if err != nil {
		return nil, err
	}
	var out []*discoveryv1.EndpointSlice
	for _, s := range all {
		if s.DeletionTimestamp == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

func (c *Controller) apply(ctx context.Context, key string, svc *corev1.Service, plan Plan) error {
	api := c.client.DiscoveryV1().EndpointSlices(svc.Namespace)
	if svc.DeletionTimestamp == nil {
		for _, s := range plan.Create {
			created, err := api.Create(ctx, s, metav1.CreateOptions{})
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("create EndpointSlice for Service %s: %w", key, err)
			}
			c.tracker.wrote(key, created)
		}
	}
	for _, s := range plan.Update {
		updated, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update EndpointSlice %s for Service %s: %w", s.Name, key, err)
		}
		c.tracker.wrote(key, updated)
	}
	for _, s := range plan.Delete {
		err := api.Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete EndpointSlice %s for Service %s: %w", s.Name, key, err)
		}
		c.tracker.deleted(key, s.Name)
	}
	return nil
}

// deleteLeftovers removes the slices of a deleted Service. Upstream leaves
// this to the garbage collector (the slices' owner is the Service); doing it
// here too means consumers stop seeing them without waiting for it.
func (c *Controller) deleteLeftovers(ctx context.Context, ns, name string) error {
	slices, err := c.ownSlices(ns, name)
	if err != nil {
		return err
	}
	for _, s := range slices {
		err := c.client.DiscoveryV1().EndpointSlices(ns).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete EndpointSlice %s of deleted Service %s/%s: %w", s.Name, ns, name, err)
		}
	}
	return nil
}

// writeTracker remembers this controller's own writes not yet seen in the
// informer cache, so that a sync on a lagging cache waits instead of
// creating a duplicate slice or undoing a write (upstream's
// EndpointSliceTracker does the same with generations).
type writeTracker struct {
	mu sync.Mutex
	// want maps a Service key to slice name to what the cache must show.
	want map[string]map[string]expectation
}

type expectation struct {
	generation int64
	gone       bool
}

func (t *writeTracker) set(key, name string, e expectation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.want == nil {
		t.want = map[string]map[string]expectation{}
	}
	if t.want[key] == nil {
		t.want[key] = map[string]expectation{}
	}
	t.want[key][name] = e
}

func (t *writeTracker) wrote(key string, s *discoveryv1.EndpointSlice) {
	t.set(key, s.Name, expectation{generation: s.Generation})
}

func (t *writeTracker) deleted(key, name string) { t.set(key, name, expectation{gone: true}) }

func (t *writeTracker) forgetSlice(key, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.want[key], name)
}

func (t *writeTracker) forgetService(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.want, key)
}

// stale reports whether the cached slices lag behind a write; expectations
// the cache meets are dropped.
func (t *writeTracker) stale(key string, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	want := t.want[key]
	if len(want) == 0 {
		return false
	}
	byName := make(map[string]*discoveryv1.EndpointSlice, len(cached))
	for _, s := range cached {
		byName[s.Name] = s
	}
	stale := false
	for name, e := range want {
		s, present := byName[name]
		switch {
		case e.gone && present, !e.gone && !present, !e.gone && s.Generation < e.generation:
			stale = true
		default:
			delete(want, name)
		}
	}
	if len(want) == 0 {
		delete(t.want, key)
	}
	return stale
}
