// Package endpointslice holds the rules for discovery.k8s.io/v1
// EndpointSlices: the addresses behind a Service in slices of at most 1000
// endpoints, what kube-lite-proxy and CoreDNS read, and their table.
package endpointslice

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/endpoints"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Limits, as upstream's validation.
const (
	maxEndpoints      = 1000
	maxAddresses      = 100
	maxPorts          = 20000
	maxTopologyLabels = 16
	maxHints          = 8
)

// Resource describes endpointslices; c is the clock the AGE column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: discoveryv1.SchemeGroupVersion,
		Name:         "endpointslices",
		Singular:     "endpointslice",
		Kind:         "EndpointSlice",
		Namespaced:   true,
		New:          func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList:      func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
		Strategy:     strategy{},
		Table:        table(c),
	}
}

type strategy struct{}

// Default names unnamed ports "" and gives them TCP, as upstream's
// defaulting.
func (strategy) Default(obj runtime.Object) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			p.Name = new(string)
		}
		if p.Protocol == nil {
			tcp := corev1.ProtocolTCP
			p.Protocol = &tcp
		}
	}
}

// PrepareForCreate starts the generation, as upstream.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
		s.Generation = 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return registry.WrongType("endpointslice", obj)
	}
	return Validate(s, nil)
}

// PrepareForUpdate bumps the generation when anything but metadata
// changed, as upstream.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	s, ok1 := obj.(*discoveryv1.EndpointSlice)
	o, ok2 := old.(*discoveryv1.EndpointSlice)
	if !ok1 || !ok2 {
		return
	}
	changed := s.AddressType != o.AddressType || !apiequality.Semantic.DeepEqual(s.Endpoints, o.Endpoints) || !apiequality.Semantic.DeepEqual(s.Ports, o.Ports)
	s.Generation = registry.NextGeneration(o.Generation, changed)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	s, ok1 := obj.(*discoveryv1.EndpointSlice)
	o, ok2 := old.(*discoveryv1.EndpointSlice)
	if !ok1 || !ok2 {
		return registry.WrongType("endpointslice", obj)
	}
	errs := Validate(s, o)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.AddressType, o.AddressType, field.NewPath("addressType"))...)
	return errs
}

var (
	addressTypes = sets.New(string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6), string(discoveryv1.AddressTypeFQDN))
	protocols    = sets.New(string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP))
)

// Validate checks a slice as upstream; old (nil on create) lets endpoints
// that were stored before stricter rules pass unchanged.
func Validate(s, old *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	switch {
	case s.AddressType == "":
		errs = append(errs, field.Required(field.NewPath("addressType"), ""))
	case !addressTypes.Has(string(s.AddressType)):
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), s.AddressType, sets.List(addressTypes)))
	}
	errs = append(errs, validatePorts(s.Ports, field.NewPath("ports"))...)
	epErrs := validateEndpoints(s.Endpoints, s.AddressType, field.NewPath("endpoints"))
	if len(epErrs) > 0 && old != nil && apiequality.Semantic.DeepEqual(old.Endpoints, s.Endpoints) {
		epErrs = nil
	}
	return append(errs, epErrs...)
}

func validateEndpoints(eps []discoveryv1.Endpoint, addrType discoveryv1.AddressType, path *field.Path) field.ErrorList {
	if len(eps) > maxEndpoints {
		return field.ErrorList{field.TooMany(path, len(eps), maxEndpoints)}
	}
	var errs field.ErrorList
	for i := range eps {
		ep := &eps[i]
		idx := path.Index(i)
		addrPath := idx.Child("addresses")
		if len(ep.Addresses) == 0 {
			errs = append(errs, field.Required(addrPath, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxAddresses {
			errs = append(errs, field.TooMany(addrPath, len(ep.Addresses), maxAddresses))
		}
		for j, a := range ep.Addresses {
			errs = append(errs, validateAddress(a, addrType, addrPath, addrPath.Index(j))...)
		}
		if ep.NodeName != nil {
			errs = append(errs, validation.Messages(idx.Child("nodeName"), *ep.NodeName, utilvalidation.IsDNS1123Subdomain(*ep.NodeName))...)
		}
		topo := idx.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxTopologyLabels {
			errs = append(errs, field.TooMany(topo, len(ep.DeprecatedTopology), maxTopologyLabels))
		}
		errs = append(errs, metav1validation.ValidateLabels(ep.DeprecatedTopology, topo)...)
		if ep.Hostname != nil {
			errs = append(errs, validation.DNSLabel(*ep.Hostname, idx.Child("hostname"))...)
		}
		if ep.Hints != nil {
			errs = append(errs, validateHints(ep.Hints, idx.Child("hints"))...)
		}
	}
	return errs
}

func validateAddress(a string, addrType discoveryv1.AddressType, listPath, path *field.Path) field.ErrorList {
	switch addrType {
	case discoveryv1.AddressTypeIPv4:
		if errs := utilvalidation.IsValidIPForLegacyField(path, a, false, nil); len(errs) > 0 {
			return errs
		}
		var errs field.ErrorList
		if ip, err := netip.ParseAddr(a); err != nil || !ip.Unmap().Is4() || strings.Contains(a, ":") {
			errs = append(errs, field.Invalid(listPath, a, "must be an IPv4 address"))
		}
		return append(errs, endpoints.EndpointIP(a, path)...)
	case discoveryv1.AddressTypeIPv6:
		if errs := utilvalidation.IsValidIP(path, a); len(errs) > 0 {
			return errs
		}
		var errs field.ErrorList
		if !strings.Contains(a, ":") {
			errs = append(errs, field.Invalid(listPath, a, "must be an IPv6 address"))
		}
		return append(errs, endpoints.EndpointIP(a, path)...)
	case discoveryv1.AddressTypeFQDN:
		return utilvalidation.IsFullyQualifiedDomainName(path, a)
	}
	return nil
}

func validatePorts(ports []discoveryv1.EndpointPort, path *field.Path) field.ErrorList {
	if len(ports) > maxPorts {
		return field.ErrorList{field.TooMany(path, len(ports), maxPorts)}
	}
	var errs field.ErrorList
	var names []string
	for i, p := range ports {
		idx := path.Index(i)
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if name != "" {
			errs = append(errs, validation.DNSLabel(name, idx.Child("name"))...)
		}
		if slices.Contains(names, name) {
			errs = append(errs, field.Duplicate(idx.Child("name"), p.Name))
		} else {
			names = append(names, name)
		}
		switch {
		case p.Protocol == nil:
			errs = append(errs, field.Required(idx.Child("protocol"), ""))
		case !protocols.Has(string(*p.Protocol)):
			errs = append(errs, field.NotSupported(idx.Child("protocol"), *p.Protocol, sets.List(protocols)))
		}
		if p.AppProtocol != nil {
			errs = append(errs, validation.Messages(idx.Child("appProtocol"), *p.AppProtocol, utilvalidation.IsQualifiedName(*p.AppProtocol))...)
		}
		if p.Port != nil {
			errs = append(errs, validation.Messages(idx.Child("port"), *p.Port, utilvalidation.IsValidPortNum(int(*p.Port)))...)
		}
	}
	return errs
}

func validateHints(h *discoveryv1.EndpointHints, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	zones := path.Child("forZones")
	if len(h.ForZones) > maxHints {
		return field.ErrorList{field.TooMany(zones, len(h.ForZones), maxHints)}
	}
	seen := sets.New[string]()
	for i, z := range h.ForZones {
		p := zones.Index(i).Child("name")
		if seen.Has(z.Name) {
			errs = append(errs, field.Duplicate(p, z.Name))
		}
		seen.Insert(z.Name)
		errs = append(errs, validation.Messages(p, z.Name, utilvalidation.IsValidLabelValue(z.Name))...)
	}
	nodes := path.Child("forNodes")
	if len(h.ForNodes) > maxHints {
		return append(errs, field.TooMany(nodes, len(h.ForNodes), maxHints))
	}
	seen = sets.New[string]()
	for i, n := range h.ForNodes {
		p := nodes.Index(i).Child("name")
		if seen.Has(n.Name) {
			errs = append(errs, field.Duplicate(p, n.Name))
		}
		seen.Insert(n.Name)
		errs = append(errs, validation.Messages(p, n.Name, utilvalidation.IsDNS1123Subdomain(n.Name))...)
	}
	return errs
}

func table(c clock.PassiveClock) registry.TableConvertor {
	docs := discoveryv1.EndpointSlice{}.SwaggerDoc()
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("AddressType", "string", 0, docs["addressType"]),
		tableutil.Column("Ports", "string", 0, docs["ports"]),
		tableutil.Column("Endpoints", "string", 0, docs["endpoints"]),
		tableutil.AgeColumn(),
	}
	return tableutil.New(cols, func(s *discoveryv1.EndpointSlice) []interface{} {
		return []interface{}{s.Name, string(s.AddressType), formatPorts(s.Ports), formatEndpoints(s.Endpoints), tableutil.Age(s.CreationTimestamp, c.Now())}
	})
}

// listCell shows at most three values and how many more, "<unset>" for
// none, as kubectl.
const listMax = 3

func listCell(list []string, count int) string {
	out := strings.Join(list, ",")
	if count > listMax {
		return fmt.Sprintf("%s + %d more...", out, count-listMax)
	}
	if out == "" {
		return "<unset>"
	}
	return out
}

func formatPorts(ports []discoveryv1.EndpointPort) string {
	var list []string
	for _, p := range ports {
		if len(list) == listMax {
			break
		}
		v := "*"
		if p.Port != nil {
			v = strconv.Itoa(int(*p.Port))
		} else if p.Name != nil {
			v = *p.Name
		}
		list = append(list, v)
	}
	return listCell(list, len(ports))
}

func formatEndpoints(eps []discoveryv1.Endpoint) string {
	var list []string
	count := 0
	for _, ep := range eps {
		for _, a := range ep.Addresses {
			if len(list) < listMax {
				list = append(list, a)
			}
			count++
		}
	}
	return listCell(list, count)
}
