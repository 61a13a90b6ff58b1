// Package endpoints holds the rules for core/v1 Endpoints: the addresses
// behind a Service, written by the endpoints controller (or by the user for
// a Service without a selector), and its `kubectl get` table.
package endpoints

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes endpoints; c is the clock the AGE column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "endpoints",
		Singular:     "endpoints",
		Kind:         "Endpoints",
		Namespaced:   true,
		ShortNames:   []string{"ep"},
		New:          func() runtime.Object { return &corev1.Endpoints{} },
		NewList:      func() runtime.Object { return &corev1.EndpointsList{} },
		Strategy:     strategy{},
		// As upstream: a PUT of a missing object creates it.
		AllowCreateOnUpdate: true,
		Table:               table(c),
	}
}

type strategy struct{}

// Default sets TCP on ports without a protocol, as upstream's defaulting.
func (strategy) Default(obj runtime.Object) {
	e, ok := obj.(*corev1.Endpoints)
	if !ok {
		return
	}
	for i := range e.Subsets {
		for j := range e.Subsets[i].Ports {
			if p := &e.Subsets[i].Ports[j]; p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
		}
	}
}

func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	e, ok := obj.(*corev1.Endpoints)
	if !ok {
		return registry.WrongType("endpoints", obj)
	}
	return Validate(e)
}

func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (s strategy) ValidateUpdate(ctx context.Context, obj, _ runtime.Object) field.ErrorList {
	return s.Validate(ctx, obj)
}

var protocols = sets.New(string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP))

// Validate checks subsets as upstream: each has addresses, addresses are
// valid endpoint IPs, ports are named when there are several.
func Validate(e *corev1.Endpoints) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("subsets")
	for i := range e.Subsets {
		ss := &e.Subsets[i]
		idx := path.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(idx, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateAddress(&ss.Addresses[j], idx.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateAddress(&ss.NotReadyAddresses[j], idx.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validatePort(&ss.Ports[j], len(ss.Ports) > 1, idx.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateAddress(a *corev1.EndpointAddress, path *field.Path) field.ErrorList {
	ipPath := path.Child("ip")
	errs := utilvalidation.IsValidIPForLegacyField(ipPath, a.IP, false, nil)
	if a.Hostname != "" {
		errs = append(errs, validation.DNSLabel(a.Hostname, path.Child("hostname"))...)
	}
	if a.NodeName != nil {
		errs = append(errs, validation.Messages(path.Child("nodeName"), *a.NodeName, utilvalidation.IsDNS1123Subdomain(*a.NodeName))...)
	}
	if len(errs) == 0 {
		errs = append(errs, EndpointIP(a.IP, ipPath)...)
	}
	return errs
}

// EndpointIP refuses addresses no endpoint may have, in upstream's words.
func EndpointIP(s string, path *field.Path) field.ErrorList {
	ip := net.ParseIP(s)
	if ip == nil {
		return field.ErrorList{field.Invalid(path, s, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(path, s, fmt.Sprintf("may not be unspecified (%v)", s)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(path, s, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(path, s, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(path, s, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func validatePort(p *corev1.EndpointPort, requireName bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else if p.Name != "" {
		errs = append(errs, validation.DNSLabel(p.Name, path.Child("name"))...)
	}
	errs = append(errs, validation.Messages(path.Child("port"), p.Port, utilvalidation.IsValidPortNum(int(p.Port)))...)
	if p.Protocol == "" {
		errs = append(errs, field.Required(path.Child("protocol"), ""))
	} else if !protocols.Has(string(p.Protocol)) {
		errs = append(errs, field.NotSupported(path.Child("protocol"), p.Protocol, sets.List(protocols)))
	}
	if p.AppProtocol != nil {
		errs = append(errs, validation.Messages(path.Child("appProtocol"), *p.AppProtocol, utilvalidation.IsQualifiedName(*p.AppProtocol))...)
	}
	return errs
}

func table(c clock.PassiveClock) registry.TableConvertor {
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Endpoints", "string", 0, corev1.Endpoints{}.SwaggerDoc()["subsets"]),
		tableutil.AgeColumn(),
	}
	return tableutil.New(cols, func(e *corev1.Endpoints) []interface{} {
		return []interface{}{e.Name, Format(e), tableutil.Age(e.CreationTimestamp, c.Now())}
	})
}

// Format renders the ENDPOINTS cell as kubectl does: the first three
// ready ip:port pairs and how many more.
func Format(e *corev1.Endpoints) string {
	if len(e.Subsets) == 0 {
		return tableutil.None
	}
	const max = 3
	var list []string
	more, count := false, 0
	for i := range e.Subsets {
		ss := &e.Subsets[i]
		if len(ss.Ports) == 0 {
			// A headless service may have no ports.
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) == max {
					more = true
					break
				}
				list = append(list, a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) == max {
					more = true
					break
				}
				list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	out := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", out, count-max)
	}
	return out
}
