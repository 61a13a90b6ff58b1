package endpoint

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
	"github.com/kube-lite/kube-lite/pkg/controller/endpoint/servicepods"
)

const (
	// LabelManagedBy marks the Endpoints this controller writes, as upstream.
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	// ControllerName is the LabelManagedBy value and the events' source.
	ControllerName = "endpoint-controller"

	// maxCapacity is upstream's cap on the addresses of one Endpoints object;
	// past it the object is truncated and annotated as over capacity.
	maxCapacity = 1000
	truncated   = "truncated"
)

// Subsets computes the subsets of svc's Endpoints from the pods its selector
// matches, as upstream: ready and not-ready addresses, named target ports
// resolved per pod, pods grouped by the ports they serve, in a stable order.
func Subsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	var subsets []corev1.EndpointSubset
	for _, pod := range pods {
		if !servicepods.Include(pod, svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		ips := servicepods.IPs(pod, servicepods.WantsIPv6(svc, pod))
		if len(ips) == 0 {
			continue // no address of the Service's family
		}
		addr := corev1.EndpointAddress{
			IP:        ips[0],
			NodeName:  &pod.Spec.NodeName,
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if servicepods.SetsHostname(pod, svc) {
			addr.Hostname = pod.Spec.Hostname
		}
		ready := svc.Spec.PublishNotReadyAddresses || controllerutil.IsPodReady(pod)
		add := func(ports []corev1.EndpointPort) {
			s := corev1.EndpointSubset{Ports: ports}
			if ready {
				s.Addresses = []corev1.EndpointAddress{addr}
			} else {
				s.NotReadyAddresses = []corev1.EndpointAddress{addr}
			}
			subsets = append(subsets, s)
		}
		if len(svc.Spec.Ports) == 0 {
			// Only a headless Service may have no ports; its pods are
			// published by address alone.
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				add(nil)
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, ok := servicepods.ResolvePort(pod, sp)
			if !ok {
				continue // this pod does not serve that named port
			}
			add([]corev1.EndpointPort{{Name: sp.Name, Port: port, Protocol: servicepods.Protocol(sp), AppProtocol: sp.AppProtocol}})
		}
	}
	return Repack(subsets)
}

// Repack merges subsets into the fewest that say the same thing: ports that
// reach exactly the same addresses (with the same readiness) share a subset.
// An address ready on one port and not on another counts as not ready. The
// result is sorted, so equal contents compare equal.
func Repack(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	type addrKey struct{ ip, uid string }
	keyOf := func(a *corev1.EndpointAddress) addrKey {
		k := addrKey{ip: a.IP}
		if a.TargetRef != nil {
			k.uid = string(a.TargetRef.UID)
		}
		return k
	}
	addrs := map[addrKey]corev1.EndpointAddress{}
	noPort := corev1.EndpointPort{Port: -1} // headless without ports
	byPort := map[corev1.EndpointPort]map[addrKey]bool{}
	var portOrder []corev1.EndpointPort
	note := func(p corev1.EndpointPort, a *corev1.EndpointAddress, ready bool) {
		k := keyOf(a)
		if _, ok := addrs[k]; !ok {
			addrs[k] = *a
		}
		set, ok := byPort[p]
		if !ok {
			set = map[addrKey]bool{}
			byPort[p] = set
			portOrder = append(portOrder, p)
		}
		if was, seen := set[k]; !seen || was {
			set[k] = ready
		}
	}
	for i := range subsets {
		ports := subsets[i].Ports
		if len(ports) == 0 {
			ports = []corev1.EndpointPort{noPort}
		}
		for _, p := range ports {
			for j := range subsets[i].Addresses {
				note(p, &subsets[i].Addresses[j], true)
			}
			for j := range subsets[i].NotReadyAddresses {
				note(p, &subsets[i].NotReadyAddresses[j], false)
			}
		}
	}
	setKey := func(set map[addrKey]bool) string {
		parts := make([]string, 0, len(set))
		for k, ready := range set {
			parts = append(parts, fmt.Sprintf("%s/%s/%t", k.ip, k.uid, ready))
		}
		slices.Sort(parts)
		return strings.Join(parts, ",")
	}
	type group struct {
		set   map[addrKey]bool
		ports []corev1.EndpointPort
	}
	groups := map[string]*group{}
	var order []string
	for _, p := range portOrder {
		set := byPort[p]
		k := setKey(set)
		g, ok := groups[k]
		if !ok {
			g = &group{set: set}
			groups[k] = g
			order = append(order, k)
		}
		if p != noPort {
			g.ports = append(g.ports, p)
		}
	}
	out := make([]corev1.EndpointSubset, 0, len(order))
	for _, k := range order {
		g := groups[k]
		var s corev1.EndpointSubset
		for _, ak := range slices.SortedFunc(maps.Keys(g.set), func(a, b addrKey) int {
			return cmp.Or(cmp.Compare(a.ip, b.ip), cmp.Compare(a.uid, b.uid))
		}) {
			if g.set[ak] {
				s.Addresses = append(s.Addresses, addrs[ak])
			} else {
				s.NotReadyAddresses = append(s.NotReadyAddresses, addrs[ak])
			}
		}
		slices.SortFunc(g.ports, comparePorts)
		s.Ports = g.ports
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b corev1.EndpointSubset) int {
		return cmp.Compare(subsetKey(a), subsetKey(b))
	})
	return out
}

func comparePorts(a, b corev1.EndpointPort) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
}

func subsetKey(s corev1.EndpointSubset) string {
	var b strings.Builder
	for _, p := range s.Ports {
		fmt.Fprintf(&b, "%s:%d/%s,", p.Name, p.Port, p.Protocol)
	}
	b.WriteString("|")
	for _, a := range s.Addresses {
		b.WriteString(a.IP + ",")
	}
	b.WriteString("|")
	for _, a := range s.NotReadyAddresses {
		b.WriteString(a.IP + ",")
	}
	return b.String()
}

// ignoreResourceVersion compares subsets without the pods' resourceVersions:
// a pod update nobody sees in its endpoint must not rewrite the Endpoints.
var ignoreResourceVersion = conversion.EqualitiesOrDie(
	func(a, b corev1.ObjectReference) bool {
		a.ResourceVersion, b.ResourceVersion = "", ""
		return a == b
	},
)

// Desired returns the Endpoints svc should have, given the current object
// (nil when there is none), the computed subsets and the sync's trigger
// time; write is false when current already says all of it.
func Desired(current *corev1.Endpoints, svc *corev1.Service, subsets []corev1.EndpointSubset, trigger time.Time) (ep *corev1.Endpoints, write bool) {
	if current != nil && labelsCorrect(current.Labels, svc.Labels) &&
		(ignoreResourceVersion.DeepEqual(current.Subsets, subsets) || ignoreResourceVersion.DeepEqual(Repack(current.Subsets), subsets)) &&
		capacityAnnotationCorrect(current) {
		return current, false
	}
	if current == nil {
		ep = &corev1.Endpoints{}
		ep.Name, ep.Namespace = svc.Name, svc.Namespace
	} else {
		ep = current.DeepCopy()
	}
	ep.Subsets = subsets
	ep.Labels = maps.Clone(svc.Labels)
	if ep.Labels == nil {
		ep.Labels = map[string]string{}
	}
	if servicepods.Headless(svc) {
		ep.Labels[corev1.IsHeadlessService] = ""
	} else {
		delete(ep.Labels, corev1.IsHeadlessService)
	}
	ep.Labels[LabelManagedBy] = ControllerName
	if ep.Annotations == nil {
		ep.Annotations = map[string]string{}
	}
	if trigger.IsZero() {
		delete(ep.Annotations, corev1.EndpointsLastChangeTriggerTime)
	} else {
		ep.Annotations[corev1.EndpointsLastChangeTriggerTime] = trigger.UTC().Format(time.RFC3339Nano)
	}
	if truncate(ep) {
		ep.Annotations[corev1.EndpointsOverCapacity] = truncated
	} else {
		delete(ep.Annotations, corev1.EndpointsOverCapacity)
	}
	return ep, true
}

// labelsCorrect: the Endpoints carry exactly the Service's labels plus the
// ones this controller adds.
func labelsCorrect(epLabels, svcLabels map[string]string) bool {
	if epLabels[LabelManagedBy] != ControllerName {
		return false
	}
	own := 0
	for k, v := range epLabels {
		if k == LabelManagedBy || k == corev1.IsHeadlessService {
			own++
			continue
		}
		if sv, ok := svcLabels[k]; !ok || sv != v {
			return false
		}
	}
	return len(svcLabels) == len(epLabels)-own
}

func capacityAnnotationCorrect(ep *corev1.Endpoints) bool {
	n := 0
	for _, s := range ep.Subsets {
		n += len(s.Addresses) + len(s.NotReadyAddresses)
	}
	if n > maxCapacity {
		return false
	}
	_, annotated := ep.Annotations[corev1.EndpointsOverCapacity]
	return !annotated
}

// truncate cuts ep down to maxCapacity addresses, as upstream: not-ready
// addresses go first; each subset keeps its share, rounded up.
func truncate(ep *corev1.Endpoints) bool {
	ready, notReady := 0, 0
	for _, s := range ep.Subsets {
		ready += len(s.Addresses)
		notReady += len(s.NotReadyAddresses)
	}
	if ready+notReady <= maxCapacity {
		return false
	}
	cutReady := ready > maxCapacity
	budget, total := maxCapacity-ready, notReady
	if cutReady {
		budget, total = maxCapacity, ready
	}
	left := budget
	for i := range ep.Subsets {
		s := &ep.Subsets[i]
		n := len(s.NotReadyAddresses)
		if cutReady {
			n = len(s.Addresses)
		}
		keep := min(int(math.Ceil(float64(n)/float64(total)*float64(budget))), left)
		if cutReady {
			s.Addresses = s.Addresses[:min(keep, len(s.Addresses))]
			s.NotReadyAddresses = nil
			left -= len(s.Addresses)
		} else {
			s.NotReadyAddresses = s.NotReadyAddresses[:min(keep, len(s.NotReadyAddresses))]
			left -= len(s.NotReadyAddresses)
		}
	}
	return true
}
