// Package resourcequota holds the ResourceQuota strategy: valid hard limits
// and scopes, the status subresource the quota controller writes, and the
// table.
package resourcequota

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes resourcequotas; c is the clock the AGE column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "resourcequotas",
		Singular:     "resourcequota",
		Kind:         "ResourceQuota",
		Namespaced:   true,
		ShortNames:   []string{"quota"},
		New:          func() runtime.Object { return &corev1.ResourceQuota{} },
		NewList:      func() runtime.Object { return &corev1.ResourceQuotaList{} },
		Strategy:     strategy{},
		Status:       statusStrategy{},
		Table: tableutil.New([]metav1.TableColumnDefinition{
			tableutil.NameColumn(),
			tableutil.AgeColumn(),
			tableutil.Column("Request", "string", 0, "Request represents a minimum amount of cpu/memory that a container may consume."),
			tableutil.Column("Limit", "string", 0, "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
		}, func(q *corev1.ResourceQuota) []interface{} {
			request, limit := usage(q)
			return []interface{}{q.Name, tableutil.Age(q.CreationTimestamp, c.Now()), request, limit}
		}),
	}
}

// usage renders "name: used/hard" for each hard limit, sorted by name; limits.*
// go to the LIMIT column, everything else to REQUEST.
func usage(q *corev1.ResourceQuota) (request, limit string) {
	names := make([]string, 0, len(q.Spec.Hard))
	for n := range q.Spec.Hard {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var req, lim []string
	for _, n := range names {
		used := q.Status.Used[corev1.ResourceName(n)]
		hard := q.Status.Hard[corev1.ResourceName(n)]
		s := fmt.Sprintf("%s: %s/%s", n, used.String(), hard.String())
		if strings.HasPrefix(n, "limits.") {
			lim = append(lim, s)
		} else {
			req = append(req, s)
		}
	}
	return strings.Join(req, ", "), strings.Join(lim, ", ")
}

type strategy struct{}

func (strategy) Default(runtime.Object) {}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	if q, ok := obj.(*corev1.ResourceQuota); ok {
		q.Status = corev1.ResourceQuotaStatus{}
	}
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	q, ok1 := obj.(*corev1.ResourceQuota)
	o, ok2 := old.(*corev1.ResourceQuota)
	if ok1 && ok2 {
		q.Status = o.Status
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return registry.WrongType("resourcequota", obj)
	}
	return Validate(q)
}

func (s strategy) ValidateUpdate(ctx context.Context, obj, _ runtime.Object) field.ErrorList {
	return s.Validate(ctx, obj)
}

// knownScope reports a quota scope upstream knows.
func knownScope(s corev1.ResourceQuotaScope) bool {
	switch s {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
		corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
		corev1.ResourceQuotaScopeVolumeAttributesClass:
		return true
	}
	return false
}

// unfitResources counts the standard resources in spec.hard that scope s
// cannot limit: each adds the same error, as upstream's, so the map's
// order does not show.
func unfitResources(q *corev1.ResourceQuota, s corev1.ResourceQuotaScope) int {
	n := 0
	for r := range q.Spec.Hard {
		if standardQuotaResource(r) && !scopeAppliesTo(s, r) {
			n++
		}
	}
	return n
}

// Validate checks hard limits, scopes, the scope selector and the status
// quantities, with upstream's words.
func Validate(q *corev1.ResourceQuota) field.ErrorList {
	var errs field.ErrorList
	hardPath := field.NewPath("spec", "hard")
	for _, r := range slices.Sorted(maps.Keys(q.Spec.Hard)) {
		p := hardPath.Key(string(r))
		errs = append(errs, quotaResourceName(r, p)...)
		v := q.Spec.Hard[r]
		errs = append(errs, validation.NonnegativeQuantity(v, p)...)
		if integerResource(r) && v.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(p, v, "must be an integer"))
		}
	}
	errs = append(errs, validateScopes(q)...)
	errs = append(errs, validateScopeSelector(q)...)
	errs = append(errs, statusQuantities(q)...)
	return errs
}

// quotaResourceName accepts a qualified name that is, without a domain,
// one of the resources upstream's quota knows.
func quotaResourceName(r corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validation.ResourceName(r, fldPath)
	if !strings.Contains(string(r), "/") && !standardQuotaResource(r) {
		errs = append(errs, field.Invalid(fldPath, r, "must be a standard resource for quota"))
	}
	return errs
}

// integerResource reports what a quota counts in whole units: objects, and
// extended resources (a domain outside kubernetes.io, not under requests.).
func integerResource(r corev1.ResourceName) bool {
	switch r {
	case corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return true
	}
	if validation.NativeResource(r) || strings.HasPrefix(string(r), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(utilvalidation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(r))) == 0
}

// validateScopes refuses unknown scopes, scopes that cannot limit a
// resource in spec.hard (each such resource adds the same error) and
// conflicting pairs; every error names the whole list, as upstream's.
func validateScopes(q *corev1.ResourceQuota) field.ErrorList {
	var errs field.ErrorList
	scopePath := field.NewPath("spec", "scopes")
	seen := map[corev1.ResourceQuotaScope]bool{}
	for _, s := range q.Spec.Scopes {
		if !knownScope(s) {
			errs = append(errs, field.Invalid(scopePath, q.Spec.Scopes, "unsupported scope"))
		}
		for range unfitResources(q, s) {
			errs = append(errs, field.Invalid(scopePath, q.Spec.Scopes, "unsupported scope applied to resource"))
		}
		seen[s] = true
	}
	return append(errs, conflictingScopes(seen, scopePath, q.Spec.Scopes)...)
}

func conflictingScopes(seen map[corev1.ResourceQuotaScope]bool, fldPath *field.Path, value []corev1.ResourceQuotaScope) field.ErrorList {
	var errs field.ErrorList
	if seen[corev1.ResourceQuotaScopeBestEffort] && seen[corev1.ResourceQuotaScopeNotBestEffort] {
		errs = append(errs, field.Invalid(fldPath, value, "conflicting scopes"))
	}
	if seen[corev1.ResourceQuotaScopeTerminating] && seen[corev1.ResourceQuotaScopeNotTerminating] {
		errs = append(errs, field.Invalid(fldPath, value, "conflicting scopes"))
	}
	return errs
}

// internalScopeSelector prints a scope selector as upstream's errors show
// it: its internal type, whose fields have no JSON names.
type internalScopeSelector struct {
	MatchExpressions []internalScopeRequirement
}

type internalScopeRequirement struct {
	ScopeName, Operator string
	Values              []string
}

// validateScopeSelector checks each match expression as upstream: the
// scope is known and applies to the hard resources, boolean scopes use
// Exists, and In/NotIn have values while Exists/DoesNotExist have none.
// Upstream's paths carry no index.
func validateScopeSelector(q *corev1.ResourceQuota) field.ErrorList {
	sel := q.Spec.ScopeSelector
	if sel == nil {
		return nil
	}
	shown := internalScopeSelector{}
	for _, e := range sel.MatchExpressions {
		shown.MatchExpressions = append(shown.MatchExpressions, internalScopeRequirement{ScopeName: string(e.ScopeName), Operator: string(e.Operator), Values: e.Values})
	}
	var errs field.ErrorList
	p := field.NewPath("spec", "scopeSelector", "matchExpressions")
	seen := map[corev1.ResourceQuotaScope]bool{}
	for _, e := range sel.MatchExpressions {
		if !knownScope(e.ScopeName) {
			errs = append(errs, field.Invalid(p.Child("scopeName"), e.ScopeName, "unsupported scope"))
		}
		for range unfitResources(q, e.ScopeName) {
			errs = append(errs, field.Invalid(p, shown, "unsupported scope applied to resource"))
		}
		switch e.ScopeName {
		case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
			corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
			if e.Operator != corev1.ScopeSelectorOpExists {
				errs = append(errs, field.Invalid(p.Child("operator"), e.Operator,
					"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
			}
		}
		switch e.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(e.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(e.Values) != 0 {
				errs = append(errs, field.Invalid(p.Child("values"), e.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), e.Operator, "not a valid selector operator"))
		}
		seen[e.ScopeName] = true
	}
	// Upstream shows spec.scopes as the value here.
	return append(errs, conflictingScopes(seen, p, q.Spec.Scopes)...)
}

// standardQuotaResource reports whether upstream's quota knows r itself
// (object counts such as count/deployments.apps are not checked against
// scopes).
func standardQuotaResource(r corev1.ResourceName) bool {
	switch r {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsStorage, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourcePersistentVolumeClaims, corev1.ResourceConfigMaps,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return true
	}
	return strings.HasPrefix(string(r), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(r), corev1.ResourceRequestsHugePagesPrefix)
}

// scopeAppliesTo reports whether a quota scope can limit resource r: pod
// scopes only match pods, so a quota of configmaps (or, for BestEffort
// pods, which request nothing, of cpu) under them would never count
// anything.
func scopeAppliesTo(scope corev1.ResourceQuotaScope, r corev1.ResourceName) bool {
	podCompute := r == corev1.ResourceCPU || r == corev1.ResourceMemory || r == corev1.ResourceLimitsCPU ||
		r == corev1.ResourceLimitsMemory || r == corev1.ResourceRequestsCPU || r == corev1.ResourceRequestsMemory
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return r == corev1.ResourcePods || podCompute
	case corev1.ResourceQuotaScopeBestEffort:
		return r == corev1.ResourcePods
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return r == corev1.ResourcePersistentVolumeClaims || r == corev1.ResourceRequestsStorage
	}
	return true
}

func statusQuantities(q *corev1.ResourceQuota) field.ErrorList {
	errs := validation.ResourceList(q.Status.Hard, field.NewPath("status", "hard"))
	return append(errs, validation.ResourceList(q.Status.Used, field.NewPath("status", "used"))...)
}

type statusStrategy struct{}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	q, ok1 := obj.(*corev1.ResourceQuota)
	o, ok2 := old.(*corev1.ResourceQuota)
	if ok1 && ok2 {
		q.Spec = o.Spec
	}
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return registry.WrongType("resourcequota", obj)
	}
	return statusQuantities(q)
}
