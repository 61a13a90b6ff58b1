// Package garbagecollector deletes objects whose owners are gone, and carries
// out foreground and orphan deletion, following metadata.ownerReferences
// across every resource the apiserver serves.
package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Name is the controller's name in --controllers and in its queue metrics.
const Name = "garbagecollector"

// ignored resources churn a lot and are never owners worth tracking.
func ignored(gr schema.GroupResource) bool {
	return gr.Resource == "events" && (gr.Group == "" || gr.Group == "events.k8s.io")
}

// Mapper resolves an owner reference's kind to its resource.
type Mapper interface {
	RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error)
}

// Controller is the garbage collector.
type Controller struct {
	client    dynamic.Interface
	discovery discovery.DiscoveryInterface
	mapper    Mapper
	resetMap  func()
	graph     *graph
	queue     controllerutil.Queue

	mu       sync.Mutex
	watching map[schema.GroupVersionResource]cache.SharedIndexInformer
	factory  dynamicinformer.DynamicSharedInformerFactory

	// rediscover is how often new resource types are looked for.
	rediscover time.Duration

	// Events records the references that cannot resolve; set it before Run.
	Events controllerutil.Recorder
}

// New builds a collector; resetMapper (may be nil) drops the mapper's cache
// when an owner's kind is unknown, in case the type was added since.
func New(client dynamic.Interface, disc discovery.DiscoveryInterface, mapper Mapper, resetMapper func(), mp workqueue.MetricsProvider) *Controller {
	if resetMapper == nil {
		resetMapper = func() {}
	}
	return &Controller{
		client:     client,
		discovery:  disc,
		mapper:     mapper,
		resetMap:   resetMapper,
		graph:      newGraph(),
		queue:      controllerutil.NewQueue(Name, mp),
		watching:   map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		factory:    dynamicinformer.NewDynamicSharedInformerFactory(client, 0),
		rediscover: 30 * time.Second,
		Events:     controllerutil.NopRecorder{},
	}
}

// Run watches every deletable resource and collects garbage until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	defer c.factory.Shutdown()
	for {
		if err := c.syncResources(ctx); err == nil {
			break
		} else {
			slog.Warn("garbage collector: discovery failed, retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
	if !controllerutil.WaitForSync(ctx, Name, c.allSynced) {
		return
	}
	go func() {
		t := time.NewTicker(c.rediscover)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := c.syncResources(ctx); err != nil {
					slog.Debug("garbage collector: discovery", "err", err)
				}
			}
		}
	}()
	controllerutil.RunWorkers(ctx, Name, c.queue, workers, c.sync)
}

func (c *Controller) allSynced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, inf := range c.watching {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// syncResources starts an informer for every deletable, watchable resource
// not watched yet.
func (c *Controller) syncResources(ctx context.Context) error {
	lists, err := c.discovery.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return fmt.Errorf("discover resources: %w", err)
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "watch", "delete", "patch"}}, lists)
	gvrs, perr := discovery.GroupVersionResources(lists)
	if perr != nil {
		return fmt.Errorf("parse discovery: %w", perr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	started := false
	for gvr := range gvrs {
		if strings.Contains(gvr.Resource, "/") || ignored(gvr.GroupResource()) {
			continue
		}
		if _, ok := c.watching[gvr]; ok {
			continue
		}
		inf := c.factory.ForResource(gvr).Informer()
		// Keep only metadata in the cache: the collector never reads more,
		// and whole objects of every type would cost the most memory here.
		_ = inf.SetTransform(stripToMetadata)
		_, _ = inf.AddEventHandler(c.handler(gvr))
		c.watching[gvr] = inf
		started = true
	}
	if started {
		c.factory.Start(ctx.Done())
	}
	return err
}

func stripToMetadata(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	m, _ := u.Object["metadata"].(map[string]any)
	kept := make(map[string]any, len(m))
	for k, v := range m {
		switch k {
		case "managedFields", "annotations", "labels":
			// The largest parts of metadata, and never read here.
		default:
			kept[k] = v
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": kept,
	}}, nil
}

func (c *Controller) handler(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	toNode := func(obj any) *node {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		var kind string
		if o, ok := obj.(runtime.Object); ok {
			kind = o.GetObjectKind().GroupVersionKind().Kind
		}
		return &node{uid: m.GetUID(), gvr: gvr, kind: kind, namespace: m.GetNamespace(), name: m.GetName(), rv: m.GetResourceVersion(),
			owners: m.GetOwnerReferences(), finalizers: m.GetFinalizers(), deleting: m.GetDeletionTimestamp() != nil}
	}
	upsert := func(obj any) {
		n := toNode(obj)
		if n == nil {
			return
		}
		old := c.graph.upsert(n)
		c.reportForeignOwners(n, old)
		c.wake(n, old)
		// Dependents may have been waiting for this owner to appear (they
		// were enqueued before its informer synced) or to start deleting.
		if n.deleting || old == nil {
			for _, d := range c.graph.dependentsOf(n.uid) {
				c.queue.Add(string(d.uid))
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, obj any) { upsert(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			m, err := meta.Accessor(obj)
			if err != nil {
				return
			}
			old := c.graph.remove(m.GetUID())
			for _, d := range c.graph.dependentsOf(m.GetUID()) {
				c.queue.Add(string(d.uid))
			}
			if old != nil {
				c.wakeOwners(old)
			}
		},
	}
}

// reportForeignOwners warns, as upstream, on a dependent that names by UID
// a namespaced owner of another namespace (or, being cluster-scoped, of any
// namespace): ownership cannot cross namespaces, so the reference resolves
// to nothing in the dependent's own namespace and the collector treats the
// owner as gone, which the user would otherwise not learn why. It is
// recorded once both ends are known: when the dependent gains such a
// reference to an owner already seen, or when such an owner first appears.
func (c *Controller) reportForeignOwners(n, old *node) {
	for _, r := range n.owners {
		if old != nil && slices.ContainsFunc(old.owners, func(o metav1.OwnerReference) bool { return o.UID == r.UID }) {
			continue
		}
		if o := c.graph.get(r.UID); o != nil && o.namespace != "" && o.namespace != n.namespace {
			// Upstream reports a dependent's first such owner only.
			c.reportForeignOwner(n, r)
			break
		}
	}
	if old != nil || n.namespace == "" {
		return
	}
	for _, d := range c.graph.dependentsOf(n.uid) {
		if d.namespace == n.namespace {
			continue
		}
		for _, r := range d.owners {
			if r.UID == n.uid {
				c.reportForeignOwner(d, r)
				break
			}
		}
	}
}

func (c *Controller) reportForeignOwner(dep *node, r metav1.OwnerReference) {
	slog.Info("garbage collector: an object names an owner of another namespace", "resource", dep.gvr.Resource,
		"object", dep.namespace+"/"+dep.name, "owner", r.Kind+"/"+r.Name)
	ref := &corev1.ObjectReference{Kind: dep.kind, APIVersion: dep.gvr.GroupVersion().String(), Namespace: dep.namespace, Name: dep.name, UID: dep.uid}
	c.Events.Eventf(ref, corev1.EventTypeWarning, "OwnerRefInvalidNamespace", "ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q",
		r.APIVersion, r.Kind, dep.namespace, r.Name, r.UID, dep.namespace)
}

// wake enqueues what a change to n may unblock: n itself if it has owners
// or is being deleted with our finalizers, and its owners if they wait.
func (c *Controller) wake(n, old *node) {
	if len(n.owners) > 0 || (n.deleting && (n.hasFinalizer(metav1.FinalizerDeleteDependents) || n.hasFinalizer(metav1.FinalizerOrphanDependents))) {
		c.queue.Add(string(n.uid))
	}
	if old != nil {
		c.wakeOwners(old)
	}
	c.wakeOwners(n)
}

func (c *Controller) wakeOwners(n *node) {
	for _, r := range n.owners {
		if o := c.graph.get(r.UID); o != nil && o.deleting {
			c.queue.Add(string(o.uid))
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	n := c.graph.get(types.UID(key))
	if n == nil {
		return nil
	}
	if n.deleting {
		switch {
		case n.hasFinalizer(metav1.FinalizerOrphanDependents):
			return c.orphanDependents(ctx, n)
		case n.hasFinalizer(metav1.FinalizerDeleteDependents):
			return c.deleteDependents(ctx, n)
		}
		return nil
	}
	if len(n.owners) == 0 {
		return nil
	}
	return c.attemptToDelete(ctx, n)
}

type ownerState int

const (
	ownerPresent ownerState = iota
	ownerAbsent
	ownerWaiting // being deleted in the foreground
	// ownerInvalid: a cluster-scoped object names a namespaced owner. As
	// upstream, such an object is left alone: the reference can never
	// resolve, and whether the owner exists cannot be known.
	ownerInvalid
)

// ownerState looks an owner up in the graph and, when it is not there,
// asks the apiserver: an informer that has not caught up must never get a
// live owner's dependents deleted.
func (c *Controller) ownerState(ctx context.Context, dep *node, ref metav1.OwnerReference) (ownerState, error) {
	if o := c.graph.get(ref.UID); o != nil && o.isReferencedBy(ref, dep.namespace) {
		if deletingDependents(o) {
			return ownerWaiting, nil
		}
		return ownerPresent, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ownerAbsent, nil // an unparseable owner can never exist
	}
	mapping, err := c.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		c.resetMap()
		if meta.IsNoMatchError(err) {
			// Unknown kind: treat as present, as upstream does, and look
			// again later when discovery may know it.
			return ownerPresent, fmt.Errorf("owner kind %s/%s unknown: %w", ref.APIVersion, ref.Kind, err)
		}
		return ownerPresent, err
	}
	var ri dynamic.ResourceInterface = c.client.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if dep.namespace == "" {
			return ownerInvalid, nil
		}
		ri = c.client.Resource(mapping.Resource).Namespace(dep.namespace)
	}
	obj, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ownerAbsent, nil
	case err != nil:
		return ownerPresent, err
	case obj.GetUID() != ref.UID:
		return ownerAbsent, nil
	case obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents):
		return ownerWaiting, nil
	}
	return ownerPresent, nil
}

func (c *Controller) attemptToDelete(ctx context.Context, n *node) error {
	var present, dangling, waiting []types.UID
	for _, r := range n.owners {
		st, err := c.ownerState(ctx, n, r)
		if err != nil {
			return err
		}
		switch st {
		case ownerInvalid:
			slog.Info("garbage collector: a cluster-scoped object names a namespaced owner; leaving it",
				"resource", n.gvr.Resource, "object", n.name, "owner", r.Kind+"/"+r.Name)
			return nil
		case ownerPresent:
			present = append(present, r.UID)
		case ownerAbsent:
			dangling = append(dangling, r.UID)
		case ownerWaiting:
			waiting = append(waiting, r.UID)
		}
	}
	if len(present) > 0 {
		// A live owner keeps the object: forget the owners that are gone,
		// and those waiting for it to be deleted, as upstream does, so that
		// they need not wait for it.
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		return c.removeOwners(ctx, n, append(dangling, waiting...))
	}
	if len(dangling)+len(waiting) == 0 {
		return nil
	}
	policy := metav1.DeletePropagationBackground
	switch deps := c.graph.dependentsOf(n.uid); {
	case len(waiting) > 0 && len(deps) > 0:
		// The owner waits for the whole subtree: delete this level in the
		// foreground too so the wait reaches the leaves.
		policy = metav1.DeletePropagationForeground
		if slices.ContainsFunc(deps, deletingDependents) {
			// A dependent already waits for its own dependents: it may be
			// the owner waiting for this object, or wait on it through a
			// longer cycle. As upstream (false positives included), this
			// object stops blocking its owners, so that each of them can go
			// while it waits for its own dependents.
			if err := c.unblockOwners(ctx, n); err != nil {
				return err
			}
		}
	case n.hasFinalizer(metav1.FinalizerOrphanDependents):
		// As upstream, a finalizer the object already carries says how
		// its own dependents go; an explicit Background would drop it.
		policy = metav1.DeletePropagationOrphan
	case n.hasFinalizer(metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	}
	slog.Info("garbage collector: deleting", "resource", n.gvr.Resource, "object", n.namespace+"/"+n.name, "propagation", policy)
	err := c.resource(n).Delete(ctx, n.name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &n.uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or replaced by a new object of the same name
	}
	return err
}

// deletingDependents says whether n is being deleted in the foreground.
func deletingDependents(n *node) bool {
	return n.deleting && n.hasFinalizer(metav1.FinalizerDeleteDependents)
}

func (c *Controller) resource(n *node) dynamic.ResourceInterface {
	if n.namespace == "" {
		return c.client.Resource(n.gvr)
	}
	return c.client.Resource(n.gvr).Namespace(n.namespace)
}

// deleteDependents carries out foreground deletion: dependents go first
// and the owner's finalizer comes off once none blocks it any more.
func (c *Controller) deleteDependents(ctx context.Context, owner *node) error {
	blocking := 0
	for _, d := range c.graph.dependentsOf(owner.uid) {
		for _, r := range d.owners {
			if r.UID == owner.uid && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
				blocking++
			}
		}
		if !d.deleting {
			c.queue.Add(string(d.uid))
		}
	}
	if blocking > 0 {
		return nil // their deletion events bring the owner back
	}
	return c.removeFinalizer(ctx, owner, metav1.FinalizerDeleteDependents)
}

// orphanDependents strips the owner from its dependents, then lets the
// owner go.
func (c *Controller) orphanDependents(ctx context.Context, owner *node) error {
	var errs []error
	for _, d := range c.graph.dependentsOf(owner.uid) {
		if err := c.removeOwners(ctx, d, []types.UID{owner.uid}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("orphan dependents of %s/%s: %v", owner.namespace, owner.name, errs)
	}
	return c.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents)
}

type metaPatch struct {
	Metadata metaFields `json:"metadata"`
}

type metaFields struct {
	ResourceVersion string                   `json:"resourceVersion"`
	OwnerReferences *[]metav1.OwnerReference `json:"ownerReferences,omitempty"`
	Finalizers      *[]string                `json:"finalizers,omitempty"`
}

// removeOwners, unblockOwners and removeFinalizer send merge patches that
// replace the list and carry the resourceVersion it was computed from, so a
// concurrent change conflicts and is retried from the fresh state.
func (c *Controller) removeOwners(ctx context.Context, n *node, uids []types.UID) error {
	refs := slices.DeleteFunc(slices.Clone(n.owners), func(r metav1.OwnerReference) bool { return slices.Contains(uids, r.UID) })
	if len(refs) == len(n.owners) {
		return nil
	}
	return c.patchOwners(ctx, n, refs)
}

// unblockOwners stops every reference of n from blocking its owner's
// deletion.
func (c *Controller) unblockOwners(ctx context.Context, n *node) error {
	refs := slices.Clone(n.owners)
	changed := false
	for i, r := range refs {
		if ptr.Deref(r.BlockOwnerDeletion, false) {
			refs[i].BlockOwnerDeletion = ptr.To(false)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return c.patchOwners(ctx, n, refs)
}

func (c *Controller) patchOwners(ctx context.Context, n *node, refs []metav1.OwnerReference) error {
	return c.patch(ctx, n, metaPatch{Metadata: metaFields{ResourceVersion: n.rv, OwnerReferences: &refs}})
}

func (c *Controller) removeFinalizer(ctx context.Context, n *node, f string) error {
	fins := []string{}
	for _, x := range n.finalizers {
		if x != f {
			fins = append(fins, x)
		}
	}
	slog.Info("garbage collector: removing finalizer", "resource", n.gvr.Resource, "object", n.namespace+"/"+n.name, "finalizer", f)
	return c.patch(ctx, n, metaPatch{Metadata: metaFields{ResourceVersion: n.rv, Finalizers: &fins}})
}

func (c *Controller) patch(ctx context.Context, n *node, p metaPatch) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	_, err = c.resource(n).Patch(ctx, n.name, types.MergePatchType, b, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patch %s %s/%s: %w", n.gvr.Resource, n.namespace, n.name, err)
	}
	return nil
}
