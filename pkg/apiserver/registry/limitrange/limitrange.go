// Package limitrange holds the LimitRange strategy: per-type limits whose
// min <= defaultRequest <= default <= max, and the table.
package limitrange

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

func (strategy) Default(runtime.Object)                                           {}
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

// Validate checks each limit item: a known type, one item per type,
// non-negative quantities ordered min <= defaultRequest <= default <= max,
// and ratios of at least 1.
func Validate(l *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	limitsPath := field.NewPath("spec", "limits")
	types := map[corev1.LimitType]bool{}
	for i := range l.Spec.Limits {
		item := &l.Spec.Limits[i]
		p := limitsPath.Index(i)
		switch item.Type {
		case corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim:
		case "":
			errs = append(errs, field.Required(p.Child("type"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), item.Type, []string{
				string(corev1.LimitTypePod), string(corev1.LimitTypeContainer), string(corev1.LimitTypePersistentVolumeClaim)}))
		}
		if types[item.Type] {
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		types[item.Type] = true
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		}
		errs = append(errs, validation.ResourceList(item.Max, p.Child("max"))...)
		errs = append(errs, validation.ResourceList(item.Min, p.Child("min"))...)
		errs = append(errs, validation.ResourceList(item.Default, p.Child("default"))...)
		errs = append(errs, validation.ResourceList(item.DefaultRequest, p.Child("defaultRequest"))...)
		errs = append(errs, validation.ResourceList(item.MaxLimitRequestRatio, p.Child("maxLimitRequestRatio"))...)
		errs = append(errs, ordering(item, p)...)
	}
	return errs
}

// ordering compares, per resource, the bounds that are present.
func ordering(item *corev1.LimitRangeItem, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	greater := func(a, b resource.Quantity) bool { return a.Cmp(b) > 0 }
	seen := map[corev1.ResourceName]bool{}
	var names []corev1.ResourceName
	for _, l := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest} {
		for n := range l {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	// Sorted, so that the same object always gets the same error list.
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	for _, n := range names {
		key := string(n)
		maxQ, hasMax := item.Max[n]
		minQ, hasMin := item.Min[n]
		def, hasDef := item.Default[n]
		defReq, hasDefReq := item.DefaultRequest[n]
		if hasMin && hasMax && greater(minQ, maxQ) {
			errs = append(errs, field.Invalid(p.Child("min").Key(key), minQ.String(),
				fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
		}
		if hasDefReq && hasDef && greater(defReq, def) {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq.String(),
				fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
		}
		if hasDefReq && hasMax && greater(defReq, maxQ) {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq.String(),
				fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), maxQ.String())))
		}
		if hasDefReq && hasMin && greater(minQ, defReq) {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq.String(),
				fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReq.String())))
		}
		if hasDef && hasMax && greater(def, maxQ) {
			errs = append(errs, field.Invalid(p.Child("default").Key(key), def.String(),
				fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
		}
		if hasDef && hasMin && greater(minQ, def) {
			errs = append(errs, field.Invalid(p.Child("default").Key(key), def.String(),
				fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
		}
	}
	one := resource.MustParse("1")
	for n, ratio := range item.MaxLimitRequestRatio {
		if ratio.Cmp(one) < 0 {
			errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(string(n)), ratio.String(),
				fmt.Sprintf("ratio %s is less than 1", ratio.String())))
		}
	}
	return errs
}
