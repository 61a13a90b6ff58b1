// Package servicepods holds what the Endpoints and EndpointSlice controllers
// share: which pods stand behind a Service, the port each one serves a
// Service port on, the last-change-trigger-time bookkeeping, and the event
// handlers that map pod changes to the Services they touch.
package servicepods

import (
	"net/netip"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Managed reports whether the endpoint controllers produce endpoints for svc:
// ExternalName Services and Services without a selector (the `kubernetes`
// Service among them) are left to whoever writes their endpoints.
func Managed(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.Selector != nil
}

// Selector is the Service's pod selector; only meaningful when Managed.
func Selector(svc *corev1.Service) labels.Selector {
	return labels.Set(svc.Spec.Selector).AsSelectorPreValidated()
}

// Include reports whether pod can be an endpoint at all: it has an IP, has
// not finished, and (unless includeTerminating) is not being deleted.
func Include(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// SetsHostname reports whether the pod's hostname is published on its
// endpoint: it must have one and name this Service as its subdomain.
func SetsHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace
}

// ResolvePort returns the port pod serves sp's targetPort on: a number as it
// is, a name looked up among the ports of the pod's containers and sidecars
// with the same protocol. ok is false when a name matches no port.
func ResolvePort(pod *corev1.Pod, sp *corev1.ServicePort) (port int32, ok bool) {
	tp := sp.TargetPort
	if tp.Type == intstr.Int {
		if tp.IntVal == 0 {
			return sp.Port, true // an unset targetPort means the Service port
		}
		return tp.IntVal, true
	}
	match := func(cs []corev1.Container, sidecarsOnly bool) (int32, bool) {
		for _, c := range cs {
			if sidecarsOnly && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				continue
			}
			for _, p := range c.Ports {
				proto := p.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				if p.Name == tp.StrVal && proto == Protocol(sp) {
					return p.ContainerPort, true
				}
			}
		}
		return 0, false
	}
	if p, ok := match(pod.Spec.Containers, false); ok {
		return p, true
	}
	return match(pod.Spec.InitContainers, true)
}

// Protocol is sp's protocol, TCP when unset (the apiserver's default).
func Protocol(sp *corev1.ServicePort) corev1.Protocol {
	if sp.Protocol == "" {
		return corev1.ProtocolTCP
	}
	return sp.Protocol
}

// IPs returns the pod's addresses of one family, in canonical form.
func IPs(pod *corev1.Pod, ipv6 bool) []string {
	raw := make([]string, 0, len(pod.Status.PodIPs)+1)
	for _, ip := range pod.Status.PodIPs {
		raw = append(raw, ip.IP)
	}
	if len(raw) == 0 && pod.Status.PodIP != "" {
		raw = append(raw, pod.Status.PodIP)
	}
	var out []string
	for _, s := range raw {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		a = a.Unmap()
		if a.Is6() == ipv6 {
			out = append(out, a.String())
		}
	}
	return out
}

// WantsIPv6 is the family of a Service's endpoints: its first ipFamily, else
// its cluster IP's, else (headless, not yet defaulted) the pod's.
func WantsIPv6(svc *corev1.Service, pod *corev1.Pod) bool {
	if len(svc.Spec.IPFamilies) > 0 {
		return svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	}
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		a, err := netip.ParseAddr(ip)
		return err == nil && a.Is6() && !a.Is4In6()
	}
	a, err := netip.ParseAddr(pod.Status.PodIP)
	return err == nil && a.Is6() && !a.Is4In6()
}

// Headless reports a Service without a cluster IP.
func Headless(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone
}

// TriggerTimes computes the endpoints.kubernetes.io/last-change-trigger-time
// of a Service's endpoints as upstream does: the earliest change (a pod's
// Ready transition, the Service's creation) not exported by an earlier sync.
type TriggerTimes struct {
	mu     sync.Mutex
	states map[string]triggerState
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time
}

// Compute returns the trigger time for the sync of Service key with pods,
// and remembers their times; zero when nothing changed since the last call.
func (t *TriggerTimes) Compute(key string, svc *corev1.Service, pods []*corev1.Pod) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.states == nil {
		t.states = map[string]triggerState{}
	}
	prev, known := t.states[key]
	var first time.Time
	earliest := func(ts time.Time) {
		if first.IsZero() || ts.Before(first) {
			first = ts
		}
	}
	now := triggerState{service: svc.CreationTimestamp.Time, pods: make(map[string]time.Time, len(pods))}
	for _, p := range pods {
		c := controllerutil.PodReadyCondition(p)
		if c == nil || c.LastTransitionTime.IsZero() {
			continue
		}
		ts := c.LastTransitionTime.Time
		now.pods[p.Name] = ts
		if ts.After(prev.pods[p.Name]) {
			earliest(ts)
		}
	}
	if now.service.After(prev.service) {
		earliest(now.service)
	}
	t.states[key] = now
	if !known {
		return svc.CreationTimestamp.Time
	}
	return first
}

// Forget drops what is known about Service key (it was deleted).
func (t *TriggerTimes) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, key)
}

// endpointChanged reports a pod change an endpoint can reflect.
func endpointChanged(a, b *corev1.Pod) bool {
	return !reflect.DeepEqual(a.Labels, b.Labels) ||
		a.Spec.Hostname != b.Spec.Hostname || a.Spec.Subdomain != b.Spec.Subdomain || a.Spec.NodeName != b.Spec.NodeName ||
		(a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) ||
		controllerutil.IsPodReady(a) != controllerutil.IsPodReady(b) ||
		a.Status.Phase != b.Status.Phase || a.Status.PodIP != b.Status.PodIP ||
		!reflect.DeepEqual(a.Status.PodIPs, b.Status.PodIPs)
}

// ServicesFor returns the keys of the Services whose endpoints pod may be
// in: those of its namespace whose selector matches its labels.
func ServicesFor(services corelisters.ServiceLister, pod *corev1.Pod) []string {
	svcs, err := services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, s := range svcs {
		if Managed(s) && Selector(s).Matches(labels.Set(pod.Labels)) {
			keys = append(keys, pod.Namespace+"/"+s.Name)
		}
	}
	return keys
}

// PodHandler queues the keys of the Services in the pod's namespace whose
// selector matches the pod, before and after a change; updates that no
// endpoint can show are ignored.
func PodHandler(services corelisters.ServiceLister, q controllerutil.Queue) cache.ResourceEventHandler {
	enqueue := func(p *corev1.Pod) {
		for _, key := range ServicesFor(services, p) {
			q.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				enqueue(p)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			a, okA := oldObj.(*corev1.Pod)
			b, okB := newObj.(*corev1.Pod)
			if !okA || !okB || a.ResourceVersion == b.ResourceVersion || !endpointChanged(a, b) {
				return
			}
			enqueue(b)
			if !reflect.DeepEqual(a.Labels, b.Labels) {
				enqueue(a)
			}
		},
		DeleteFunc: func(obj any) {
			if p, ok := controllerutil.FromDeleted[*corev1.Pod](obj); ok {
				enqueue(p)
			}
		},
	}
}
