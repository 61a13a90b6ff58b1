package service

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Spec: corev1.ServiceSpec{
			Selector:  map[string]string{"app": "web"},
			ClusterIP: "10.96.0.10",
			Ports:     []corev1.ServicePort{{Port: 80}},
		},
	}
}

func create(t *testing.T, s *corev1.Service) *corev1.Service {
	t.Helper()
	r := Resource(clocktesting.NewFakePassiveClock(now))
	r.Strategy.Default(s)
	r.Strategy.PrepareForCreate(context.Background(), s)
	if errs := r.Strategy.Validate(context.Background(), s); len(errs) > 0 {
		t.Fatal(errs)
	}
	return s
}

func TestDefaults(t *testing.T) {
	s := create(t, newService())
	if s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("type %q affinity %q", s.Spec.Type, s.Spec.SessionAffinity)
	}
	p := s.Spec.Ports[0]
	if p.Protocol != corev1.ProtocolTCP || p.TargetPort != intstr.FromInt32(80) {
		t.Errorf("port = %+v, want TCP targetPort 80", p)
	}
	if !reflect.DeepEqual(s.Spec.ClusterIPs, []string{"10.96.0.10"}) || *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack ||
		!reflect.DeepEqual(s.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) {
		t.Errorf("clusterIPs %v policy %v families %v", s.Spec.ClusterIPs, *s.Spec.IPFamilyPolicy, s.Spec.IPFamilies)
	}
	if *s.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster || s.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("traffic policies %v %q", *s.Spec.InternalTrafficPolicy, s.Spec.ExternalTrafficPolicy)
	}
	if s.Generation != 1 {
		t.Errorf("generation = %d", s.Generation)
	}

	lb := newService()
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	lb = create(t, lb)
	if lb.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || !*lb.Spec.AllocateLoadBalancerNodePorts {
		t.Errorf("load balancer: %q %v", lb.Spec.ExternalTrafficPolicy, lb.Spec.AllocateLoadBalancerNodePorts)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *corev1.Service)
		want   []string
	}{
		{"valid", func(s *corev1.Service) {}, nil},
		{"headless without ports", func(s *corev1.Service) { s.Spec.ClusterIP = "None"; s.Spec.Ports = nil }, nil},
		{"no ports", func(s *corev1.Service) { s.Spec.Ports = nil }, []string{"spec.ports: Required value"}},
		{"bad type", func(s *corev1.Service) { s.Spec.Type = "Magic" }, []string{`spec.type: Unsupported value: "Magic"`}},
		{"second port unnamed", func(s *corev1.Service) {
			s.Spec.Ports[0].Name = "http"
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(443)})
		}, []string{"spec.ports[1].name: Required value"}},
		{"port out of range", func(s *corev1.Service) { s.Spec.Ports[0].Port = 0 },
			[]string{"spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"}},
		{"node port on ClusterIP", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 },
			[]string{"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"}},
		{"external name missing", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = corev1.ServiceTypeExternalName, "", nil, nil, nil
		}, []string{"spec.externalName: Required value"}},
		{"bad cluster IP", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0", nil },
			[]string{`spec.clusterIP: Invalid value: "10.96.0"`}},
		{"bad selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "a b"} },
			[]string{`spec.selector: Invalid value: "a b"`}},
		// As upstream 1.36's kube-apiserver answers: the repeated port shows
		// as its internal ServicePort, and source ranges are refused off a
		// LoadBalancer (they were accepted and did nothing).
		{"repeated port", func(s *corev1.Service) {
			s.Spec.Ports[0].Name = "a"
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "b", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)})
		}, []string{`spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}`}},
		{"source ranges off a load balancer", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"x", " 10.0.0.0/8 ", "10.0.0.1/8"} },
			[]string{
				"spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'",
				`spec.LoadBalancerSourceRanges[0]: Invalid value: "x": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`,
				`spec.LoadBalancerSourceRanges[2]: Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix length`,
			}},
		{"health check node port off a Local load balancer", func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 30100 },
			[]string{"spec.healthCheckNodePort: Invalid value: 30100: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"}},
		{"health check node port on a Local load balancer", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, 30100
		}, nil},
		{"source ranges on a load balancer", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newService()
			Default(s)
			tt.mutate(s)
			errs := Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Validate(context.Background(), s)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors = %v, want %q", errs, tt.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tt.want[i]) {
					t.Errorf("error %q, want prefix %q", e.Error(), tt.want[i])
				}
			}
		})
	}
}

func TestNameIsADNSLabel(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	for _, ok := range []string{"web", "1web", "123"} {
		if msgs := r.ValidateName(ok, false); len(msgs) != 0 {
			t.Errorf("%s rejected: %v", ok, msgs)
		}
	}
	for _, bad := range []string{"-web", "Web", "web_1"} {
		if msgs := r.ValidateName(bad, false); len(msgs) == 0 || !strings.Contains(msgs[0], "RFC 1123 label") {
			t.Errorf("%s: %v, want an RFC 1123 label message", bad, msgs)
		}
	}
}

func TestUpdate(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	old := newService()
	old.Spec.Type = corev1.ServiceTypeNodePort
	old.Spec.Ports[0].NodePort = 30080
	old = create(t, old)
	old.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}

	// A re-applied manifest without the assigned values keeps them.
	applied := newService()
	applied.Spec.Type = corev1.ServiceTypeNodePort
	applied.Spec.ClusterIP = ""
	applied.Spec.Selector = map[string]string{"app": "web2"}
	r.Strategy.Default(applied)
	r.Strategy.PrepareForUpdate(context.Background(), applied, old)
	if errs := r.Strategy.ValidateUpdate(context.Background(), applied, old); len(errs) > 0 {
		t.Fatal(errs)
	}
	if applied.Spec.ClusterIP != "10.96.0.10" || applied.Spec.Ports[0].NodePort != 30080 || len(applied.Status.LoadBalancer.Ingress) != 1 {
		t.Errorf("lost assigned values: %+v %+v", applied.Spec, applied.Status)
	}
	if applied.Generation != 2 {
		t.Errorf("generation = %d, want 2", applied.Generation)
	}

	moved := old.DeepCopy()
	moved.Spec.ClusterIP, moved.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"}
	r.Strategy.PrepareForUpdate(context.Background(), moved, old)
	errs := r.Strategy.ValidateUpdate(context.Background(), moved, old)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.clusterIPs[0]: Invalid value") || !strings.Contains(errs[0].Error(), "may not change once set") {
		t.Errorf("cluster IP change: %v", errs)
	}
}

func TestTable(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *corev1.Service)
		want   []interface{}
	}{
		{"cluster ip", func(s *corev1.Service) {},
			[]interface{}{"web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP", "60s", "app=web"}},
		{"node port", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP})
			s.Spec.Ports[0].NodePort = 30080
		}, []interface{}{"web", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53:30053/UDP", "60s", "app=web"}},
		{"pending load balancer", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer },
			[]interface{}{"web", "LoadBalancer", "10.96.0.10", "<pending>", "80/TCP", "60s", "app=web"}},
		{"load balancer with addresses", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ExternalIPs = []string{"192.0.2.9"}
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.2"}, {Hostname: "lb.example.com"}, {IP: "198.51.100.1"}, {IP: "198.51.100.2"}}
		}, []interface{}{"web", "LoadBalancer", "10.96.0.10", "198.51.100.1,198.51.100.2,lb.example.com,192.0.2.9", "80/TCP", "60s", "app=web"}},
		{"external name", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.ClusterIP, s.Spec.Ports, s.Spec.Selector = corev1.ServiceTypeExternalName, "db.example.com", "", nil, nil
		}, []interface{}{"web", "ExternalName", "<none>", "db.example.com", "<none>", "60s", "<none>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newService()
			s.Spec.Ports[0].Protocol = corev1.ProtocolTCP
			s.Spec.Type = corev1.ServiceTypeClusterIP
			tt.mutate(s)
			cells, err := Resource(clocktesting.NewFakePassiveClock(now)).Table.Cells(s)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cells, tt.want) {
				t.Errorf("cells = %q\nwant    %q", cells, tt.want)
			}
		})
	}
}

func TestStatusSubresource(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	old := newService()
	old.Spec.Type = corev1.ServiceTypeLoadBalancer
	old = create(t, old)

	st := old.DeepCopy()
	st.Spec.Ports = nil
	st.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}
	r.Status.PrepareForUpdate(context.Background(), st, old)
	if len(st.Spec.Ports) != 1 {
		t.Errorf("status update changed the spec: %+v", st.Spec)
	}
	if errs := r.Status.ValidateUpdate(context.Background(), st, old); len(errs) != 0 {
		t.Errorf("valid ingress: %v", errs)
	}
	st.Status.LoadBalancer.Ingress[0].IP = "198.51.100"
	errs := r.Status.ValidateUpdate(context.Background(), st, old)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), `status.loadBalancer.ingress[0].ip: Invalid value: "198.51.100"`) {
		t.Errorf("bad ingress IP: %v", errs)
	}
}

// The errors are upstream 1.36's for the same updates; kube-lite stored
// these fields unchecked.
func TestValidateFamiliesPoliciesClass(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	s := create(t, newService())
	bogus := corev1.IPFamilyPolicy("Bogus")
	s.Spec.IPFamilyPolicy = &bogus
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	weird := corev1.ServiceInternalTrafficPolicy("Weird")
	s.Spec.InternalTrafficPolicy = &weird
	dist := "Bogus"
	s.Spec.TrafficDistribution = &dist
	class := "a.b/c"
	s.Spec.LoadBalancerClass = &class
	var got []string
	for _, e := range r.Strategy.Validate(context.Background(), s) {
		got = append(got, e.Error())
	}
	want := []string{
		`spec.ipFamilyPolicy: Unsupported value: "Bogus": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"`,
		"spec.clusterIPs[0]: Invalid value: \"10.96.0.10\": expected an IPv6 value as indicated by `ipFamilies[0]`",
		"spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'",
		`spec.internalTrafficPolicy: Unsupported value: "Weird": supported values: "Cluster", "Local"`,
		`spec.trafficDistribution: Unsupported value: "Bogus": supported values: "PreferClose", "PreferSameZone", "PreferSameNode"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%q\nwant:\n%q", got, want)
	}
}

// Changing the type drops what the old type filled in and the user left
// alone, as upstream: a NodePort service patched to ExternalName, or a
// LoadBalancer patched to ClusterIP, is accepted.
func TestTypeChangeDropsTypeDependentFields(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	old := newService()
	old.Spec.Type = corev1.ServiceTypeNodePort
	old.Spec.Ports[0].NodePort = 30080
	old = create(t, old)

	ext := old.DeepCopy()
	ext.Spec.Type, ext.Spec.ExternalName = corev1.ServiceTypeExternalName, "foo.example.com"
	r.Strategy.Default(ext)
	r.Strategy.PrepareForUpdate(context.Background(), ext, old)
	if errs := r.Strategy.ValidateUpdate(context.Background(), ext, old); len(errs) > 0 {
		t.Fatalf("to ExternalName: %v", errs)
	}
	if ext.Spec.ClusterIP != "" || ext.Spec.ClusterIPs != nil || ext.Spec.IPFamilies != nil || ext.Spec.Ports[0].NodePort != 0 || ext.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("leftovers: %+v", ext.Spec)
	}

	lb := newService()
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	lb.Spec.Ports[0].NodePort = 30081
	lb = create(t, lb)
	ci := lb.DeepCopy()
	ci.Spec.Type = corev1.ServiceTypeClusterIP
	r.Strategy.Default(ci)
	r.Strategy.PrepareForUpdate(context.Background(), ci, lb)
	if errs := r.Strategy.ValidateUpdate(context.Background(), ci, lb); len(errs) > 0 {
		t.Fatalf("to ClusterIP: %v", errs)
	}
	if ci.Spec.ClusterIP != "10.96.0.10" || ci.Spec.AllocateLoadBalancerNodePorts != nil || ci.Spec.Ports[0].NodePort != 0 {
		t.Errorf("ClusterIP service: %+v", ci.Spec)
	}
}

func TestHealthCheckNodePortIsImmutable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	old := newService()
	old.Spec.Type, old.Spec.ExternalTrafficPolicy, old.Spec.HealthCheckNodePort = corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, 30100
	old = create(t, old)
	s := old.DeepCopy()
	s.Spec.HealthCheckNodePort = 30200
	r.Strategy.PrepareForUpdate(context.Background(), s, old)
	errs := r.Strategy.ValidateUpdate(context.Background(), s, old)
	if len(errs) != 1 || errs[0].Error() != "spec.healthCheckNodePort: Forbidden: field is immutable" {
		t.Errorf("errors = %v, want the health check node port immutable", errs)
	}
	s.Spec.HealthCheckNodePort = 0 // left out: kept
	r.Strategy.PrepareForUpdate(context.Background(), s, old)
	if errs := r.Strategy.ValidateUpdate(context.Background(), s, old); len(errs) != 0 || s.Spec.HealthCheckNodePort != 30100 {
		t.Errorf("left out: %v, port %d", errs, s.Spec.HealthCheckNodePort)
	}
}
