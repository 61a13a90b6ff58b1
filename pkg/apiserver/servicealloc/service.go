package servicealloc

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

// Keys under the etcd prefix, as upstream's /registry/ranges/...
const (
	IPPrefix   = "/ranges/serviceips/"
	PortPrefix = "/ranges/servicenodeports/"
)

var serviceKind = schema.GroupKind{Kind: "Service"}

// Services allocates Services' cluster IPs and node ports: the services
// resource's registry.Allocator.
type Services struct {
	IPs   *Allocator
	Ports *Allocator
}

// OwnerOf names the owner of what s holds.
func OwnerOf(s *corev1.Service) Owner {
	return Owner{Name: s.Namespace + "/" + s.Name, UID: s.UID}
}

// Held is what a Service holds: its cluster IPs and node ports (health
// check included).
type Held struct {
	IPs   []string
	Ports []string
}

// HeldBy returns what s holds.
func HeldBy(s *corev1.Service) Held {
	var h Held
	if s == nil {
		return h
	}
	if s.Spec.Type != corev1.ServiceTypeExternalName {
		for _, ip := range s.Spec.ClusterIPs {
			if ip != "" && ip != corev1.ClusterIPNone {
				h.IPs = appendNew(h.IPs, ip)
			}
		}
		if len(s.Spec.ClusterIPs) == 0 && s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone {
			h.IPs = appendNew(h.IPs, s.Spec.ClusterIP)
		}
	}
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 {
			h.Ports = appendNew(h.Ports, strconv.Itoa(int(p.NodePort)))
		}
	}
	if s.Spec.HealthCheckNodePort != 0 {
		h.Ports = appendNew(h.Ports, strconv.Itoa(int(s.Spec.HealthCheckNodePort)))
	}
	return h
}

func appendNew(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// serviceAllocation is one Allocate's claims and the service's old state.
type serviceAllocation struct {
	s        *Services
	owner    Owner
	ips      []string
	ports    []string
	old, new *corev1.Service
}

// Finish implements registry.Allocation.
func (a *serviceAllocation) Finish(ctx context.Context, written bool) {
	if !written {
		a.s.free(ctx, a.owner, Held{IPs: a.ips, Ports: a.ports})
		return
	}
	if a.old == nil {
		return
	}
	oldHeld, newHeld := HeldBy(a.old), HeldBy(a.new)
	a.s.free(ctx, a.owner, Held{IPs: minus(oldHeld.IPs, newHeld.IPs), Ports: minus(oldHeld.Ports, newHeld.Ports)})
}

func minus(a, b []string) []string {
	var out []string
	for _, v := range a {
		if !contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// free releases what owner held; a failure leaves a leak for the repair
// loop, not an error for a write that is over.
func (s *Services) free(ctx context.Context, owner Owner, h Held) {
	for _, ip := range h.IPs {
		if err := s.IPs.Release(ctx, ip, owner); err != nil {
			slog.Warn("cluster IP left claimed for the repair loop", "ip", ip, "service", owner.Name, "err", err)
		}
	}
	for _, p := range h.Ports {
		if err := s.Ports.Release(ctx, p, owner); err != nil {
			slog.Warn("node port left claimed for the repair loop", "port", p, "service", owner.Name, "err", err)
		}
	}
}

// Release implements registry.Allocator.
func (s *Services) Release(ctx context.Context, obj runtime.Object) {
	if svc, ok := obj.(*corev1.Service); ok {
		s.free(ctx, OwnerOf(svc), HeldBy(svc))
	}
}

// Allocate implements registry.Allocator: the IP families are defaulted
// (an IPv4 single-stack cluster), a cluster IP and node ports allocated
// where the type needs them and none was given, given ones claimed.
func (s *Services) Allocate(ctx context.Context, obj, oldObj runtime.Object, dryRun bool) (registry.Allocation, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("not a service: %T", obj)
	}
	old, _ := oldObj.(*corev1.Service)
	a := &serviceAllocation{s: s, owner: OwnerOf(svc), old: old, new: svc}
	ok = false
	defer func() {
		if !ok {
			a.Finish(ctx, false)
		}
	}()
	if err := s.allocateIPs(ctx, a, svc, old, dryRun); err != nil {
		return nil, err
	}
	if err := s.allocateNodePorts(ctx, a, svc, old, dryRun); err != nil {
		return nil, err
	}
	ok = true
	return a, nil
}

func (s *Services) allocateIPs(ctx context.Context, a *serviceAllocation, svc, old *corev1.Service, dryRun bool) error {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	headlessNoSelector := spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0
	if spec.IPFamilyPolicy == nil {
		p := corev1.IPFamilyPolicySingleStack
		if old != nil && old.Spec.IPFamilyPolicy != nil {
			p = *old.Spec.IPFamilyPolicy
		} else if headlessNoSelector {
			// As upstream: headless without a selector defaults to
			// dual-stack, whatever the cluster has.
			p = corev1.IPFamilyPolicyRequireDualStack
		}
		spec.IPFamilyPolicy = &p
	}
	var errs field.ErrorList
	if !headlessNoSelector {
		if *spec.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), spec.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
		}
		for i, f := range spec.IPFamilies {
			if f != corev1.IPv4Protocol {
				errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), f, "not configured on this cluster"))
			}
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		if headlessNoSelector && *spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
			spec.IPFamilies = append(spec.IPFamilies, corev1.IPv6Protocol)
		}
	}
	if spec.ClusterIP == corev1.ClusterIPNone {
		spec.ClusterIPs = []string{corev1.ClusterIPNone}
		return nil
	}
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
	if len(spec.ClusterIPs) > 1 {
		return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), spec.ClusterIPs,
			"this cluster is not configured for dual-stack services")})
	}
	if old != nil && spec.ClusterIP != "" && contains(HeldBy(old).IPs, spec.ClusterIP) {
		return nil // held already
	}
	if spec.ClusterIP == "" {
		ip, err := s.IPs.AllocateNext(ctx, a.owner, dryRun)
		if err != nil {
			// Upstream's words, a full range included: a 500.
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", svc.Name, err))
		}
		if !dryRun {
			a.ips = append(a.ips, ip)
		}
		spec.ClusterIP, spec.ClusterIPs = ip, []string{ip}
		return nil
	}
	spec.ClusterIPs = []string{spec.ClusterIP}
	claimed, err := s.IPs.Allocate(ctx, spec.ClusterIP, a.owner, dryRun)
	if err != nil {
		if !isRefusal(err) {
			return apierrors.NewInternalError(err)
		}
		return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), spec.ClusterIPs,
			fmt.Sprintf("failed to allocate IP %v: %v", spec.ClusterIP, err))})
	}
	if claimed {
		a.ips = append(a.ips, spec.ClusterIP)
	}
	return nil
}

// needsNodePorts reports whether the type allocates node ports: NodePort,
// and LoadBalancer unless allocateLoadBalancerNodePorts is false.
func needsNodePorts(s *corev1.Service) bool {
	switch s.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return s.Spec.AllocateLoadBalancerNodePorts == nil || *s.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

// needsHealthCheck reports whether s gets a health check node port:
// a LoadBalancer with externalTrafficPolicy Local.
func needsHealthCheck(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func (s *Services) allocateNodePorts(ctx context.Context, a *serviceAllocation, svc, old *corev1.Service, dryRun bool) error {
	var oldPorts []string
	if old != nil {
		oldPorts = HeldBy(old).Ports
	}
	// claim takes a requested port unless the service holds it already
	// (or took it for another of its ports in this request).
	claim := func(port int32) error {
		v := strconv.Itoa(int(port))
		if contains(oldPorts, v) || contains(a.ports, v) {
			return nil
		}
		claimed, err := s.Ports.Allocate(ctx, v, a.owner, dryRun)
		if claimed {
			a.ports = append(a.ports, v)
		}
		return err
	}
	byPort := map[int32]int32{}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.NodePort == 0 && !needsNodePorts(svc) {
			continue
		}
		path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
		if p.NodePort == 0 {
			// As upstream: ports of one number (TCP and UDP) share a node
			// port, a requested one first.
			if np := byPort[p.Port]; np != 0 {
				p.NodePort = np
				continue
			}
			if np := requestedNodePort(svc.Spec.Ports[i:], p.Port); np != 0 {
				p.NodePort = np
			}
		}
		if p.NodePort != 0 {
			if err := claim(p.NodePort); err != nil {
				if !isRefusal(err) {
					return apierrors.NewInternalError(err)
				}
				return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(path, p.NodePort, err.Error())})
			}
			if byPort[p.Port] == 0 {
				byPort[p.Port] = p.NodePort
			}
			continue
		}
		v, err := s.Ports.AllocateNext(ctx, a.owner, dryRun)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
		}
		if !dryRun {
			a.ports = append(a.ports, v)
		}
		np, _ := strconv.Atoi(v)
		p.NodePort = int32(np)
		byPort[p.Port] = p.NodePort
	}
	if !needsHealthCheck(svc) {
		return nil
	}
	if hc := svc.Spec.HealthCheckNodePort; hc != 0 {
		if err := claim(hc); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %v", hc, err))
		}
		return nil
	}
	v, err := s.Ports.AllocateNext(ctx, a.owner, dryRun)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a HealthCheck NodePort %v: %v", 0, err))
	}
	if !dryRun {
		a.ports = append(a.ports, v)
	}
	hc, _ := strconv.Atoi(v)
	svc.Spec.HealthCheckNodePort = int32(hc)
	return nil
}

// requestedNodePort returns the node port a later port of the same number
// asks for, 0 when none does.
func requestedNodePort(ports []corev1.ServicePort, port int32) int32 {
	for _, p := range ports {
		if p.Port == port && p.NodePort != 0 {
			return p.NodePort
		}
	}
	return 0
}
