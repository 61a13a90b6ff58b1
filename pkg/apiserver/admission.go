package apiserver

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/defaulttolerationseconds"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/limitranger"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/namespacelifecycle"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/noderestriction"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/podsecurity"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/podtopologylabels"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/priority"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/resourcequota"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/serviceaccount"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/webhook"
	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// defaultAdmission is the built-in plugin chain, in upstream's order.
func (s *Server) defaultAdmission(ctx context.Context) (*admission.Chain, error) {
	caches := s.startAdmissionCaches(ctx)
	objs := storeReader{s: s, caches: caches}
	clk := s.clock
	accounts := serviceAccountStore{storeReader: objs, clock: clk}
	limits := limitranger.New(objs)
	sa := serviceaccount.New(accounts, serviceaccount.WithTokenIssuing(func() bool { return s.security != nil && s.security.signer != nil }))
	namespaces := namespaceGetter{s: s, cache: caches[namespacesGR]}
	priorities := priority.New(objs)
	mutatingConfigs := webhook.NewCache[*admissionregistrationv1.MutatingWebhookConfiguration](
		s.watchAll(schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingwebhookconfigurations"}), clk)
	validatingConfigs := webhook.NewCache[*admissionregistrationv1.ValidatingWebhookConfiguration](
		s.watchAll(schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingwebhookconfigurations"}), clk)
	// The caches live as long as the server's context.
	go mutatingConfigs.Run(ctx)
	go validatingConfigs.Run(ctx)
	return &admission.Chain{
		Mutators: []admission.Mutator{
			sa,
			limits,
			priorities,
			defaulttolerationseconds.New(),
			podtopologylabels.New(nodeGetter{s: s, cache: caches[nodesGR]}),
			webhook.NewMutating(mutatingConfigs, namespaces),
		},
		Validators: []admission.Validator{
			namespacelifecycle.New(namespaces),
			limits,
			sa,
			// Skips requests without a user: servers without security.
			noderestriction.New(nodeGetter{s: s, cache: caches[nodesGR]}, podReader{s: s}),
			podsecurity.New(namespaces, podsecurity.WithPods(objs), podsecurity.WithConfig(s.podSecurity)),
			priorities,
			webhook.NewValidating(validatingConfigs, namespaces),
			// Last: it charges usage, which a later refusal would leave behind
			// (upstream runs it after the webhooks too).
			resourcequota.New(objs, objs),
		},
	}, nil
}

// storeFor finds a resource's store. It reads s.stores rather than the REST
// handler because the chain is built before the handler exists.
func (s *Server) storeFor(gr schema.GroupResource) (*handler.Store, bool) {
	for _, st := range s.stores {
		if st.GroupVersion.Group == gr.Group && st.Name == gr.Resource {
			return st, true
		}
	}
	return nil, false
}

// watchAll watches every object of gr from the current state, ending the
// initial events with a bookmark, for the webhook configuration caches.
func (s *Server) watchAll(gr schema.GroupResource) webhook.WatchFunc {
	return func(ctx context.Context) (watch.Interface, error) {
		st, ok := s.storeFor(gr)
		if !ok {
			// Not served: an empty, synced and silent watch.
			w := watch.NewFakeWithChanSize(1, false)
			w.Action(watch.Bookmark, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
			return w, nil
		}
		return st.Storage.Watch(ctx, st.Prefix, storage.ListOptions{Recursive: true, AllowWatchBookmarks: true, InitialEventsEndBookmark: true})
	}
}

var (
	namespacesGR = schema.GroupResource{Resource: "namespaces"}
	nodesGR      = schema.GroupResource{Resource: "nodes"}
)

// startAdmissionCaches mirrors what admission reads on every create.
func (s *Server) startAdmissionCaches(ctx context.Context) map[schema.GroupResource]*objectCache {
	caches := map[schema.GroupResource]*objectCache{}
	for _, gr := range []schema.GroupResource{namespacesGR, nodesGR, serviceAccountGR, limitRangesGR, quotaGR, priorityClassesGR} {
		if st, ok := s.storeFor(gr); ok {
			c := newObjectCache(st)
			caches[gr] = c
			go c.run(ctx)
		}
	}
	return caches
}

// namespaceGetter reads namespaces for admission plugins: from the cache,
// and from storage when the cache has not seen the namespace (yet). A
// namespace from the cache is shared, not copied (every namespaced create
// reads one): the plugins only read it.
type namespaceGetter struct {
	s     *Server
	cache *objectCache
}

func (g namespaceGetter) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns, served, err := peekOrGet[corev1.Namespace](ctx, g.s, g.cache, namespacesGR, "", name)
	if !served {
		return &corev1.Namespace{}, nil
	}
	return ns, err
}

// nodeGetter reads nodes for PodTopologyLabels, which looks one up on every
// binding, and for NodeRestriction: from the cache, shared and not copied
// (the plugins only read it), and from storage for a node the cache has not
// seen yet.
type nodeGetter struct {
	s     *Server
	cache *objectCache
}

func (g nodeGetter) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	n, served, err := peekOrGet[corev1.Node](ctx, g.s, g.cache, nodesGR, "", name)
	if !served {
		return nil, handler.StorageError(storage.ErrKeyNotFound, nodesGR, name)
	}
	return n, err
}

// peekOrGet reads gr's object namespace/name from its admission cache c
// (shared, not copied: the caller only reads it) or, when c is nil or has
// not seen it, from storage. served is false when gr is not served.
func peekOrGet[T any, P interface {
	*T
	runtime.Object
}](ctx context.Context, s *Server, c *objectCache, gr schema.GroupResource, namespace, name string) (obj P, served bool, err error) {
	if c != nil {
		if cached, ok := c.peek(namespace, name); ok {
			return cached.(P), true, nil
		}
	}
	st, ok := s.storeFor(gr)
	if !ok {
		return nil, false, nil
	}
	obj = new(T)
	if err := st.Storage.Get(ctx, st.Key(namespace, name), obj); err != nil {
		return nil, true, handler.StorageError(err, gr, name)
	}
	return obj, true, nil
}

// storeReader adapts the server's stores to the plugins' reader interfaces.
type storeReader struct {
	s      *Server
	caches map[schema.GroupResource]*objectCache
}

// cached lists gr's objects in namespace from its cache, if it has a synced one.
func (r storeReader) cached(gr schema.GroupResource, namespace string) ([]runtime.Object, bool) {
	c, ok := r.caches[gr]
	if !ok {
		return nil, false
	}
	return c.list(namespace)
}

// cachedItems is cached as the items of a typed list (T's list's Items).
func cachedItems[T any, P interface {
	*T
	runtime.Object
}](r storeReader, gr schema.GroupResource, namespace string) ([]T, bool) {
	objs, ok := r.cached(gr, namespace)
	if !ok {
		return nil, false
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o.(P))
	}
	return out, true
}

// list reads every object of gr in namespace (all namespaces when empty).
func (r storeReader) list(ctx context.Context, gr schema.GroupResource, namespace string) (runtime.Object, bool, error) {
	st, ok := r.s.storeFor(gr)
	if !ok {
		return nil, false, nil
	}
	prefix := st.Prefix
	if st.Namespaced && namespace != "" {
		prefix += namespace + "/"
	}
	out := st.NewList()
	if err := st.Storage.List(ctx, prefix, storage.ListOptions{}, out); err != nil {
		return nil, true, handler.StorageError(err, gr, "")
	}
	return out, true, nil
}

// ListObjects implements resourcequota.Objects.
func (r storeReader) ListObjects(ctx context.Context, gr schema.GroupResource, namespace string) ([]runtime.Object, error) {
	list, ok, err := r.list(ctx, gr, namespace)
	if err != nil || !ok {
		return nil, err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("extract %s: %w", gr, err)
	}
	return objs, nil
}

// ListLimitRanges implements limitranger.Lister.
func (r storeReader) ListLimitRanges(ctx context.Context, namespace string) ([]corev1.LimitRange, error) {
	if items, ok := cachedItems[corev1.LimitRange](r, limitRangesGR, namespace); ok {
		return items, nil
	}
	list, ok, err := r.list(ctx, limitRangesGR, namespace)
	if err != nil || !ok {
		return nil, err
	}
	return list.(*corev1.LimitRangeList).Items, nil
}

var (
	quotaGR       = schema.GroupResource{Resource: "resourcequotas"}
	limitRangesGR = schema.GroupResource{Resource: "limitranges"}
)

// ListResourceQuotas implements resourcequota.Quotas.
//
// The cache decides which quotas apply; charging re-reads each quota inside
// a compare-and-swap, so usage never comes from the cache.
func (r storeReader) ListResourceQuotas(ctx context.Context, namespace string) ([]corev1.ResourceQuota, error) {
	if items, ok := cachedItems[corev1.ResourceQuota](r, quotaGR, namespace); ok {
		return items, nil
	}
	list, ok, err := r.list(ctx, quotaGR, namespace)
	if err != nil || !ok {
		return nil, err
	}
	return list.(*corev1.ResourceQuotaList).Items, nil
}

// UpdateResourceQuota implements resourcequota.Quotas with the storage's
// compare-and-swap on the quota's resourceVersion.
func (r storeReader) UpdateResourceQuota(ctx context.Context, namespace, name string, update func(*corev1.ResourceQuota) error) error {
	st, ok := r.s.storeFor(quotaGR)
	if !ok {
		return fmt.Errorf("resourcequotas are not served")
	}
	// The plugin's own refusal must reach it as it was made, not as a
	// storage failure.
	var refused error
	err := st.Storage.GuaranteedUpdate(ctx, st.Key(namespace, name), &corev1.ResourceQuota{}, false, nil,
		func(cur runtime.Object) (runtime.Object, error) {
			q := cur.(*corev1.ResourceQuota).DeepCopy()
			if refused = update(q); refused != nil {
				return nil, refused
			}
			return q, nil
		})
	if refused != nil {
		return refused
	}
	if err != nil {
		return handler.StorageError(err, quotaGR, name)
	}
	return nil
}

var serviceAccountGR = schema.GroupResource{Resource: "serviceaccounts"}

// serviceAccountStore implements serviceaccount.Accounts.
type serviceAccountStore struct {
	storeReader
	clock clock.PassiveClock
}

func (a serviceAccountStore) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if c, ok := a.caches[serviceAccountGR]; ok {
		if obj, ok := c.get(namespace, name); ok {
			return obj.(*corev1.ServiceAccount), nil
		}
	}
	st, ok := a.s.storeFor(serviceAccountGR)
	if !ok {
		return nil, fmt.Errorf("serviceaccounts are not served")
	}
	sa := &corev1.ServiceAccount{}
	if err := st.Storage.Get(ctx, st.Key(namespace, name), sa); err != nil {
		return nil, handler.StorageError(err, serviceAccountGR, name)
	}
	return sa, nil
}

func (a serviceAccountStore) CreateServiceAccount(ctx context.Context, sa *corev1.ServiceAccount) error {
	st, ok := a.s.storeFor(serviceAccountGR)
	if !ok {
		return fmt.Errorf("serviceaccounts are not served")
	}
	sa = sa.DeepCopy()
	sa.UID = uuid.NewUUID()
	sa.CreationTimestamp = metav1.NewTime(a.clock.Now())
	st.Strategy.Default(sa)
	st.Strategy.PrepareForCreate(ctx, sa)
	if err := st.Storage.Create(ctx, st.Key(sa.Namespace, sa.Name), sa, &corev1.ServiceAccount{}); err != nil {
		return handler.StorageError(err, serviceAccountGR, sa.Name)
	}
	return nil
}

var priorityClassesGR = schema.GroupResource{Group: schedulingv1.GroupName, Resource: "priorityclasses"}

// GetPriorityClass implements priority.Classes: from the cache, and from
// storage on a miss, so that a class created a moment ago is found.
func (r storeReader) GetPriorityClass(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	pc, served, err := peekOrGet[schedulingv1.PriorityClass](ctx, r.s, r.caches[priorityClassesGR], priorityClassesGR, "", name)
	if !served {
		return nil, handler.StorageError(storage.ErrKeyNotFound, priorityClassesGR, name)
	}
	return pc, err
}

// ListPriorityClasses implements priority.Classes. Every pod created
// without a class reads them all (for the global default), so the cached
// classes are shared, not deep-copied: the plugin only reads them.
func (r storeReader) ListPriorityClasses(ctx context.Context) ([]schedulingv1.PriorityClass, error) {
	if c, ok := r.caches[priorityClassesGR]; ok {
		if objs, ok := c.peekList(""); ok {
			items := make([]schedulingv1.PriorityClass, 0, len(objs))
			for _, o := range objs {
				items = append(items, *o.(*schedulingv1.PriorityClass))
			}
			return items, nil
		}
	}
	list, ok, err := r.list(ctx, priorityClassesGR, "")
	if err != nil || !ok {
		return nil, err
	}
	return list.(*schedulingv1.PriorityClassList).Items, nil
}
