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
			if !overcommitAllowed(name) {
				errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
			}
		case q.Cmp(lim) != 0 && !overcommitAllowed(name):
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

// ContainerResourceName accepts the resources a container may ask for:
// cpu, memory, ephemeral-storage, hugepages-<size>, or a domain-qualified
// extended resource (example.com/gpu).
func ContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	s := string(name)
	if errs := messages(fldPath, s, validation.IsQualifiedName(s)); len(errs) > 0 {
		return errs
	}
	if strings.Contains(s, "/") {
		if strings.HasPrefix(s, "requests.") {
			return field.ErrorList{field.Invalid(fldPath, s, "must not begin with 'requests.'")}
		}
		return nil
	}
	switch {
	case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage,
		strings.HasPrefix(s, corev1.ResourceHugePagesPrefix):
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, s, "must be a standard resource for containers")}
}

// overcommitAllowed reports the resources a request may ask for less of
// than its limit: those without a domain or in the kubernetes.io domain
// (the node itself accounts for them), except hugepages.
func overcommitAllowed(name corev1.ResourceName) bool {
	s := string(name)
	native := !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/")
	return native && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix)
}

// ResourceList checks the quantities of a quota or limit range: qualified
// names and non-negative values.
func ResourceList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range list {
		p := fldPath.Key(string(name))
		errs = append(errs, messages(p, string(name), validation.IsQualifiedName(string(name)))...)
		errs = append(errs, NonnegativeQuantity(q, p)...)
	}
	return errs
}
