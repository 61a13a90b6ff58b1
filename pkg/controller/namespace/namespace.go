// Package namespace empties a Namespace being deleted and then releases it
// by removing the "kubernetes" finalizer through namespaces/<name>/finalize.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
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
	"k8s.io/utils/clock"

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
	clock   clock.Clock
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
		clock:     clock.RealClock{},
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
		p := c.deleteContent(ctx, name)
		if err := c.writeConditions(ctx, ns, p); err != nil {
			return err
		}
		if err := p.err(name); err != nil {
			return err
		}
		if p.remainingTotal() > 0 {
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

// pass is what one round of emptying a namespace found: what failed, and
// what is still there.
type pass struct {
	discoveryErr error
	parseErr     error
	deleteErrs   []string
	remaining    map[schema.GroupVersionResource]int
	finalizers   map[string]int
}

func (p *pass) remainingTotal() int {
	n := 0
	for _, v := range p.remaining {
		n += v
	}
	return n
}

// err is why the namespace may not be finalized yet even if it looks
// empty: a group that could not be discovered may still hold objects.
func (p *pass) err(ns string) error {
	var errs []error
	if p.discoveryErr != nil {
		errs = append(errs, fmt.Errorf("discover namespaced resources: %w", p.discoveryErr))
	}
	if p.parseErr != nil {
		errs = append(errs, fmt.Errorf("parse discovery: %w", p.parseErr))
	}
	if len(p.deleteErrs) > 0 {
		errs = append(errs, errors.New(strings.Join(p.deleteErrs, "; ")))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("empty namespace %s: %w", ns, errors.Join(errs...))
}

// deleteContent deletes every object in the namespace and counts what
// still exists (terminating objects included) and the finalizers holding it.
func (c *Controller) deleteContent(ctx context.Context, ns string) *pass {
	p := &pass{remaining: map[schema.GroupVersionResource]int{}, finalizers: map[string]int{}}
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil {
		p.discoveryErr = err
		if len(lists) == 0 {
			return p
		}
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists)
	gvrs, err := discovery.GroupVersionResources(lists)
	if err != nil {
		p.parseErr = err
	}
	background := metav1.DeletePropagationBackground
	for gvr := range gvrs {
		if strings.Contains(gvr.Resource, "/") {
			continue
		}
		if err := c.deleteAll(ctx, gvr, ns, background, p); err != nil {
			p.deleteErrs = append(p.deleteErrs, err.Error())
		}
	}
	sort.Strings(p.deleteErrs)
	return p
}

func (c *Controller) deleteAll(ctx context.Context, gvr schema.GroupVersionResource, ns string, policy metav1.DeletionPropagation, p *pass) error {
	ri := c.dynamic.Resource(gvr).Namespace(ns)
	list, err := ri.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", gvr.Resource, err)
	}
	deleted := 0
	var deleteErr error
	for _, item := range list.Items {
		if item.GetDeletionTimestamp() != nil {
			continue
		}
		uid := item.GetUID()
		err := ri.Delete(ctx, item.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			deleteErr = fmt.Errorf("delete %s %s: %w", gvr.Resource, item.GetName(), err)
			break
		}
		deleted++
	}
	// What was deleted without a grace period is gone already: count
	// what a fresh list still shows, as the namespace's conditions report it.
	if deleted > 0 && deleteErr == nil {
		if again, err := ri.List(ctx, metav1.ListOptions{}); err == nil {
			list = again
		}
	}
	p.remaining[gvr] += len(list.Items)
	for _, item := range list.Items {
		for _, f := range item.GetFinalizers() {
			p.finalizers[f]++
		}
	}
	return deleteErr
}

// The conditions upstream's namespace controller keeps on a terminating
// namespace, in its order, with its reasons and messages for the good case.
var conditionTypes = []struct {
	t           corev1.NamespaceConditionType
	okReason    string
	okMessage   string
	failReason  string
	failMessage func(p *pass) string
}{
	{corev1.NamespaceDeletionDiscoveryFailure, "ResourcesDiscovered", "All resources successfully discovered", "DiscoveryFailed",
		func(p *pass) string {
			if p.discoveryErr == nil {
				return ""
			}
			var gerr *discovery.ErrGroupDiscoveryFailed
			if errors.As(p.discoveryErr, &gerr) {
				return fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(gerr.Groups), p.discoveryErr)
			}
			return p.discoveryErr.Error()
		}},
	{corev1.NamespaceDeletionGVParsingFailure, "ParsedGroupVersions", "All legacy kube types successfully parsed", "GroupVersionParsingFailed",
		func(p *pass) string {
			if p.parseErr == nil {
				return ""
			}
			return p.parseErr.Error()
		}},
	{corev1.NamespaceDeletionContentFailure, "ContentDeleted", "All content successfully deleted, may be waiting on finalization", "ContentDeletionFailed",
		func(p *pass) string {
			if len(p.deleteErrs) == 0 {
				return ""
			}
			return fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(p.deleteErrs), strings.Join(p.deleteErrs, ", "))
		}},
	{corev1.NamespaceContentRemaining, "ContentRemoved", "All content successfully removed", "SomeResourcesRemain",
		func(p *pass) string {
			var parts []string
			for gvr, n := range p.remaining {
				if n > 0 {
					// Upstream's spelling: resource "." group, so core
					// kinds read "pods. has 2 resource instances".
					parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
				}
			}
			if len(parts) == 0 {
				return ""
			}
			sort.Strings(parts)
			return "Some resources are remaining: " + strings.Join(parts, ", ")
		}},
	{corev1.NamespaceFinalizersRemaining, "ContentHasNoFinalizers", "All content-preserving finalizers finished", "SomeFinalizersRemain",
		func(p *pass) string {
			var parts []string
			for f, n := range p.finalizers {
				parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
			}
			if len(parts) == 0 {
				return ""
			}
			sort.Strings(parts)
			return "Some content in the namespace has finalizers remaining: " + strings.Join(parts, ", ")
		}},
}

// writeConditions records on the namespace what the last pass found, so
// `kubectl describe namespace` says why it is still Terminating.
func (c *Controller) writeConditions(ctx context.Context, ns *corev1.Namespace, p *pass) error {
	next := ns.DeepCopy()
	now := metav1.NewTime(c.clock.Now())
	changed := false
	for _, ct := range conditionTypes {
		want := corev1.NamespaceCondition{Type: ct.t, Status: corev1.ConditionFalse, Reason: ct.okReason, Message: ct.okMessage, LastTransitionTime: now}
		if msg := ct.failMessage(p); msg != "" {
			want.Status, want.Reason, want.Message = corev1.ConditionTrue, ct.failReason, msg
		}
		cur := namespaceCondition(next, ct.t)
		switch {
		case cur == nil:
			next.Status.Conditions = append(next.Status.Conditions, want)
			changed = true
		case cur.Status != want.Status || cur.Reason != want.Reason || cur.Message != want.Message:
			if cur.Status == want.Status {
				want.LastTransitionTime = cur.LastTransitionTime
			}
			*cur = want
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if _, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update conditions of namespace %s: %w", ns.Name, err)
	}
	return nil
}

func namespaceCondition(ns *corev1.Namespace, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range ns.Status.Conditions {
		if ns.Status.Conditions[i].Type == t {
			return &ns.Status.Conditions[i]
		}
	}
	return nil
}
