// Package validation holds the validation rules shared by the per-resource
// strategies: pod specs (pods and every workload's pod template), resource
// quantities and data keys. Error field paths and messages follow upstream so
// that clients see the same "spec.containers[0].image: Required value".
//
// Pod template defaulting lives with the pod strategy (pod.DefaultPodSpec),
// next to the pod defaults it shares.
package validation

import (
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const isNegativeErrorMsg = "must be greater than or equal to 0"

// KubeFinalizerName refuses a finalizer that is neither one of the standard
// names given nor domain-qualified, as upstream: a bare name like "foo" is
// nobody's to remove and would hold the object forever.
func KubeFinalizerName(name string, fldPath *field.Path, standard ...string) field.ErrorList {
	if strings.Contains(name, "/") || slices.Contains(standard, name) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
}

// NonnegativeQuantity rejects negative quantities.
func NonnegativeQuantity(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), isNegativeErrorMsg)}
	}
	return nil
}

// NonnegativeField rejects negative integers.
func NonnegativeField(v int64, fldPath *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateNonnegativeField(v, fldPath)
}

// DNSLabel checks a required value that must be an RFC 1123 label.
func DNSLabel(value string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return Messages(fldPath, value, validation.IsDNS1123Label(value))
}

// MaxDataSize bounds the summed values of a ConfigMap or Secret (1 MiB), as
// upstream: the whole object must fit in one etcd value.
const MaxDataSize = 1 << 20

// DataKeys checks the keys of a ConfigMap's or Secret's data map; errors
// point at the entry (data[bad/key]).
func DataKeys[V any](data map[string]V, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k := range data {
		errs = append(errs, Messages(fldPath.Key(k), k, validation.IsConfigMapKey(k))...)
	}
	return errs
}

// DataChange is one data map of a ConfigMap or Secret update: its field
// name, its new value and the stored object's. FrozenData compares them only
// for an immutable object, so an ordinary update never pays for it.
type DataChange struct {
	Field    string
	New, Old any
}

// FrozenData enforces `immutable: true` on a ConfigMap or Secret: once the
// stored object is immutable it stays so, and none of its data maps may
// change. Upstream's rule; kubelets rely on it to stop watching such objects.
func FrozenData(immutable, oldImmutable *bool, maps ...DataChange) field.ErrorList {
	if oldImmutable == nil || !*oldImmutable {
		return nil
	}
	const msg = "field is immutable when `immutable` is set"
	var errs field.ErrorList
	if immutable == nil || !*immutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
	}
	for _, m := range maps {
		if !apiequality.Semantic.DeepEqual(m.New, m.Old) {
			errs = append(errs, field.Forbidden(field.NewPath(m.Field), msg))
		}
	}
	return errs
}

// Messages turns the []string answers of the apimachinery predicates into
// Invalid errors on fldPath.
func Messages(fldPath *field.Path, value interface{}, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range msgs {
		errs = append(errs, field.Invalid(fldPath, value, m))
	}
	return errs
}

// inclusiveRange reports an Invalid error when v is outside [lo, hi].
func inclusiveRange(v int64, lo, hi int64, fldPath *field.Path) field.ErrorList {
	if v < lo || v > hi {
		return field.ErrorList{field.Invalid(fldPath, v, fmt.Sprintf("must be between %d and %d, inclusive", lo, hi))}
	}
	return nil
}
