// Package namespace empties a Namespace being deleted and then releases it
// by removing the "kubernetes" finalizer through namespaces/<name>/finalize.
package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "namespace"

// Discoverer lists the namespaced resources the apiserver serves.
type Discoverer interface {
	ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error)
}

// Controller deletes the contents of terminating namespaces.
type Controller struct {
	client    kubernetes.Interface
	dynamic   dynamic.Interface
	discovery Discoverer
	lister    corelisters.NamespaceLister
	synced    cache.InformerSynced
	queue     controllerutil.Queue
	// recheck is how long to wait while objects finish terminating.
	recheck time.Duration
}

// New wires the controller to the namespace informer.
func New(client kubernetes.Interface, dyn dynamic.Interface, disc Discoverer, nsInformer coreinformers.NamespaceInformer, mp workqueue.MetricsProvider) *Controller {
	c := &Controller{
		client:    client,
		dynamic:   dyn,
		discovery: disc,
		lister:    nsInformer.Lister(),
		synced:    nsInformer.Informer().HasSynced,
		queue:     controllerutil.NewQueue(Name, mp),
		recheck:   time.Second,
	}
	_, _ = nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.maybeEnqueue,
		UpdateFunc: func(_, obj any) { c.maybeEnqueue(obj) },
	})
	return c
}

func (c *Controller) maybeEnqueue(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if ok && ns.DeletionTimestamp != nil {
		c.queue.Add(ns.Name)
	}
}

// Run processes namespaces with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !controllerutil.WaitForSync(ctx, Name, c.synced) {
		return
	}
	controllerutil.RunWorkers(ctx, Name, c.queue, workers, c.sync)
}

func hasFinalizer(ns *corev1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return true
		}
	}
	return false
}

func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil {
		return nil
	}
	if hasFinalizer(ns) {
		remaining, err := c.deleteContent(ctx, name)
		if err != nil {
			return err
		}
		if remaining > 0 {
			// Objects with finalizers or grace periods take time; nothing
			// about them shows on the namespace, so poll.
			c.queue.AddAfter(name, c.recheck)
			return nil
		}
		if ns, err = c.finalize(ctx, ns); err != nil {
			return err
		}
	}
	// With every finalizer gone the apiserver may already have removed the
	// namespace; if it still stands, delete it again so it goes.
	if len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0 {
		err := c.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete finalized namespace %s: %w", name, err)
		}
	}
	return nil
}

func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	next := ns.DeepCopy()
	var keep []corev1.FinalizerName
	for _, f := range next.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			keep = append(keep, f)
		}
	}
	next.Spec.Finalizers = keep
	out, err := c.client.CoreV1().Namespaces().Finalize(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return next, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finalize namespace %s: %w", ns.Name, err)
	}
	slog.Info("namespace emptied and finalized", "namespace", ns.Name)
	return out, nil
}

// deleteContent deletes every object in the namespace and returns how many
// still exist (terminating ones included).
func (c *Controller) deleteContent(ctx context.Context, ns string) (int, error) {
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return 0, fmt.Errorf("discover namespaced resources: %w", err)
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists)
	gvrs, err := discovery.GroupVersionResources(lists)
	if err != nil {
		return 0, fmt.Errorf("parse discovery: %w", err)
	}
	remaining := 0
	var errs []string
	background := metav1.DeletePropagationBackground
	for gvr := range gvrs {
		if strings.Contains(gvr.Resource, "/") {
			continue
		}
		n, err := c.deleteAll(ctx, gvr, ns, background)
		remaining += n
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return remaining, fmt.Errorf("empty namespace %s: %s", ns, strings.Join(errs, "; "))
	}
	return remaining, nil
}

func (c *Controller) deleteAll(ctx context.Context, gvr schema.GroupVersionResource, ns string, policy metav1.DeletionPropagation) (int, error) {
	ri := c.dynamic.Resource(gvr).Namespace(ns)
	list, err := ri.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", gvr.Resource, err)
	}
	for _, item := range list.Items {
		if item.GetDeletionTimestamp() != nil {
			continue
		}
		uid := item.GetUID()
		err := ri.Delete(ctx, item.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return len(list.Items), fmt.Errorf("delete %s %s: %w", gvr.Resource, item.GetName(), err)
		}
	}
	return len(list.Items), nil
}
