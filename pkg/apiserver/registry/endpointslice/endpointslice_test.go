package endpointslice

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

func newSlice() *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abcde", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute)),
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}
}

func messages(errs []error) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return strings.Join(out, "\n")
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *discoveryv1.EndpointSlice)
		want   []string
	}{
		{"valid", func(*discoveryv1.EndpointSlice) {}, nil},
		{"no address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "" }, []string{"addressType: Required value"}},
		{"bad address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "IP" },
			[]string{`addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"`}},
		{"IPv6 in an IPv4 slice", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "fd00::5" },
			[]string{`endpoints[0].addresses: Invalid value: "fd00::5": must be an IPv4 address`}},
		{"loopback", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "127.0.0.1" },
			[]string{`endpoints[0].addresses[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`}},
		{"no address", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil },
			[]string{"endpoints[0].addresses: Required value: must contain at least 1 address"}},
		{"too many endpoints", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = make([]discoveryv1.Endpoint, 1001)
			for i := range s.Endpoints {
				s.Endpoints[i].Addresses = []string{"10.244.0.5"}
			}
		}, []string{"endpoints: Too many: 1001: must have at most 1000 items"}},
		{"duplicate port name", func(s *discoveryv1.EndpointSlice) {
			s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To("http"), Port: ptr.To[int32](8081)})
		}, []string{`ports[1].name: Duplicate value: "http"`}},
		{"bad port name", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Name = ptr.To("HTTP") },
			[]string{`ports[0].name: Invalid value: "HTTP": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`}},
		{"bad protocol", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Protocol = ptr.To[corev1.Protocol]("HTTP") },
			[]string{`ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`}},
		{"bad node name", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].NodeName = ptr.To("Node_1") },
			[]string{`endpoints[0].nodeName: Invalid value: "Node_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSlice()
			tt.mutate(s)
			r := Resource(clocktesting.NewFakePassiveClock(now))
			r.Strategy.Default(s)
			var errs []error
			for _, e := range r.Strategy.Validate(context.Background(), s) {
				errs = append(errs, e)
			}
			if got := messages(errs); got != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", got, strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestAddressTypeImmutable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	old := newSlice()
	s := newSlice()
	s.AddressType = discoveryv1.AddressTypeFQDN
	s.Endpoints[0].Addresses = []string{"web.example.com"}
	r.Strategy.Default(old)
	r.Strategy.Default(s)
	r.Strategy.PrepareForUpdate(context.Background(), s, old)
	var errs []error
	for _, e := range r.Strategy.ValidateUpdate(context.Background(), s, old) {
		errs = append(errs, e)
	}
	if want := `addressType: Invalid value: "FQDN": field is immutable`; messages(errs) != want {
		t.Errorf("errors: %s, want %s", messages(errs), want)
	}
}

func TestDefaultsAndGeneration(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	s := newSlice()
	s.Ports = []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}
	r.Strategy.Default(s)
	r.Strategy.PrepareForCreate(context.Background(), s)
	if p := s.Ports[0]; p.Name == nil || *p.Name != "" || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP || s.Generation != 1 {
		t.Errorf("port %+v generation %d, want name \"\" TCP, generation 1", p, s.Generation)
	}
	next := s.DeepCopy()
	next.Labels["x"] = "y"
	r.Strategy.PrepareForUpdate(context.Background(), next, s)
	if next.Generation != 1 {
		t.Errorf("a label change bumped the generation to %d", next.Generation)
	}
	next.Endpoints[0].Addresses[0] = "10.244.0.6"
	r.Strategy.PrepareForUpdate(context.Background(), next, s)
	if next.Generation != 2 {
		t.Errorf("an endpoint change left the generation at %d", next.Generation)
	}
}

func TestTable(t *testing.T) {
	many := newSlice()
	for _, ip := range []string{"10.244.0.6", "10.244.0.7", "10.244.0.8"} {
		many.Endpoints = append(many.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
	}
	many.Ports = append(many.Ports, discoveryv1.EndpointPort{Name: ptr.To("metrics")}, discoveryv1.EndpointPort{Port: ptr.To[int32](53)},
		discoveryv1.EndpointPort{Port: ptr.To[int32](54)})
	tests := []struct {
		name  string
		s     *discoveryv1.EndpointSlice
		ports string
		eps   string
	}{
		{"one", newSlice(), "8080", "10.244.0.5"},
		{"many", many, "8080,metrics,53 + 1 more...", "10.244.0.5,10.244.0.6,10.244.0.7 + 1 more..."},
		{"empty", &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4}, "<unset>", "<unset>"},
	}
	tbl := Resource(clocktesting.NewFakePassiveClock(now)).Table
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells, err := tbl.Cells(tt.s)
			if err != nil || cells[1] != "IPv4" || cells[2] != tt.ports || cells[3] != tt.eps {
				t.Errorf("row = %v (%v), want IPv4 %q %q", cells, err, tt.ports, tt.eps)
			}
		})
	}
}
