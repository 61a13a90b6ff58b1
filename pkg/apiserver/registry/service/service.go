// Package service holds the Service strategy: defaults, spec validation,
// the cluster IP kept across updates, the status subresource and the table.
// Cluster IPs and node ports are allocated by servicealloc, the resource's
// Allocator, once validation passed.
package service

import (
	"context"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

// Resource describes services; c is the clock the AGE column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "services",
		Singular:     "service",
		Kind:         "Service",
		Namespaced:   true,
		ShortNames:   []string{"svc"},
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &corev1.Service{} },
		NewList:      func() runtime.Object { return &corev1.ServiceList{} },
		Strategy:     strategy{},
		// As upstream: a PUT of a missing object creates it.
		AllowCreateOnUpdate: true,
		Status:              statusStrategy{},
		Table:               table(c),
		Attrs:               Attrs,
		// A service name becomes a DNS label. Upstream 1.36 lets it start
		// with a digit (RelaxedServiceNameValidation, on by default): an
		// RFC 1123 label, no longer an RFC 1035 one.
		ValidateName: apimachineryvalidation.NameIsDNSLabel,
		// As upstream's services: a DELETE answers with the service.
		ReturnDeletedObject: true,
	}
}

// Attrs exposes spec.clusterIP and spec.type to field selectors.
func Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return nil, nil, fmt.Errorf("not a service: %T", obj)
	}
	return labels.Set(s.Labels), fields.Set{
		"metadata.name":      s.Name,
		"metadata.namespace": s.Namespace,
		"spec.clusterIP":     s.Spec.ClusterIP,
		"spec.type":          string(s.Spec.Type),
	}, nil
}

type strategy struct{}

func (strategy) Default(obj runtime.Object) {
	if s, ok := obj.(*corev1.Service); ok {
		Default(s)
	}
}

// Default fills a service's defaults as upstream's defaulting does.
func Default(s *corev1.Service) {
	spec := &s.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		if cfg := spec.SessionAffinityConfig; cfg == nil || cfg.ClientIP == nil || cfg.ClientIP.TimeoutSeconds == nil {
			timeout := corev1.DefaultClientIPServiceAffinitySeconds
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(s) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil && spec.Type != corev1.ServiceTypeExternalName {
		p := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &p
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		t := true
		spec.AllocateLoadBalancerNodePorts = &t
	}
}

func externallyAccessible(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer || s.Spec.Type == corev1.ServiceTypeNodePort ||
		(s.Spec.Type == corev1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	s.Status = corev1.ServiceStatus{}
	s.Generation = 1
	normalizeClusterIPs(s)
}

// normalizeClusterIPs mirrors clusterIP into clusterIPs and records the IP
// family, as allocation would upstream.
func normalizeClusterIPs(s *corev1.Service) {
	spec := &s.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
	if len(spec.IPFamilies) == 0 {
		for _, ip := range spec.ClusterIPs {
			if parsed := net.ParseIP(ip); parsed != nil {
				fam := corev1.IPv6Protocol
				if parsed.To4() != nil {
					fam = corev1.IPv4Protocol
				}
				spec.IPFamilies = append(spec.IPFamilies, fam)
			}
		}
	}
	if spec.IPFamilyPolicy == nil && len(spec.IPFamilies) > 0 {
		p := corev1.IPFamilyPolicySingleStack
		if len(spec.IPFamilies) > 1 {
			p = corev1.IPFamilyPolicyRequireDualStack
		}
		spec.IPFamilyPolicy = &p
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return registry.WrongType("service", obj)
	}
	return Validate(s, nil)
}

// PrepareForUpdate keeps status, carries over the cluster IPs and node ports
// a client left out (kubectl apply of a manifest without them), and bumps
// the generation on spec changes.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	s, ok1 := obj.(*corev1.Service)
	o, ok2 := old.(*corev1.Service)
	if !ok1 || !ok2 {
		return
	}
	s.Status = o.Status
	dropTypeDependentFields(s, o)
	if s.Spec.Type != corev1.ServiceTypeExternalName && o.Spec.Type != corev1.ServiceTypeExternalName {
		if s.Spec.ClusterIP == "" && len(s.Spec.ClusterIPs) == 0 {
			s.Spec.ClusterIP = o.Spec.ClusterIP
			s.Spec.ClusterIPs = append([]string(nil), o.Spec.ClusterIPs...)
			if len(s.Spec.IPFamilies) == 0 {
				s.Spec.IPFamilies = append([]corev1.IPFamily(nil), o.Spec.IPFamilies...)
			}
			if s.Spec.IPFamilyPolicy == nil && o.Spec.IPFamilyPolicy != nil {
				p := *o.Spec.IPFamilyPolicy
				s.Spec.IPFamilyPolicy = &p
			}
		}
		normalizeClusterIPs(s)
	}
	if s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for i := range s.Spec.Ports {
			p := &s.Spec.Ports[i]
			if p.NodePort != 0 {
				continue
			}
			for _, op := range o.Spec.Ports {
				if op.Port == p.Port && op.Protocol == p.Protocol {
					p.NodePort = op.NodePort
					break
				}
			}
		}
		if s.Spec.HealthCheckNodePort == 0 {
			s.Spec.HealthCheckNodePort = o.Spec.HealthCheckNodePort
		}
	}
	s.Generation = registry.NextGeneration(o.Generation, !apiequality.Semantic.DeepEqual(s.Spec, o.Spec))
}

// dropTypeDependentFields clears, on a type change, the fields the new
// type cannot have that the user left as they were (so were likely filled
// in for the old type), as upstream: patching a ClusterIP service to
// ExternalName, or a LoadBalancer to ClusterIP, then just works instead of
// being refused for the leftover cluster IP, node ports or policies.
func dropTypeDependentFields(s, o *corev1.Service) {
	needsClusterIP := func(svc *corev1.Service) bool { return svc.Spec.Type != corev1.ServiceTypeExternalName }
	needsNodePorts := func(svc *corev1.Service) bool {
		return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	}
	if needsClusterIP(o) && !needsClusterIP(s) {
		if s.Spec.ClusterIP == o.Spec.ClusterIP && (len(s.Spec.ClusterIPs) == 0 || apiequality.Semantic.DeepEqual(s.Spec.ClusterIPs, o.Spec.ClusterIPs)) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
		}
		if len(s.Spec.IPFamilies) == 0 || apiequality.Semantic.DeepEqual(s.Spec.IPFamilies, o.Spec.IPFamilies) {
			s.Spec.IPFamilies = nil
		}
		if s.Spec.IPFamilyPolicy == nil || apiequality.Semantic.DeepEqual(s.Spec.IPFamilyPolicy, o.Spec.IPFamilyPolicy) {
			s.Spec.IPFamilyPolicy = nil
		}
	}
	if needsNodePorts(o) && !needsNodePorts(s) && sameNodePorts(s, o) {
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckPort(o) && !needsHealthCheckPort(s) && (s.Spec.HealthCheckNodePort == 0 || s.Spec.HealthCheckNodePort == o.Spec.HealthCheckNodePort) {
		s.Spec.HealthCheckNodePort = 0
	}
	if o.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if a, b := s.Spec.AllocateLoadBalancerNodePorts, o.Spec.AllocateLoadBalancerNodePorts; a != nil && b != nil && *a == *b {
			s.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if apiequality.Semantic.DeepEqual(s.Spec.LoadBalancerClass, o.Spec.LoadBalancerClass) {
			s.Spec.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(o) && !externallyAccessible(s) && s.Spec.ExternalTrafficPolicy == o.Spec.ExternalTrafficPolicy {
		s.Spec.ExternalTrafficPolicy = ""
	}
}

// needsHealthCheckPort reports whether svc has a health check node port:
// a LoadBalancer with externalTrafficPolicy Local.
func needsHealthCheckPort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// sameNodePorts reports whether every port's node port is as it was (or
// left out, to be carried over).
func sameNodePorts(s, o *corev1.Service) bool {
	for _, p := range s.Spec.Ports {
		if p.NodePort == 0 {
			continue
		}
		found := false
		for _, op := range o.Spec.Ports {
			if op.Port == p.Port && op.Protocol == p.Protocol && op.NodePort == p.NodePort {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	s, ok1 := obj.(*corev1.Service)
	o, ok2 := old.(*corev1.Service)
	if !ok1 || !ok2 {
		return registry.WrongType("service", obj)
	}
	errs := Validate(s, o.Spec.LoadBalancerSourceRanges)
	if s.Spec.Type != corev1.ServiceTypeExternalName && o.Spec.Type != corev1.ServiceTypeExternalName &&
		len(o.Spec.ClusterIPs) > 0 && !apiequality.Semantic.DeepEqual(s.Spec.ClusterIPs, o.Spec.ClusterIPs) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), s.Spec.ClusterIPs, "may not change once set"))
	}
	if needsHealthCheckPort(s) && needsHealthCheckPort(o) && s.Spec.HealthCheckNodePort != o.Spec.HealthCheckNodePort {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), "field is immutable"))
	}
	return errs
}

type statusStrategy struct{}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	s, ok1 := obj.(*corev1.Service)
	o, ok2 := old.(*corev1.Service)
	if ok1 && ok2 {
		s.Spec = o.Spec
		s.Generation = o.Generation
	}
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return registry.WrongType("service", obj)
	}
	var errs field.ErrorList
	ingPath := field.NewPath("status", "loadBalancer", "ingress")
	for i, ing := range s.Status.LoadBalancer.Ingress {
		if ing.IP != "" && net.ParseIP(ing.IP) == nil {
			errs = append(errs, field.Invalid(ingPath.Index(i).Child("ip"), ing.IP, "must be a valid IP address"))
		}
	}
	return errs
}
