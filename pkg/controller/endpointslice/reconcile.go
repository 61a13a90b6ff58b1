package endpointslice

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
	"github.com/kube-lite/kube-lite/pkg/controller/endpoint/servicepods"
)

// ControllerName is the endpointslice.kubernetes.io/managed-by value of the
// slices this controller owns, as upstream.
const ControllerName = "endpointslice-controller.k8s.io"

// DefaultMaxEndpointsPerSlice is upstream's --max-endpoints-per-slice default.
const DefaultMaxEndpointsPerSlice = 100

// Input is everything a Service's slices are computed from.
type Input struct {
	Service *corev1.Service
	// Pods are those the Service's selector matches in its namespace.
	Pods []*corev1.Pod
	// Node returns a pod's Node (for its zone); ok is false when unknown.
	Node func(name string) (node *corev1.Node, ok bool)
	// Existing are the slices labelled with the Service's name and managed
	// by this controller, not being deleted.
	Existing []*discoveryv1.EndpointSlice
	// MaxEndpointsPerSlice caps each slice (upstream's default is 100).
	MaxEndpointsPerSlice int
	// TriggerTime is set as endpoints.kubernetes.io/last-change-trigger-time
	// on what is written; zero removes it.
	TriggerTime time.Time
}

// Plan is what to write. Creates carry generateName, not a name.
type Plan struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
	// Skipped lists pods left out because their Node is not known yet; the
	// caller retries later, as upstream does.
	Skipped []string
}

// Reconcile decides how the Service's EndpointSlices change, as upstream's
// reconciler: one slice family per address type of the Service; endpoints
// grouped by the ports they serve; an existing endpoint stays in its slice
// (rewritten only when a condition, its node, zone or pod changed); a slice
// left empty is deleted; new endpoints fill the slices being rewritten
// anyway, then the unchanged slice they fit best, then new slices; a
// deletion paired with a creation becomes an update of the deleted slice;
// a Service without endpoints keeps one empty placeholder slice.
//
// Simplification: upstream takes new endpoints from a hash set in no
// particular order; here they go in pod-name order, so plans are stable.
func Reconcile(in Input) Plan {
	var plan Plan
	maxPer := in.MaxEndpointsPerSlice
	if maxPer <= 0 {
		maxPer = DefaultMaxEndpointsPerSlice
	}
	types := addressTypes(in.Service)
	byType := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	for _, s := range sortedByName(in.Existing) {
		if slices.Contains(types, s.AddressType) {
			byType[s.AddressType] = append(byType[s.AddressType], s)
		} else {
			plan.Delete = append(plan.Delete, s)
		}
	}
	skipped := map[string]bool{}
	for _, at := range types {
		p := reconcileType(in, at, byType[at], maxPer, skipped)
		plan.Create = append(plan.Create, p.Create...)
		plan.Update = append(plan.Update, p.Update...)
		plan.Delete = append(plan.Delete, p.Delete...)
	}
	plan.Skipped = slices.Sorted(maps.Keys(skipped))
	reuseDeleted(in.Service, &plan)
	for _, s := range append(slices.Clone(plan.Create), plan.Update...) {
		setTriggerTime(s, in.TriggerTime)
	}
	return plan
}

// addressTypes are the slice address types of a Service, from its IP
// families; a Service the apiserver has not defaulted yet gets its cluster
// IP's family, or both when headless.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			out = append(out, discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			out = append(out, discoveryv1.AddressTypeIPv6)
		}
	}
	if len(out) > 0 {
		return out
	}
	if !servicepods.Headless(svc) {
		if strings.Contains(svc.Spec.ClusterIP, ":") {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
}

// desiredGroup is the endpoints that serve one set of ports.
type desiredGroup struct {
	ports     []discoveryv1.EndpointPort
	endpoints map[string]discoveryv1.Endpoint
	order     []string // keys in pod-name order
}

func reconcileType(in Input, at discoveryv1.AddressType, existing []*discoveryv1.EndpointSlice, maxPer int, skipped map[string]bool) Plan {
	var plan Plan
	svc := in.Service
	existingByPorts := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if !ownedBy(s, svc) {
			plan.Delete = append(plan.Delete, s) // a previous Service of the same name's
			continue
		}
		k := portsKey(s.Ports)
		existingByPorts[k] = append(existingByPorts[k], s)
	}

	desired := map[string]*desiredGroup{}
	var desiredOrder []string
	pods := slices.SortedFunc(slices.Values(in.Pods), func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	for _, pod := range pods {
		if !servicepods.Include(pod, true) {
			continue
		}
		ports := endpointPorts(svc, pod)
		k := portsKey(ports)
		g, ok := desired[k]
		if !ok {
			g = &desiredGroup{ports: ports, endpoints: map[string]discoveryv1.Endpoint{}}
			desired[k] = g
			desiredOrder = append(desiredOrder, k)
		}
		var node *corev1.Node
		if in.Node != nil {
			n, found := in.Node(pod.Spec.NodeName)
			if !found && !svc.Spec.PublishNotReadyAddresses {
				skipped[pod.Name] = true
				continue
			}
			node = n
		}
		ep := podToEndpoint(pod, node, svc, at)
		if len(ep.Addresses) == 0 {
			continue
		}
		ek := endpointKey(&ep)
		if _, dup := g.endpoints[ek]; !dup {
			g.order = append(g.order, ek)
		}
		g.endpoints[ek] = ep
	}

	for _, k := range desiredOrder {
		p := reconcilePorts(in, at, existingByPorts[k], desired[k], maxPer)
		plan.Create = append(plan.Create, p.Create...)
		plan.Update = append(plan.Update, p.Update...)
		plan.Delete = append(plan.Delete, p.Delete...)
	}
	for _, k := range slices.Sorted(maps.Keys(existingByPorts)) {
		if _, ok := desired[k]; !ok {
			plan.Delete = append(plan.Delete, existingByPorts[k]...)
		}
	}

	// A Service without endpoints keeps one empty slice, so that consumers
	// can tell "no endpoints" from "not processed yet".
	if len(existing) == len(plan.Delete) && len(plan.Create) == 0 {
		placeholder := newSlice(svc, at, []discoveryv1.EndpointPort{})
		if len(plan.Delete) == 1 && isPlaceholder(plan.Delete[0], placeholder) {
			plan.Delete = nil
		} else {
			plan.Create = append(plan.Create, placeholder)
		}
	}
	return plan
}

func reconcilePorts(in Input, at discoveryv1.AddressType, existing []*discoveryv1.EndpointSlice, want *desiredGroup, maxPer int) Plan {
	svc := in.Service
	remaining := maps.Clone(want.endpoints)
	var toUpdate, unchanged, toDelete []*discoveryv1.EndpointSlice
	for _, s := range existing {
		var kept []discoveryv1.Endpoint
		changed := false
		for i := range s.Endpoints {
			ek := endpointKey(&s.Endpoints[i])
			got, ok := remaining[ek]
			if !ok {
				continue
			}
			kept = append(kept, got)
			if !equalBeyondKey(&got, &s.Endpoints[i]) {
				changed = true
			}
			delete(remaining, ek)
		}
		labels, labelsChanged := sliceLabels(s, svc)
		switch {
		case changed || len(kept) != len(s.Endpoints):
			if len(kept) == 0 {
				toDelete = append(toDelete, s)
				continue
			}
			u := s.DeepCopy()
			u.Endpoints, u.Labels = kept, labels
			toUpdate = append(toUpdate, u)
		case labelsChanged:
			u := s.DeepCopy()
			u.Labels = labels
			toUpdate = append(toUpdate, u)
		default:
			unchanged = append(unchanged, s)
		}
	}

	var pending []discoveryv1.Endpoint
	for _, ek := range want.order {
		if ep, ok := remaining[ek]; ok {
			pending = append(pending, ep)
		}
	}
	fill := func(s *discoveryv1.EndpointSlice) {
		n := min(maxPer-len(s.Endpoints), len(pending))
		if n <= 0 {
			return
		}
		s.Endpoints = append(s.Endpoints, pending[:n]...)
		pending = pending[n:]
	}
	// Slices written anyway take new endpoints first, the fullest first.
	slices.SortStableFunc(toUpdate, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(len(b.Endpoints), len(a.Endpoints)) })
	for _, s := range toUpdate {
		fill(s)
	}
	var toCreate []*discoveryv1.EndpointSlice
	for len(pending) > 0 {
		var target *discoveryv1.EndpointSlice
		if len(pending) < maxPer {
			if i := closestFit(unchanged, len(pending), maxPer); i >= 0 {
				target = unchanged[i].DeepCopy()
				unchanged = slices.Delete(unchanged, i, i+1)
				toUpdate = append(toUpdate, target)
			}
		}
		if target == nil {
			target = newSlice(svc, at, want.ports)
			toCreate = append(toCreate, target)
		}
		fill(target)
	}
	return Plan{Create: toCreate, Update: toUpdate, Delete: toDelete}
}

// closestFit is the index of the unchanged slice that n more endpoints
// fill closest to maxPer without overflowing it, or -1.
func closestFit(ss []*discoveryv1.EndpointSlice, n, maxPer int) int {
	best, bestGap := -1, maxPer
	for i, s := range ss {
		gap := maxPer - (n + len(s.Endpoints))
		if gap >= 0 && gap < bestGap {
			best, bestGap = i, gap
		}
	}
	return best
}

// reuseDeleted turns a deletion and a creation into one update of the slice
// that was to be deleted: fewer writes, and watchers see one change.
func reuseDeleted(svc *corev1.Service, plan *Plan) {
	for i := 0; i < len(plan.Delete) && len(plan.Create) > 0; {
		old := plan.Delete[i]
		last := plan.Create[len(plan.Create)-1]
		if old.AddressType != last.AddressType || !ownedBy(old, svc) {
			i++
			continue
		}
		last.Name, last.GenerateName, last.ResourceVersion = old.Name, "", old.ResourceVersion
		plan.Create = plan.Create[:len(plan.Create)-1]
		plan.Update = append(plan.Update, last)
		plan.Delete = slices.Delete(plan.Delete, i, i+1)
	}
}

func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	ports := []discoveryv1.EndpointPort{}
	if len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return ports
	}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		n, ok := servicepods.ResolvePort(pod, sp)
		if !ok {
			continue
		}
		ports = append(ports, discoveryv1.EndpointPort{
			Name: ptr.To(sp.Name), Port: ptr.To(n), Protocol: ptr.To(servicepods.Protocol(sp)), AppProtocol: sp.AppProtocol,
		})
	}
	return ports
}

// podToEndpoint is the pod as an endpoint: serving is the Ready condition,
// terminating a deletion in progress, and ready serving and not terminating
// (always true with publishNotReadyAddresses), as upstream.
func podToEndpoint(pod *corev1.Pod, node *corev1.Node, svc *corev1.Service, at discoveryv1.AddressType) discoveryv1.Endpoint {
	serving := controllerutil.IsPodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	addrs := servicepods.IPs(pod, at == discoveryv1.AddressTypeIPv6)
	if addrs == nil {
		addrs = []string{}
	}
	ep := discoveryv1.Endpoint{
		Addresses:  addrs,
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(serving), Terminating: ptr.To(terminating)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		ep.NodeName = ptr.To(pod.Spec.NodeName)
	}
	if node != nil && node.Labels[corev1.LabelTopologyZone] != "" {
		ep.Zone = ptr.To(node.Labels[corev1.LabelTopologyZone])
	}
	if servicepods.SetsHostname(pod, svc) {
		ep.Hostname = ptr.To(pod.Spec.Hostname)
	}
	return ep
}

// endpointKey identifies an endpoint across syncs: its addresses, hostname
// and pod. The rest (conditions, node, zone, pod UID) is compared by
// equalBeyondKey.
func endpointKey(ep *discoveryv1.Endpoint) string {
	var b strings.Builder
	b.WriteString(strings.Join(slices.Sorted(slices.Values(ep.Addresses)), ","))
	b.WriteString("|" + ptr.Deref(ep.Hostname, ""))
	if ep.TargetRef != nil {
		b.WriteString("|" + ep.TargetRef.Namespace + "/" + ep.TargetRef.Name)
	}
	return b.String()
}

func equalBeyondKey(a, b *discoveryv1.Endpoint) bool {
	refA, refB := a.TargetRef, b.TargetRef
	if refA != nil && refB != nil {
		ca, cb := *refA, *refB
		ca.ResourceVersion, cb.ResourceVersion = "", ""
		refA, refB = &ca, &cb
	}
	return ptr.Equal(a.NodeName, b.NodeName) && ptr.Equal(a.Zone, b.Zone) &&
		ptr.Equal(a.Conditions.Ready, b.Conditions.Ready) && ptr.Equal(a.Conditions.Serving, b.Conditions.Serving) &&
		ptr.Equal(a.Conditions.Terminating, b.Conditions.Terminating) &&
		apiequality.Semantic.DeepEqual(refA, refB)
}

// portsKey identifies a set of ports whatever their order.
func portsKey(ports []discoveryv1.EndpointPort) string {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		parts = append(parts, fmt.Sprintf("%s:%d/%s/%s", ptr.Deref(p.Name, ""), ptr.Deref(p.Port, 0),
			ptr.Deref(p.Protocol, ""), ptr.Deref(p.AppProtocol, "")))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, o := range s.OwnerReferences {
		if o.UID == svc.UID && o.Kind == "Service" && o.APIVersion == "v1" {
			return true
		}
	}
	return false
}

func newSlice(svc *corev1.Service, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	prefix := svc.Name + "-"
	if len(validation.IsDNS1123Subdomain(prefix+"xxxxx")) != 0 {
		prefix = svc.Name // the apiserver truncates a long generateName
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    prefix,
			Namespace:       svc.Namespace,
			OwnerReferences: []metav1.OwnerReference{controllerutil.NewControllerRef(svc, "v1", "Service")},
		},
		AddressType: at,
		Ports:       ports,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	s.Labels, _ = sliceLabels(s, svc)
	return s
}

func isReservedLabel(k string) bool {
	return k == discoveryv1.LabelServiceName || k == discoveryv1.LabelManagedBy || k == corev1.IsHeadlessService
}

// sliceLabels are the labels s should carry: the Service's own (but the
// reserved ones), the headless marker, the service name and the manager.
// changed reports a difference in the Service's own labels only, as
// upstream (the reserved ones never change for a slice found by them).
func sliceLabels(s *discoveryv1.EndpointSlice, svc *corev1.Service) (labels map[string]string, changed bool) {
	have, want := map[string]string{}, map[string]string{}
	for k, v := range s.Labels {
		if !isReservedLabel(k) {
			have[k] = v
		}
	}
	for k, v := range svc.Labels {
		if !isReservedLabel(k) {
			want[k] = v
		}
	}
	changed = !maps.Equal(have, want)
	if servicepods.Headless(svc) {
		want[corev1.IsHeadlessService] = ""
	}
	want[discoveryv1.LabelServiceName] = svc.Name
	want[discoveryv1.LabelManagedBy] = ControllerName
	return want, changed
}

// placeholderEqual compares a slice with a fresh placeholder: same
// namespace, labels, owner, address type, no ports and no endpoints.
var placeholderEqual = conversion.EqualitiesOrDie(
	func(a, b metav1.OwnerReference) bool { return a.String() == b.String() },
	func(a, b metav1.ObjectMeta) bool { return a.Namespace == b.Namespace && maps.Equal(a.Labels, b.Labels) },
)

func isPlaceholder(s, placeholder *discoveryv1.EndpointSlice) bool {
	return placeholderEqual.DeepEqual(s, placeholder)
}

func setTriggerTime(s *discoveryv1.EndpointSlice, t time.Time) {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if t.IsZero() {
		delete(s.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	s.Annotations[corev1.EndpointsLastChangeTriggerTime] = t.UTC().Format(time.RFC3339Nano)
}

func sortedByName(ss []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	return slices.SortedFunc(slices.Values(ss), func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
}
