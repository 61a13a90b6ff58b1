package service

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Validate checks a service's spec as upstream does, short of IP
// allocation: ports, type, affinity, selector and IPs. The name is checked by
// the handler through Resource.ValidateName. oldSourceRanges (on update,
// the service's current loadBalancerSourceRanges) pass even if today's
// strict CIDR parsing would refuse them.
func Validate(s *corev1.Service, oldSourceRanges []string) field.ErrorList {
	var errs field.ErrorList
	spec := &s.Spec
	specPath := field.NewPath("spec")
	headless := spec.ClusterIP == corev1.ClusterIPNone
	switch spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	case corev1.ServiceTypeExternalName:
		p := specPath.Child("externalName")
		if spec.ExternalName == "" {
			errs = append(errs, field.Required(p, ""))
		} else {
			errs = append(errs, validation.Messages(p, spec.ExternalName, utilvalidation.IsDNS1123Subdomain(spec.ExternalName))...)
		}
		if spec.ClusterIP != "" && !headless {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIP"), "may not be set for ExternalName services"))
		}
	case "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(specPath.Child("type"), spec.Type, []string{
			string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeExternalName),
			string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort)}))
	}
	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	if headless && (spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer) {
		errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIP,
			fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
	}
	errs = append(errs, ports(s, specPath.Child("ports"))...)

	if spec.ClusterIP != "" && !headless && net.ParseIP(spec.ClusterIP) == nil {
		errs = append(errs, field.Invalid(specPath.Child("clusterIP"), spec.ClusterIP, "must be empty, 'None', or a valid IP address"))
	}
	for i, ip := range spec.ClusterIPs {
		if ip != corev1.ClusterIPNone && net.ParseIP(ip) == nil {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(i), ip, "must be a valid IP address"))
		}
	}
	if len(spec.ClusterIPs) > 0 && spec.ClusterIP != "" && spec.ClusterIPs[0] != spec.ClusterIP {
		errs = append(errs, field.Invalid(specPath.Child("clusterIPs"), spec.ClusterIPs, "first value must match `clusterIP`"))
	}
	for i, ip := range spec.ExternalIPs {
		if net.ParseIP(ip) == nil {
			errs = append(errs, field.Invalid(specPath.Child("externalIPs").Index(i), ip, "must be a valid IP address"))
		}
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone, corev1.ServiceAffinityClientIP:
	case "":
		errs = append(errs, field.Required(specPath.Child("sessionAffinity"), ""))
	default:
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity,
			[]string{string(corev1.ServiceAffinityClientIP), string(corev1.ServiceAffinityNone)}))
	}
	if cfg := spec.SessionAffinityConfig; cfg != nil && cfg.ClientIP != nil && cfg.ClientIP.TimeoutSeconds != nil {
		if t := *cfg.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPAffinitySeconds {
			errs = append(errs, field.Invalid(specPath.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), t,
				fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds)))
		}
	}
	if spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	errs = append(errs, ipFamilies(spec, specPath)...)
	if c := spec.LoadBalancerClass; c != nil {
		if spec.Type == corev1.ServiceTypeLoadBalancer {
			errs = append(errs, validation.Messages(specPath.Child("loadBalancerClass"), *c, utilvalidation.IsQualifiedName(*c))...)
		} else {
			errs = append(errs, field.Forbidden(specPath.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
		}
	}
	if p := spec.InternalTrafficPolicy; p != nil && *p != corev1.ServiceInternalTrafficPolicyCluster && *p != corev1.ServiceInternalTrafficPolicyLocal {
		errs = append(errs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *p,
			[]string{string(corev1.ServiceInternalTrafficPolicyCluster), string(corev1.ServiceInternalTrafficPolicyLocal)}))
	}
	if d := spec.TrafficDistribution; d != nil {
		switch *d {
		case corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode:
		default:
			errs = append(errs, field.NotSupported(specPath.Child("trafficDistribution"), *d, []string{
				corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode}))
		}
	}
	if len(spec.LoadBalancerSourceRanges) > 0 {
		// Upstream spells the field with a capital L in these errors.
		p := specPath.Child("LoadBalancerSourceRanges")
		if spec.Type != corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
		}
		for i, r := range spec.LoadBalancerSourceRanges {
			// Space-padded values are allowed, as upstream (a leftover of
			// the annotation they came from).
			errs = append(errs, utilvalidation.IsValidCIDRForLegacyField(p.Index(i), strings.TrimSpace(r), true, oldSourceRanges)...)
		}
	}
	// A health check node port left out is allocated after validation.
	if hc := spec.HealthCheckNodePort; hc != 0 {
		if spec.Type != corev1.ServiceTypeLoadBalancer || spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), hc,
				"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		} else {
			errs = append(errs, validation.Messages(specPath.Child("healthCheckNodePort"), hc, utilvalidation.IsValidPortNum(int(hc)))...)
		}
	}
	if p := spec.ExternalTrafficPolicy; p != "" {
		if !externallyAccessible(s) {
			errs = append(errs, field.Invalid(specPath.Child("externalTrafficPolicy"), p,
				"may only be set for externally-accessible services"))
		} else if p != corev1.ServiceExternalTrafficPolicyCluster && p != corev1.ServiceExternalTrafficPolicyLocal {
			errs = append(errs, field.NotSupported(specPath.Child("externalTrafficPolicy"), p,
				[]string{string(corev1.ServiceExternalTrafficPolicyCluster), string(corev1.ServiceExternalTrafficPolicyLocal)}))
		}
	}
	return errs
}

func ports(s *corev1.Service, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	seen := map[duplicatePort]bool{}
	for i, p := range s.Spec.Ports {
		pp := fldPath.Index(i)
		if len(s.Spec.Ports) > 1 && p.Name == "" {
			errs = append(errs, field.Required(pp.Child("name"), ""))
		}
		if p.Name != "" {
			errs = append(errs, validation.Messages(pp.Child("name"), p.Name, utilvalidation.IsDNS1123Label(p.Name))...)
			if names[p.Name] {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		errs = append(errs, validation.Messages(pp.Child("port"), p.Port, utilvalidation.IsValidPortNum(int(p.Port)))...)
		errs = append(errs, validation.Protocol(p.Protocol, pp.Child("protocol"))...)
		if p.TargetPort.Type == intstr.String {
			errs = append(errs, validation.Messages(pp.Child("targetPort"), p.TargetPort.StrVal, utilvalidation.IsValidPortName(p.TargetPort.StrVal))...)
		} else {
			errs = append(errs, validation.Messages(pp.Child("targetPort"), p.TargetPort.IntVal, utilvalidation.IsValidPortNum(int(p.TargetPort.IntVal)))...)
		}
		if p.NodePort != 0 {
			if s.Spec.Type == corev1.ServiceTypeClusterIP || s.Spec.Type == corev1.ServiceTypeExternalName {
				errs = append(errs, field.Forbidden(pp.Child("nodePort"), fmt.Sprintf("may not be used when `type` is '%s'", s.Spec.Type)))
			} else {
				errs = append(errs, validation.Messages(pp.Child("nodePort"), p.NodePort, utilvalidation.IsValidPortNum(int(p.NodePort)))...)
			}
		}
		key := duplicatePort{Protocol: string(p.Protocol), Port: p.Port}
		if seen[key] {
			errs = append(errs, field.Duplicate(pp, key))
		}
		seen[key] = true
	}
	return errs
}

// ipFamilies checks the family policy and that each cluster IP is of the
// family listed at its index, as upstream.
func ipFamilies(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p := spec.IPFamilyPolicy; p != nil {
		switch {
		case spec.Type == corev1.ServiceTypeExternalName:
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		case *p != corev1.IPFamilyPolicySingleStack && *p != corev1.IPFamilyPolicyPreferDualStack && *p != corev1.IPFamilyPolicyRequireDualStack:
			errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *p, []string{
				string(corev1.IPFamilyPolicyPreferDualStack), string(corev1.IPFamilyPolicyRequireDualStack), string(corev1.IPFamilyPolicySingleStack)}))
		}
	}
	for i, ip := range spec.ClusterIPs {
		parsed := net.ParseIP(ip)
		if i >= len(spec.IPFamilies) || parsed == nil {
			continue
		}
		want := spec.IPFamilies[i]
		if is4 := parsed.To4() != nil; (want == corev1.IPv4Protocol) != is4 && (want == corev1.IPv4Protocol || want == corev1.IPv6Protocol) {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(i), ip,
				fmt.Sprintf("expected an %s value as indicated by `ipFamilies[%v]`", want, i)))
		}
	}
	return errs
}

// duplicatePort is the protocol and port two ports may not share, printed
// in errors as upstream prints it: its internal ServicePort, whose fields
// have no JSON names, with only those two set.
type duplicatePort struct {
	Name        string
	Protocol    string
	AppProtocol *string
	Port        int32
	TargetPort  intstr.IntOrString
	NodePort    int32
}

// maxClientIPAffinitySeconds is upstream's cap on session stickiness: a day.
const maxClientIPAffinitySeconds = 86400
