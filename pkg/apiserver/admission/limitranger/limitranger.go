// Package limitranger applies a namespace's LimitRanges to new pods: default
// requests and limits for containers that set none (Mutator), then the
// min, max and limit/request ratio bounds per container and per pod
// (Validator), as upstream's LimitRanger does.
package limitranger

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/limitrange"
)

// AnnotationKey records on the pod which defaults were applied, as upstream.
const AnnotationKey = "kubernetes.io/limit-ranger"

// Lister returns the LimitRanges of a namespace.
type Lister interface {
	ListLimitRanges(ctx context.Context, namespace string) ([]corev1.LimitRange, error)
}

// Plugin is the LimitRanger admission plugin.
type Plugin struct{ ranges Lister }

// New returns the plugin reading LimitRanges through ranges.
func New(ranges Lister) *Plugin { return &Plugin{ranges: ranges} }

// Name implements admission.Mutator and admission.Validator.
func (p *Plugin) Name() string { return "LimitRanger" }

func podOf(a *admission.Attributes) (*corev1.Pod, bool) {
	if a.Resource == nil || a.Resource.GroupVersion.Group != "" || a.Resource.Name != "pods" || a.Subresource != "" {
		return nil, false
	}
	pod, ok := a.Object.(*corev1.Pod)
	return pod, ok
}

// items returns the namespace's items of type t, defaulted as the API
// defaults LimitRange objects (default from max, defaultRequest from
// default then min), so stored objects written without defaulting behave
// like upstream's.
func (p *Plugin) items(ctx context.Context, ns string, t corev1.LimitType) ([]corev1.LimitRangeItem, error) {
	ranges, err := p.ranges.ListLimitRanges(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("error listing LimitRanges in %s: %w", ns, err)
	}
	var out []corev1.LimitRangeItem
	for _, lr := range ranges {
		for _, it := range lr.Spec.Limits {
			if it.Type != t {
				continue
			}
			it = *it.DeepCopy()
			limitrange.DefaultItem(&it)
			out = append(out, it)
		}
	}
	return out, nil
}

// Admit implements admission.Mutator: containers get the defaults they lack.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	pod, ok := podOf(a)
	if !ok || a.Operation != admission.Create {
		return nil
	}
	items, err := p.items(ctx, a.Namespace, corev1.LimitTypeContainer)
	if err != nil || len(items) == 0 {
		return err
	}
	var notes []string
	apply := func(cs []corev1.Container) {
		for i := range cs {
			c := &cs[i]
			var req, lim []string
			for _, it := range items {
				req = append(req, setMissing(&c.Resources.Requests, it.DefaultRequest)...)
				lim = append(lim, setMissing(&c.Resources.Limits, it.Default)...)
			}
			if len(req) > 0 {
				notes = append(notes, fmt.Sprintf("%s request for container %s", strings.Join(req, ", "), c.Name))
			}
			if len(lim) > 0 {
				notes = append(notes, fmt.Sprintf("%s limit for container %s", strings.Join(lim, ", "), c.Name))
			}
		}
	}
	apply(pod.Spec.InitContainers)
	apply(pod.Spec.Containers)
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[AnnotationKey] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
	return nil
}

// setMissing copies into *dst the values of defaults it lacks and names them.
func setMissing(dst *corev1.ResourceList, defaults corev1.ResourceList) []string {
	var set []string
	for _, k := range slices.Sorted(maps.Keys(defaults)) {
		if _, ok := (*dst)[k]; ok {
			continue
		}
		if *dst == nil {
			*dst = corev1.ResourceList{}
		}
		(*dst)[k] = defaults[k].DeepCopy()
		set = append(set, string(k))
	}
	return set
}

// Validate implements admission.Validator: every container and the pod as
// a whole must stay within the namespace's bounds.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	pod, ok := podOf(a)
	if !ok || a.Operation != admission.Create {
		return nil
	}
	containerItems, err := p.items(ctx, a.Namespace, corev1.LimitTypeContainer)
	if err != nil {
		return err
	}
	podItems, err := p.items(ctx, a.Namespace, corev1.LimitTypePod)
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range containerItems {
		for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for _, c := range cs {
				errs = append(errs, check(it, "Container", c.Resources.Requests, c.Resources.Limits)...)
			}
		}
	}
	if len(podItems) > 0 {
		req, lim := podTotals(pod)
		for _, it := range podItems {
			errs = append(errs, check(it, "Pod", req, lim)...)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewForbidden(a.Resource.GroupVersionResource().GroupResource(), a.Name, utilerrors.NewAggregate(errs))
}

// podTotals sums the containers' requests and limits; init containers run
// one at a time, so each counts only if it alone needs more than the sum.
func podTotals(pod *corev1.Pod) (req, lim corev1.ResourceList) {
	req, lim = corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		add(req, c.Resources.Requests)
		add(lim, c.Resources.Limits)
	}
	for _, c := range pod.Spec.InitContainers {
		maxOf(req, c.Resources.Requests)
		maxOf(lim, c.Resources.Limits)
	}
	return req, lim
}

func add(sum, l corev1.ResourceList) {
	for k, v := range l {
		q := sum[k]
		q.Add(v)
		sum[k] = q
	}
}

func maxOf(dst, l corev1.ResourceList) {
	for k, v := range l {
		if q, ok := dst[k]; !ok || v.Cmp(q) > 0 {
			dst[k] = v.DeepCopy()
		}
	}
}

// check applies one item's min, max and ratio to requests and limits, with
// upstream's messages: one per bound and resource, the first that fails.
func check(it corev1.LimitRangeItem, kind string, req, lim corev1.ResourceList) []error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(it.Min)) {
		min := it.Min[k]
		r, hasR := req[k]
		l, hasL := lim[k]
		if !hasR {
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", k, kind, min.String()))
		} else if r.Cmp(min) < 0 {
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s, but request is %s", k, kind, min.String(), r.String()))
		} else if hasL && l.Cmp(min) < 0 {
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", k, kind, min.String(), l.String()))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(it.Max)) {
		max := it.Max[k]
		r, hasR := req[k]
		l, hasL := lim[k]
		if !hasL {
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", k, kind, max.String()))
		} else if l.Cmp(max) > 0 {
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", k, kind, max.String(), l.String()))
		} else if hasR && r.Cmp(max) > 0 {
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but request is %s", k, kind, max.String(), r.String()))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(it.MaxLimitRequestRatio)) {
		ratio := it.MaxLimitRequestRatio[k]
		r, hasR := req[k]
		l, hasL := lim[k]
		// The request is looked at first, as upstream's.
		if !hasR || r.IsZero() {
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", k, kind, ratio.String()))
			continue
		}
		if !hasL || l.IsZero() {
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", k, kind, ratio.String()))
			continue
		}
		got := float64(l.MilliValue()) / float64(r.MilliValue())
		if got > ratio.AsApproximateFloat64() {
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", k, kind, ratio.String(), got))
		}
	}
	return errs
}
