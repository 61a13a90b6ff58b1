// Package limitrange holds the LimitRange strategy: per-type limits whose
// min <= defaultRequest <= default <= max, and the table.
package limitrange

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes limitranges. The table shows the creation time rather
// than an age, so the clock is not read; it is taken for a uniform
// constructor.
func Resource(_ clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "limitranges",
		Singular:     "limitrange",
		Kind:         "LimitRange",
		Namespaced:   true,
		ShortNames:   []string{"limits"},
		New:          func() runtime.Object { return &corev1.LimitRange{} },
		NewList:      func() runtime.Object { return &corev1.LimitRangeList{} },
		Strategy:     strategy{},
		// As upstream: a PUT of a missing object creates it.
		AllowCreateOnUpdate: true,
		Table: tableutil.New([]metav1.TableColumnDefinition{
			tableutil.NameColumn(),
			{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		}, func(l *corev1.LimitRange) []interface{} {
			return []interface{}{l.Name, l.CreationTimestamp.UTC().Format(time.RFC3339)}
		}),
	}
}

type strategy struct{}

// Default defaults each item as upstream's API defaulting: the stored
// object shows (and kubectl describe prints) the values pods get.
func (strategy) Default(obj runtime.Object) {
	l, ok := obj.(*corev1.LimitRange)
	if !ok {
		return
	}
	for i := range l.Spec.Limits {
		DefaultItem(&l.Spec.Limits[i])
	}
}

// DefaultItem fills a Container item's default limit from max and its
// default request from the default limit, then from min; items of other
// types are left as they are. The LimitRanger admission plugin applies it
// too, so that objects stored before this defaulting existed behave alike.
func DefaultItem(it *corev1.LimitRangeItem) {
	if it.Type != corev1.LimitTypeContainer {
		return
	}
	it.Default = fill(it.Default, it.Max)
	it.DefaultRequest = fill(it.DefaultRequest, it.Default)
	it.DefaultRequest = fill(it.DefaultRequest, it.Min)
}

// fill adds to dst what src has and dst lacks; an item with neither gets
// empty maps, as upstream's.
func fill(dst, src corev1.ResourceList) corev1.ResourceList {
	if dst == nil {
		dst = corev1.ResourceList{}
	}
	for k, v := range src {
		if _, ok := dst[k]; !ok {
			dst[k] = v.DeepCopy()
		}
	}
	return dst
}

func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	l, ok := obj.(*corev1.LimitRange)
	if !ok {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("limitrange strategy: unexpected object %T", obj))}
	}
	return Validate(l)
}

func (s strategy) ValidateUpdate(ctx context.Context, obj, _ runtime.Object) field.ErrorList {
	return s.Validate(ctx, obj)
}

// Validate checks each limit item as upstream: a standard or qualified
// type, one item per type, resource names for the type, non-negative
// quantities ordered min <= defaultRequest <= default <= max, ratios of
// at least 1 and at most max/min, equal default and request for resources
// that cannot be overcommitted, and a storage bound for claims.
func Validate(l *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	limitsPath := field.NewPath("spec", "limits")
	types := map[corev1.LimitType]bool{}
	for i := range l.Spec.Limits {
		item := &l.Spec.Limits[i]
		p := limitsPath.Index(i)
		errs = append(errs, limitType(string(item.Type), p.Child("type"))...)
		if types[item.Type] {
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		types[item.Type] = true
		for _, f := range []struct {
			name string
			list corev1.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}} {
			if item.Type == corev1.LimitTypePod && (f.name == "default" || f.name == "defaultRequest") {
				if len(f.list) > 0 {
					errs = append(errs, field.Forbidden(p.Child(f.name), "may not be specified when `type` is 'Pod'"))
				}
				continue
			}
			for _, n := range slices.Sorted(maps.Keys(f.list)) {
				rp := p.Child(f.name).Key(string(n))
				if item.Type == corev1.LimitTypePod || item.Type == corev1.LimitTypeContainer {
					errs = append(errs, validation.ContainerResourceName(n, rp)...)
				} else {
					errs = append(errs, validation.ResourceName(n, rp)...)
				}
				errs = append(errs, validation.NonnegativeQuantity(f.list[n], rp)...)
			}
		}
		if item.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := item.Min[corev1.ResourceStorage]
			_, hasMax := item.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		errs = append(errs, ordering(item, p)...)
	}
	return errs
}

// limitType accepts Pod, Container, PersistentVolumeClaim or a qualified
// name with a domain.
func limitType(t string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validation.Messages(fldPath, t, utilvalidation.IsQualifiedName(t))...)
	if len(errs) > 0 || strings.Contains(t, "/") {
		return errs
	}
	switch corev1.LimitType(t) {
	case corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim:
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, t, "must be a standard limit type or fully qualified")}
}

// ordering compares the item's quantities per resource in upstream's order
// and words; some errors show the other side's value, as upstream's do.
func ordering(item *corev1.LimitRangeItem, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.ResourceName]bool{}
	var names []corev1.ResourceName
	for _, l := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest, item.MaxLimitRequestRatio} {
		for n := range l {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	// Sorted, so that the same object always gets the same error list.
	slices.Sort(names)
	one := resource.MustParse("1")
	for _, n := range names {
		key := string(n)
		maxQ, hasMax := item.Max[n]
		minQ, hasMin := item.Min[n]
		def, hasDef := item.Default[n]
		defReq, hasDefReq := item.DefaultRequest[n]
		ratio, hasRatio := item.MaxLimitRequestRatio[n]
		if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("min").Key(key), minQ,
				fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
		}
		if hasDefReq && hasMin && minQ.Cmp(defReq) > 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq,
				fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReq.String())))
		}
		if hasDefReq && hasMax && defReq.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq,
				fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), maxQ.String())))
		}
		if hasDefReq && hasDef && defReq.Cmp(def) > 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq,
				fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
		}
		if hasDef && hasMin && minQ.Cmp(def) > 0 {
			errs = append(errs, field.Invalid(p.Child("default").Key(key), minQ,
				fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
		}
		if hasDef && hasMax && def.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("default").Key(key), maxQ,
				fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
		}
		if hasRatio && ratio.Cmp(one) < 0 {
			errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(key), ratio,
				fmt.Sprintf("ratio %s is less than 1", ratio.String())))
		}
		if hasRatio && hasMin && hasMax && minQ.Sign() > 0 {
			if limit := float64(maxQ.MilliValue()) / float64(minQ.MilliValue()); float64(ratio.MilliValue())/1000 > limit {
				errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(key), ratio,
					fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), limit)))
			}
		}
		if !validation.OvercommitAllowed(n) && hasDef && hasDefReq && def.Cmp(defReq) != 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq,
				fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), defReq.String(), key)))
		}
	}
	return errs
}
