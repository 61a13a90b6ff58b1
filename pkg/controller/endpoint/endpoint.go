// Package endpoint is the Endpoints controller: it keeps a core/v1 Endpoints
// object per Service with a selector, listing the pods behind it, as
// upstream's endpoint controller does.
package endpoint

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
	"github.com/kube-lite/kube-lite/pkg/controller/endpoint/servicepods"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "endpoint"

// Controller reconciles the Endpoints of Services.
type Controller struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	synced    []cache.InformerSynced
	queue     controllerutil.Queue
	triggers  servicepods.TriggerTimes
	stale     staleVersions
	// Events records failed writes; set it before Run.
	Events controllerutil.Recorder
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, svcInformer coreinformers.ServiceInformer, podInformer coreinformers.PodInformer,
	epInformer coreinformers.EndpointsInformer, mp workqueue.MetricsProvider) *Controller {
	c := &Controller{
		client:    client,
		services:  svcInformer.Lister(),
		pods:      podInformer.Lister(),
		endpoints: epInformer.Lister(),
		synced:    []cache.InformerSynced{svcInformer.Informer().HasSynced, podInformer.Informer().HasSynced, epInformer.Informer().HasSynced},
		queue:     controllerutil.NewQueue(Name, mp),
		Events:    controllerutil.NopRecorder{},
	}
	_, _ = svcInformer.Informer().AddEventHandler(controllerutil.EnqueueHandler(c.queue))
	_, _ = podInformer.Informer().AddEventHandler(servicepods.PodHandler(c.services, c.queue))
	// A deleted Endpoints of a live Service comes back; other edits are
	// not watched, as upstream (the next change to the Service's pods or the
	// resync repairs them).
	_, _ = epInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if key, ok := controllerutil.KeyFunc(obj); ok {
				c.queue.Add(key)
			}
		},
	})
	return c
}

// Run processes Services with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced...) {
		return
	}
	c.queueLeftovers()
	controllerutil.RunWorkers(ctx, Name, c.queue, workers, c.sync)
}

// queueLeftovers queues every Endpoints object once at start, so that those
// of Services deleted while no controller ran go away too (as upstream).
func (c *Controller) queueLeftovers() {
	eps, err := c.endpoints.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ep := range eps {
		if _, ok := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]; ok {
			continue // an old-style leader election record, not a Service's
		}
		c.queue.Add(ep.Namespace + "/" + ep.Name)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.triggers.Forget(key)
		c.stale.forget(key)
		err := c.client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete endpoints %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !servicepods.Managed(svc) {
		return nil // the user (or the apiserver, for `kubernetes`) writes these
	}
	pods, err := c.pods.Pods(ns).List(servicepods.Selector(svc))
	if err != nil {
		return err
	}
	// Computed before the no-op check so that the tracker sees every state.
	trigger := c.triggers.Compute(key, svc, pods)
	subsets := Subsets(svc, pods)

	current, err := c.endpoints.Endpoints(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return err
	case c.stale.is(key, current.ResourceVersion):
		return fmt.Errorf("endpoints %s: the cache still holds version %s, already replaced", key, current.ResourceVersion)
	}
	ep, write := Desired(current, svc, subsets, trigger)
	if !write {
		return nil
	}
	if current == nil {
		_, err = c.client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{})
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil // creates will keep failing; the namespace is going
		}
		if err != nil {
			c.Events.Eventf(svc, corev1.EventTypeWarning, "FailedToCreateEndpoint", "Failed to create endpoint for service %s/%s: %v", ns, name, err)
			return fmt.Errorf("create endpoints %s: %w", key, err)
		}
		return nil
	}
	updated, err := c.client.CoreV1().Endpoints(ns).Update(ctx, ep, metav1.UpdateOptions{})
	if err != nil {
		c.Events.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpoint", "Failed to update endpoint %s/%s: %v", ns, name, err)
		return fmt.Errorf("update endpoints %s: %w", key, err)
	}
	if updated.ResourceVersion != current.ResourceVersion {
		c.stale.mark(key, current.ResourceVersion)
	}
	return nil
}

// staleVersions remembers, per Endpoints, the resourceVersion this
// controller last replaced: finding it in the cache again means the cache
// lags behind our own write, and computing from it would undo that write.
type staleVersions struct {
	mu sync.Mutex
	rv map[string]string
}

func (s *staleVersions) mark(key, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv == nil {
		s.rv = map[string]string{}
	}
	s.rv[key] = rv
}

func (s *staleVersions) is(key, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv[key] == rv
}

func (s *staleVersions) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rv, key)
}
