// Package resourcequota enforces a namespace's ResourceQuotas on create.
//
// Usage is charged at admission: before a counted object is stored, every
// quota that limits one of its resources gets its status.used raised in a
// compare-and-swap update (GuaranteedUpdate on the quota's
// resourceVersion), so that concurrent creates each see the others' charges
// and never overshoot. Usage is released when the object stops counting: a
// pod that reaches Succeeded or Failed (an update), or any object at its
// first DELETE (when it is marked for deletion or removed). A quota whose
// status has no usage yet for a resource gets it counted from the stored
// objects at its first charge, so objects created before the quota count.
//
// Upstream leaves release and recounting to the quota controller; kube-lite
// has none, so a create refused after this plugin charged (a later failure
// in storage) leaves the charge in place until the quota's status.used is
// reset (an update of the quota status, or recreating the quota).
package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
)

// Quotas reads and updates a namespace's ResourceQuotas.
type Quotas interface {
	ListResourceQuotas(ctx context.Context, namespace string) ([]corev1.ResourceQuota, error)
	// UpdateResourceQuota calls update with the stored quota and writes the
	// result only if the quota did not change since it was read, calling
	// update again with the new state otherwise. An error from update
	// aborts without writing.
	UpdateResourceQuota(ctx context.Context, namespace, name string, update func(q *corev1.ResourceQuota) error) error
}

// Objects lists the stored objects of a resource in a namespace, to count
// usage a quota has not recorded yet.
type Objects interface {
	ListObjects(ctx context.Context, gr schema.GroupResource, namespace string) ([]runtime.Object, error)
}

// Plugin is the ResourceQuota admission plugin.
type Plugin struct {
	quotas  Quotas
	objects Objects
}

// New returns the plugin.
func New(quotas Quotas, objects Objects) *Plugin { return &Plugin{quotas: quotas, objects: objects} }

// Name implements admission.Validator.
func (p *Plugin) Name() string { return "ResourceQuota" }

var podsGR = schema.GroupResource{Resource: "pods"}

// legacyCounts are the core resources whose object count a quota may also
// name without the count/ prefix.
var legacyCounts = map[string]bool{
	"pods": true, "services": true, "configmaps": true, "secrets": true, "replicationcontrollers": true,
	"resourcequotas": true, "persistentvolumeclaims": true,
}

// computeKeys map the quota names of pod compute resources to the container
// resource and whether they count limits (rather than requests).
var computeKeys = map[corev1.ResourceName]struct {
	res   corev1.ResourceName
	limit bool
}{
	corev1.ResourceCPU:                      {corev1.ResourceCPU, false},
	corev1.ResourceRequestsCPU:              {corev1.ResourceCPU, false},
	corev1.ResourceLimitsCPU:                {corev1.ResourceCPU, true},
	corev1.ResourceMemory:                   {corev1.ResourceMemory, false},
	corev1.ResourceRequestsMemory:           {corev1.ResourceMemory, false},
	corev1.ResourceLimitsMemory:             {corev1.ResourceMemory, true},
	corev1.ResourceEphemeralStorage:         {corev1.ResourceEphemeralStorage, false},
	corev1.ResourceRequestsEphemeralStorage: {corev1.ResourceEphemeralStorage, false},
	corev1.ResourceLimitsEphemeralStorage:   {corev1.ResourceEphemeralStorage, true},
}

func countKey(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// keyResource returns the resource whose objects a quota key counts.
func keyResource(k corev1.ResourceName) (schema.GroupResource, bool) {
	if _, ok := computeKeys[k]; ok {
		return podsGR, true
	}
	if legacyCounts[string(k)] {
		return schema.GroupResource{Resource: string(k)}, true
	}
	rest, ok := strings.CutPrefix(string(k), "count/")
	if !ok {
		return schema.GroupResource{}, false
	}
	res, group, _ := strings.Cut(rest, ".")
	return schema.GroupResource{Group: group, Resource: res}, true
}

// counted reports whether obj uses quota: objects being deleted do not,
// nor pods that have finished.
func counted(gr schema.GroupResource, obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetDeletionTimestamp() != nil {
		return false
	}
	if pod, ok := obj.(*corev1.Pod); ok && gr == podsGR {
		return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
	}
	return true
}

// usage is what obj of resource gr uses, under every name a quota may use.
func usage(gr schema.GroupResource, obj runtime.Object) corev1.ResourceList {
	one := resource.MustParse("1")
	u := corev1.ResourceList{countKey(gr): one.DeepCopy()}
	if gr.Group == "" && legacyCounts[gr.Resource] {
		u[corev1.ResourceName(gr.Resource)] = one.DeepCopy()
	}
	if pod, ok := obj.(*corev1.Pod); ok && gr == podsGR {
		req, lim := podTotals(pod)
		for k, c := range computeKeys {
			src := req
			if c.limit {
				src = lim
			}
			// Absent amounts count as zero, so that a quota on them still
			// applies and refuses the pod for leaving them out.
			q := src[c.res]
			u[k] = q.DeepCopy()
		}
	}
	return u
}

func podTotals(pod *corev1.Pod) (req, lim corev1.ResourceList) {
	req, lim = corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for k, v := range c.Resources.Requests {
			q := req[k]
			q.Add(v)
			req[k] = q
		}
		for k, v := range c.Resources.Limits {
			q := lim[k]
			q.Add(v)
			lim[k] = q
		}
	}
	// Init containers run one at a time: each needs only its own amount.
	for _, c := range pod.Spec.InitContainers {
		for k, v := range c.Resources.Requests {
			if q, ok := req[k]; !ok || v.Cmp(q) > 0 {
				req[k] = v.DeepCopy()
			}
		}
		for k, v := range c.Resources.Limits {
			if q, ok := lim[k]; !ok || v.Cmp(q) > 0 {
				lim[k] = v.DeepCopy()
			}
		}
	}
	// Pod-level cpu and memory, when set, are what the pod is given, as
	// upstream counts them; container amounts only fill in the rest.
	if r := pod.Spec.Resources; r != nil {
		for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if v, ok := r.Requests[k]; ok {
				req[k] = v.DeepCopy()
			}
			if v, ok := r.Limits[k]; ok {
				lim[k] = v.DeepCopy()
			}
		}
	}
	return req, lim
}

// Validate implements admission.Validator.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Resource == nil || !a.Resource.Namespaced || a.Namespace == "" {
		return nil
	}
	gr := a.Resource.GroupVersionResource().GroupResource()
	switch {
	case a.Operation == admission.Create && a.Subresource == "" && a.Object != nil:
		if !counted(gr, a.Object) {
			return nil
		}
		return p.charge(ctx, a, gr)
	case a.DryRun:
		return nil
	case a.Operation == admission.Update && a.Object != nil && a.OldObject != nil:
		if counted(gr, a.OldObject) && !counted(gr, a.Object) {
			return p.release(ctx, a.Namespace, gr, usage(gr, a.OldObject))
		}
	case a.Operation == admission.Delete && a.Subresource == "" && a.OldObject != nil:
		if counted(gr, a.OldObject) {
			return p.release(ctx, a.Namespace, gr, usage(gr, a.OldObject))
		}
	}
	return nil
}

// relevant returns the part of u that q limits, and whether q applies to
// obj at all (its scopes).
func relevant(q *corev1.ResourceQuota, u corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range u {
		if _, ok := q.Spec.Hard[k]; ok {
			out[k] = v
		}
	}
	return out
}

// charge raises every applicable quota's usage by what a.Object uses,
// refusing (and undoing the charges made so far) when one would go over its
// hard limit.
func (p *Plugin) charge(ctx context.Context, a *admission.Attributes, gr schema.GroupResource) error {
	quotas, err := p.quotas.ListResourceQuotas(ctx, a.Namespace)
	if err != nil {
		return fmt.Errorf("error listing quotas in %s: %w", a.Namespace, err)
	}
	if len(quotas) == 0 {
		// Most namespaces have no quota: skip working out the usage.
		return nil
	}
	u := usage(gr, a.Object)
	sort.Slice(quotas, func(i, j int) bool { return quotas[i].Name < quotas[j].Name })
	var charged []string
	undo := func() {
		for _, name := range charged {
			_ = p.quotas.UpdateResourceQuota(ctx, a.Namespace, name, func(q *corev1.ResourceQuota) error {
				subtract(q, relevant(q, u))
				return nil
			})
		}
	}
	for i := range quotas {
		q := &quotas[i]
		if !scopesMatch(q, gr, a.Object) || len(relevant(q, u)) == 0 {
			continue
		}
		if err := missingCompute(q, gr, a.Object); err != nil {
			undo()
			return apierrors.NewForbidden(gr, a.Name, err)
		}
		update := p.quotas.UpdateResourceQuota
		if a.DryRun {
			// Check against the listed state and write nothing.
			update = func(_ context.Context, _, _ string, f func(*corev1.ResourceQuota) error) error {
				return f(q.DeepCopy())
			}
		}
		err := update(ctx, a.Namespace, q.Name, func(cur *corev1.ResourceQuota) error {
			want := relevant(cur, u)
			if err := p.initUsage(ctx, a.Namespace, cur); err != nil {
				return err
			}
			var exceeded []corev1.ResourceName
			for k, v := range want {
				next := cur.Status.Used[k].DeepCopy()
				next.Add(v)
				if next.Cmp(cur.Spec.Hard[k]) > 0 {
					exceeded = append(exceeded, k)
				}
			}
			if len(exceeded) > 0 {
				return &exceededError{quota: cur.Name, names: exceeded, requested: want, used: cur.Status.Used, hard: cur.Spec.Hard}
			}
			for k, v := range want {
				n := cur.Status.Used[k].DeepCopy()
				n.Add(v)
				cur.Status.Used[k] = n
			}
			return nil
		})
		var ex *exceededError
		if errors.As(err, &ex) {
			undo()
			return apierrors.NewForbidden(gr, a.Name, ex)
		}
		if apierrors.IsNotFound(err) {
			continue // deleted since we listed it: it limits nothing any more
		}
		if err != nil {
			undo()
			return fmt.Errorf("error charging quota %s: %w", q.Name, err)
		}
		if !a.DryRun {
			charged = append(charged, q.Name)
		}
	}
	return nil
}

// initUsage counts, from the stored objects, the usage of every hard
// resource q has not recorded yet, and copies hard into status.
func (p *Plugin) initUsage(ctx context.Context, ns string, q *corev1.ResourceQuota) error {
	if q.Status.Used == nil {
		q.Status.Used = corev1.ResourceList{}
	}
	q.Status.Hard = q.Spec.Hard.DeepCopy()
	lists := map[schema.GroupResource][]runtime.Object{}
	for k := range q.Spec.Hard {
		if _, ok := q.Status.Used[k]; ok {
			continue
		}
		gr, ok := keyResource(k)
		if !ok {
			q.Status.Used[k] = resource.MustParse("0")
			continue
		}
		objs, seen := lists[gr]
		if !seen {
			var err error
			if objs, err = p.objects.ListObjects(ctx, gr, ns); err != nil {
				return fmt.Errorf("error counting %s in %s: %w", gr, ns, err)
			}
			lists[gr] = objs
		}
		total := resource.MustParse("0")
		for _, o := range objs {
			if counted(gr, o) && scopesMatch(q, gr, o) {
				if v, ok := usage(gr, o)[k]; ok {
					total.Add(v)
				}
			}
		}
		q.Status.Used[k] = total
	}
	return nil
}

func subtract(q *corev1.ResourceQuota, u corev1.ResourceList) {
	for k, v := range u {
		cur, ok := q.Status.Used[k]
		if !ok {
			continue
		}
		cur.Sub(v)
		if cur.Sign() < 0 {
			cur = resource.MustParse("0")
		}
		q.Status.Used[k] = cur
	}
}

// release lowers the usage of the quotas that counted an object.
func (p *Plugin) release(ctx context.Context, ns string, gr schema.GroupResource, u corev1.ResourceList) error {
	quotas, err := p.quotas.ListResourceQuotas(ctx, ns)
	if err != nil {
		return fmt.Errorf("error listing quotas in %s: %w", ns, err)
	}
	for _, q := range quotas {
		if len(relevant(&q, u)) == 0 {
			continue
		}
		err := p.quotas.UpdateResourceQuota(ctx, ns, q.Name, func(cur *corev1.ResourceQuota) error {
			subtract(cur, relevant(cur, u))
			return nil
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("error releasing quota %s: %w", q.Name, err)
		}
	}
	return nil
}

// missingCompute refuses pods that leave out a compute resource q limits,
// as upstream: such a pod's usage could not be accounted for. The message
// names, per resource, the containers (init ones too) that leave it out, so
// that a user knows which to fix. Pod-level resources make container ones
// optional, as upstream.
func missingCompute(q *corev1.ResourceQuota, gr schema.GroupResource, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok || gr != podsGR || podLevelResources(pod) {
		return nil
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(q.Spec.Hard)) {
		c, ok := computeKeys[k]
		if !ok || c.res == corev1.ResourceEphemeralStorage {
			continue
		}
		var names []string
		for _, ctrs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for _, ctr := range ctrs {
				src := ctr.Resources.Requests
				if c.limit {
					src = ctr.Resources.Limits
				}
				if _, ok := src[c.res]; !ok {
					names = append(names, ctr.Name)
				}
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			parts = append(parts, fmt.Sprintf("%s for: %s", k, strings.Join(slices.Compact(names), ",")))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("failed quota: %s: must specify %s", q.Name, strings.Join(parts, "; "))
}

// podLevelResources reports whether the pod sets pod-wide cpu or memory
// requests or limits.
func podLevelResources(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
		for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := l[k]; ok {
				return true
			}
		}
	}
	return false
}

// scopesMatch applies the quota's simple scopes to pods; other resources
// are only limited by unscoped quotas, as upstream.
func scopesMatch(q *corev1.ResourceQuota, gr schema.GroupResource, obj runtime.Object) bool {
	if len(q.Spec.Scopes) == 0 {
		return true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || gr != podsGR {
		return false
	}
	for _, s := range q.Spec.Scopes {
		terminating := pod.Spec.ActiveDeadlineSeconds != nil
		bestEffort := isBestEffort(pod)
		switch s {
		case corev1.ResourceQuotaScopeTerminating:
			if !terminating {
				return false
			}
		case corev1.ResourceQuotaScopeNotTerminating:
			if terminating {
				return false
			}
		case corev1.ResourceQuotaScopeBestEffort:
			if !bestEffort {
				return false
			}
		case corev1.ResourceQuotaScopeNotBestEffort:
			if bestEffort {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func isBestEffort(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
				return false
			}
		}
	}
	return true
}

// exceededError is upstream's "exceeded quota" message.
type exceededError struct {
	quota                 string
	names                 []corev1.ResourceName
	requested, used, hard corev1.ResourceList
}

func (e *exceededError) Error() string {
	sort.Slice(e.names, func(i, j int) bool { return e.names[i] < e.names[j] })
	pp := func(l corev1.ResourceList) string {
		parts := make([]string, 0, len(e.names))
		for _, k := range e.names {
			v := l[k]
			parts = append(parts, fmt.Sprintf("%s=%s", k, v.String()))
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s", e.quota, pp(e.requested), pp(e.used), pp(e.hard))
}
