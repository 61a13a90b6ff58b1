// Package node holds the Node strategy: spec and status validation (pod
// CIDRs set once, taints, capacities), the status subresource, the
// spec.unschedulable field selector and the table.
package node

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	netutils "k8s.io/utils/net"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes nodes; c is the clock the AGE column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "nodes",
		Singular:     "node",
		Kind:         "Node",
		ShortNames:   []string{"no"},
		New:          func() runtime.Object { return &corev1.Node{} },
		NewList:      func() runtime.Object { return &corev1.NodeList{} },
		Strategy:     strategy{},
		Status:       statusStrategy{},
		Table:        table(c),
		Attrs:        Attrs,
	}
}

// Attrs exposes spec.unschedulable to field selectors.
func Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return nil, nil, fmt.Errorf("not a node: %T", obj)
	}
	return labels.Set(n.Labels), fields.Set{
		"metadata.name":      n.Name,
		"spec.unschedulable": strconv.FormatBool(n.Spec.Unschedulable),
	}, nil
}

type strategy struct{}

// Default mirrors podCIDR and fills allocatable from capacity when a kubelet
// reports only the latter, as upstream.
func (strategy) Default(obj runtime.Object) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	// podCIDR and podCIDRs[0] are one value under two names, as in upstream's
	// v1 conversion: a podCIDR that is not podCIDRs[0] wins and replaces the
	// list, so such a node is stored (or refused as a podCIDR change) rather
	// than refused for its two fields disagreeing.
	switch {
	case n.Spec.PodCIDR != "" && (len(n.Spec.PodCIDRs) == 0 || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR):
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	case n.Spec.PodCIDR == "" && len(n.Spec.PodCIDRs) > 0:
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
	if n.Status.Allocatable == nil && len(n.Status.Capacity) > 0 {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
}

// PrepareForCreate keeps the status: a kubelet registers its node with
// capacity, addresses and conditions in one create.
func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return registry.WrongType("node", obj)
	}
	return Validate(n, nil)
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, ok1 := obj.(*corev1.Node)
	o, ok2 := old.(*corev1.Node)
	if ok1 && ok2 {
		n.Status = o.Status
	}
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	n, ok1 := obj.(*corev1.Node)
	o, ok2 := old.(*corev1.Node)
	if !ok1 || !ok2 {
		return registry.WrongType("node", obj)
	}
	return ValidateUpdate(n, o)
}

type statusStrategy struct{}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, ok1 := obj.(*corev1.Node)
	o, ok2 := old.(*corev1.Node)
	if ok1 && ok2 {
		n.Spec = o.Spec
	}
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	n, ok1 := obj.(*corev1.Node)
	o, ok2 := old.(*corev1.Node)
	if !ok1 || !ok2 {
		return registry.WrongType("node", obj)
	}
	return ValidateUpdate(n, o)
}

// Validate checks pod CIDRs, taints and the reported status. A pod CIDR
// in oldCIDRs (those the node already has) passes even if today's strict
// parsing would refuse it, as upstream's legacy-field rule.
func Validate(n *corev1.Node, oldCIDRs []string) field.ErrorList {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	cidrsPath := specPath.Child("podCIDRs")
	for i, c := range n.Spec.PodCIDRs {
		errs = append(errs, utilvalidation.IsValidCIDRForLegacyField(cidrsPath.Index(i), c, true, oldCIDRs)...)
	}
	if len(n.Spec.PodCIDRs) > 1 {
		// Upstream reports an unparsable entry here a second time, as an
		// internal error, and then the family rule as well.
		dualStack, err := netutils.IsDualStackCIDRStrings(n.Spec.PodCIDRs)
		if err != nil {
			errs = append(errs, field.InternalError(cidrsPath, fmt.Errorf("invalid PodCIDRs. failed to check with dual stack with error:%w", err)))
		}
		if !dualStack || len(n.Spec.PodCIDRs) > 2 {
			errs = append(errs, field.Invalid(cidrsPath, n.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
		}
	}
	// Upstream names the taints metadata.taints, and kubectl users see that
	// path in its errors.
	errs = append(errs, taints(n.Spec.Taints, field.NewPath("metadata", "taints"))...)
	statusPath := field.NewPath("status")
	errs = append(errs, validation.ResourceList(n.Status.Capacity, statusPath.Child("capacity"))...)
	errs = append(errs, validation.ResourceList(n.Status.Allocatable, statusPath.Child("allocatable"))...)
	for i, a := range n.Status.Addresses {
		ap := statusPath.Child("addresses").Index(i)
		if a.Type == "" {
			errs = append(errs, field.Required(ap.Child("type"), ""))
		}
		if a.Address == "" {
			errs = append(errs, field.Required(ap.Child("address"), ""))
		}
	}
	for i, c := range n.Status.Conditions {
		cp := statusPath.Child("conditions").Index(i)
		if c.Type == "" {
			errs = append(errs, field.Required(cp.Child("type"), ""))
		}
		switch c.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		default:
			errs = append(errs, field.NotSupported(cp.Child("status"), c.Status,
				[]string{string(corev1.ConditionTrue), string(corev1.ConditionFalse), string(corev1.ConditionUnknown)}))
		}
	}
	return errs
}

// ValidateUpdate: pod CIDRs and the provider ID may be set once, never
// changed; everything else may change.
func ValidateUpdate(n, old *corev1.Node) field.ErrorList {
	errs := Validate(n, old.Spec.PodCIDRs)
	specPath := field.NewPath("spec")
	if len(old.Spec.PodCIDRs) > 0 {
		if len(old.Spec.PodCIDRs) != len(n.Spec.PodCIDRs) {
			errs = append(errs, field.Forbidden(specPath.Child("podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
		} else {
			for i := range old.Spec.PodCIDRs {
				if old.Spec.PodCIDRs[i] != n.Spec.PodCIDRs[i] {
					errs = append(errs, field.Forbidden(specPath.Child("podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
					break
				}
			}
		}
	}
	if old.Spec.ProviderID != "" && n.Spec.ProviderID != old.Spec.ProviderID {
		errs = append(errs, field.Forbidden(specPath.Child("providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	return errs
}

// duplicateTaint is how upstream prints a repeated taint in its error.
type duplicateTaint struct {
	Key, Value, Effect string
	TimeAdded          *metav1.Time
}

func taints(ts []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, t := range ts {
		p := fldPath.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		errs = append(errs, validation.Messages(p.Child("value"), t.Value, utilvalidation.IsValidLabelValue(t.Value))...)
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		case "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, []string{
				string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}))
		}
		key := t.Key + "=" + string(t.Effect)
		if seen[key] {
			// The value shows as upstream's internal Taint, whose fields
			// have no JSON names.
			dup := field.Duplicate(p, duplicateTaint{Key: t.Key, Value: t.Value, Effect: string(t.Effect), TimeAdded: t.TimeAdded})
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
		}
		seen[key] = true
	}
	return errs
}

const (
	roleLabelPrefix = "node-role.kubernetes.io/"
	roleLabel       = "kubernetes.io/role"
)

func table(c clock.PassiveClock) registry.TableConvertor {
	info := corev1.NodeSystemInfo{}.SwaggerDoc()
	addresses := corev1.NodeStatus{}.SwaggerDoc()["addresses"]
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Status", "string", 0, "The status of the node"),
		tableutil.Column("Roles", "string", 0, "The roles of the node"),
		tableutil.AgeColumn(),
		tableutil.Column("Version", "string", 0, info["kubeletVersion"]),
		tableutil.Column("Internal-IP", "string", 1, addresses),
		tableutil.Column("External-IP", "string", 1, addresses),
		tableutil.Column("OS-Image", "string", 1, info["osImage"]),
		tableutil.Column("Kernel-Version", "string", 1, info["kernelVersion"]),
		tableutil.Column("Container-Runtime", "string", 1, info["containerRuntimeVersion"]),
	}
	return tableutil.New(cols, func(n *corev1.Node) []interface{} {
		var status []string
		for _, cond := range n.Status.Conditions {
			if cond.Type != corev1.NodeReady {
				continue
			}
			if cond.Status == corev1.ConditionTrue {
				status = append(status, "Ready")
			} else {
				status = append(status, "NotReady")
			}
			break
		}
		if len(status) == 0 {
			status = append(status, "Unknown")
		}
		if n.Spec.Unschedulable {
			status = append(status, "SchedulingDisabled")
		}
		roles := tableutil.None
		if r := Roles(n); len(r) > 0 {
			roles = strings.Join(r, ",")
		}
		ni := n.Status.NodeInfo
		return []interface{}{
			n.Name, strings.Join(status, ","), roles, tableutil.Age(n.CreationTimestamp, c.Now()), ni.KubeletVersion,
			address(n, corev1.NodeInternalIP), address(n, corev1.NodeExternalIP),
			orUnknown(ni.OSImage), orUnknown(ni.KernelVersion), orUnknown(ni.ContainerRuntimeVersion),
		}
	})
}

// Roles lists the node's roles from node-role.kubernetes.io/<role> labels and
// the older kubernetes.io/role label, sorted.
func Roles(n *corev1.Node) []string {
	set := map[string]bool{}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, roleLabelPrefix):
			if role := strings.TrimPrefix(k, roleLabelPrefix); role != "" {
				set[role] = true
			}
		case k == roleLabel && v != "":
			set[v] = true
		}
	}
	roles := make([]string, 0, len(set))
	for r := range set {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return roles
}

func address(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return tableutil.None
}

func orUnknown(s string) string {
	if s == "" {
		return tableutil.Unknown
	}
	return s
}
