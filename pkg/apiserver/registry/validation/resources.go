package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceRequirements checks a container's requests and limits: known or
// domain-qualified resource names, non-negative quantities, and no request
// above its limit.
func ResourceRequirements(req *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	if req == nil {
		return nil
	}
	var errs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	for name, q := range req.Limits {
		p := limPath.Key(string(name))
		errs = append(errs, ContainerResourceName(name, p)...)
		errs = append(errs, NonnegativeQuantity(q, p)...)
	}
	for name, q := range req.Requests {
		p := reqPath.Key(string(name))
		errs = append(errs, ContainerResourceName(name, p)...)
		errs = append(errs, NonnegativeQuantity(q, p)...)
		// Upstream reports these on requests and limits as a whole, not on
		// the entry.
		lim, ok := req.Limits[name]
		switch {
		case !ok:
			if !OvercommitAllowed(name) {
				errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
			}
		case q.Cmp(lim) != 0 && !OvercommitAllowed(name):
			// Extended resources and hugepages cannot be overcommitted, so
			// upstream insists on equality rather than <=.
			errs = append(errs, field.Invalid(reqPath, q.String(),
				fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
		case q.Cmp(lim) > 0:
			errs = append(errs, field.Invalid(reqPath, q.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		}
	}
	return errs
}

// ResourceName accepts a qualified resource name that is, without a
// domain, one of upstream's standard resources.
func ResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	s := string(name)
	if errs := Messages(fldPath, s, validation.IsQualifiedName(s)); len(errs) > 0 {
		return errs
	}
	if !strings.Contains(s, "/") && !standardResource(name) {
		return field.ErrorList{field.Invalid(fldPath, s, "must be a standard resource type or fully qualified")}
	}
	return nil
}

// standardResource lists upstream's standard resource names: what quotas,
// limit ranges and containers may name without a domain.
func standardResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceStorage, corev1.ResourceRequestsStorage, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return true
	}
	s := string(name)
	return strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix)
}

// ContainerResourceName accepts the resources a container may ask for:
// cpu, memory, ephemeral-storage, hugepages-<size>, or a domain-qualified
// extended resource (example.com/gpu).
func ContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	s := string(name)
	errs := ResourceName(name, fldPath)
	if strings.Contains(s, "/") {
		if len(errs) == 0 && strings.HasPrefix(s, "requests.") {
			return field.ErrorList{field.Invalid(fldPath, s, "must not begin with 'requests.'")}
		}
		return errs
	}
	switch {
	case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage,
		strings.HasPrefix(s, corev1.ResourceHugePagesPrefix):
		return errs
	}
	return append(errs, field.Invalid(fldPath, s, "must be a standard resource for containers"))
}

// NativeResource reports a resource the node itself accounts for: one
// without a domain or in the kubernetes.io domain, as opposed to an
// extended resource (example.com/gpu).
func NativeResource(name corev1.ResourceName) bool {
	s := string(name)
	return !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/")
}

// OvercommitAllowed reports the resources a request may ask for less of
// than its limit: native ones, except hugepages.
func OvercommitAllowed(name corev1.ResourceName) bool {
	return NativeResource(name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// ResourceList checks the quantities of a quota or limit range: qualified
// names and non-negative values.
func ResourceList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range list {
		p := fldPath.Key(string(name))
		errs = append(errs, Messages(p, string(name), validation.IsQualifiedName(string(name)))...)
		errs = append(errs, NonnegativeQuantity(q, p)...)
	}
	return errs
}
