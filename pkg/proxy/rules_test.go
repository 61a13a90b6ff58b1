package proxy

import (
	"context"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

const testNode = "node-1"

func testConfig() Config {
	return Config{
		NodeName:    testNode,
		ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"),
		ServiceCIDR: netip.MustParsePrefix("10.96.0.0/16"),
	}
}

func service(name, clusterIP string, mutate func(*v1.Service), ports ...v1.ServicePort) *v1.Service {
	if len(ports) == 0 {
		ports = []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}
	}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: clusterIP, Ports: ports},
	}
	if mutate != nil {
		mutate(svc)
	}
	return svc
}

type ep struct {
	ip                          string
	node                        string
	ready, serving, terminating bool
}

func readyEP(ip, node string) ep { return ep{ip: ip, node: node, ready: true, serving: true} }

func slice(svcName, sliceName string, ports []discoveryv1.EndpointPort, eps ...ep) *discoveryv1.EndpointSlice {
	if ports == nil {
		ports = []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}}
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: sliceName,
			Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{e.ip},
			NodeName:  ptr.To(e.node),
			Conditions: discoveryv1.EndpointConditions{
				Ready: ptr.To(e.ready), Serving: ptr.To(e.serving), Terminating: ptr.To(e.terminating),
			},
		})
	}
	return s
}

// apply renders st into a fake table, through the same transaction the
// proxy runs against the kernel, and returns the table's dump.
func apply(t *testing.T, nft *knftables.Fake, cfg Config, st State) string {
	t.Helper()
	existing, err := nft.ListAll(context.Background())
	if err != nil && !knftables.IsNotFound(err) {
		t.Fatal(err)
	}
	tx := nft.NewTransaction()
	Render(cfg, st).Transaction(tx, existing)
	if err := nft.Run(context.Background(), tx); err != nil {
		t.Fatalf("transaction refused: %v\n%s", err, tx)
	}
	return nft.Dump()
}

type renderCase struct {
	name  string
	cfg   func(*Config)
	state State
}

func renderCases() []renderCase {
	local := v1.ServiceInternalTrafficPolicyLocal
	return []renderCase{
		{
			name: "clusterip-3-endpoints",
			state: State{
				Services: []*v1.Service{service("web", "10.96.0.20", nil)},
				Slices: []*discoveryv1.EndpointSlice{slice("web", "web-abc", nil,
					readyEP("10.244.1.3", "node-2"), readyEP("10.244.0.5", testNode), readyEP("10.244.2.7", "node-3"))},
			},
		},
		{
			// One pod behind two Services on the same port: one hairpin
			// element, which stays while either Service wants it.
			name: "two-services-one-pod",
			state: State{
				Services: []*v1.Service{service("web", "10.96.0.20", nil), service("web-alias", "10.96.0.21", nil)},
				Slices: []*discoveryv1.EndpointSlice{
					slice("web", "web-abc", nil,
						readyEP("10.244.1.3", "node-2"), readyEP("10.244.0.5", testNode), readyEP("10.244.2.7", "node-3")),
					slice("web-alias", "web-alias-abc", nil, readyEP("10.244.0.5", testNode)),
				},
			},
		},
		{
			name: "no-endpoints-reject",
			state: State{
				Services: []*v1.Service{service("web", "10.96.0.20", nil)},
				Slices: []*discoveryv1.EndpointSlice{slice("web", "web-abc", nil,
					ep{ip: "10.244.0.5", node: testNode})},
			},
		},
		{
			name: "nodeport",
			state: State{
				Services: []*v1.Service{service("web", "10.96.0.20", func(s *v1.Service) {
					s.Spec.Type = v1.ServiceTypeNodePort
					s.Spec.Ports[0].NodePort = 30080
					s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
				})},
				Slices: []*discoveryv1.EndpointSlice{slice("web", "web-abc", nil,
					readyEP("10.244.0.5", testNode), readyEP("10.244.1.3", "node-2"))},
			},
		},
		{
			name: "nodeport-addresses",
			cfg: func(c *Config) {
				c.NodePortCIDRs = []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}
			},
			state: State{
				Services: []*v1.Service{service("web", "10.96.0.20", func(s *v1.Service) {
					s.Spec.Type = v1.ServiceTypeNodePort
					s.Spec.Ports[0].NodePort = 30080
				})},
				Slices: []*discoveryv1.EndpointSlice{slice("web", "web-abc", nil, readyEP("10.244.0.5", testNode))},
				NodeIPs: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("192.168.1.10"),
					netip.MustParseAddr("10.0.0.4")},
			},
		},
		{
			name: "clientip-affinity",
			state: State{
				Services: []*v1.Service{service("web", "10.96.0.20", func(s *v1.Service) {
					s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
					s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](600)}}
				})},
				Slices: []*discoveryv1.EndpointSlice{slice("web", "web-abc", nil,
					readyEP("10.244.0.5", testNode), readyEP("10.244.1.3", "node-2"))},
			},
		},
		{
			name: "internal-traffic-policy-local",
			state: State{
				Services: []*v1.Service{
					service("web", "10.96.0.20", func(s *v1.Service) { s.Spec.InternalTrafficPolicy = &local }),
					service("elsewhere", "10.96.0.21", func(s *v1.Service) { s.Spec.InternalTrafficPolicy = &local }),
				},
				Slices: []*discoveryv1.EndpointSlice{
					slice("web", "web-abc", nil, readyEP("10.244.0.5", testNode), readyEP("10.244.1.3", "node-2")),
					slice("elsewhere", "elsewhere-abc", nil, readyEP("10.244.1.4", "node-2")),
				},
			},
		},
		{
			name: "external-traffic-policy-local",
			state: State{
				Services: []*v1.Service{
					service("web", "10.96.0.20", func(s *v1.Service) {
						s.Spec.Type = v1.ServiceTypeNodePort
						s.Spec.Ports[0].NodePort = 30080
						s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
					}),
					service("elsewhere", "10.96.0.21", func(s *v1.Service) {
						s.Spec.Type = v1.ServiceTypeNodePort
						s.Spec.Ports[0].NodePort = 30081
						s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
					}),
				},
				Slices: []*discoveryv1.EndpointSlice{
					slice("web", "web-abc", nil, readyEP("10.244.0.5", testNode), readyEP("10.244.1.3", "node-2")),
					slice("elsewhere", "elsewhere-abc", nil, readyEP("10.244.1.4", "node-2")),
				},
			},
		},
		{
			name: "headless-and-externalname",
			state: State{
				Services: []*v1.Service{
					service("headless", v1.ClusterIPNone, nil),
					service("external", "", func(s *v1.Service) {
						s.Spec.Type = v1.ServiceTypeExternalName
						s.Spec.ExternalName = "db.example.com"
					}),
				},
				Slices: []*discoveryv1.EndpointSlice{slice("headless", "headless-abc", nil, readyEP("10.244.0.5", testNode))},
			},
		},
		{
			name: "multiple-ports-udp",
			state: State{
				Services: []*v1.Service{service("dns", "10.96.0.10", nil,
					v1.ServicePort{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP},
					v1.ServicePort{Name: "dns-tcp", Port: 53, Protocol: v1.ProtocolTCP},
					v1.ServicePort{Name: "metrics", Port: 9153, Protocol: v1.ProtocolTCP},
				)},
				Slices: []*discoveryv1.EndpointSlice{
					slice("dns", "dns-abc", []discoveryv1.EndpointPort{
						{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: ptr.To(v1.ProtocolUDP)},
						{Name: ptr.To("dns-tcp"), Port: ptr.To[int32](53), Protocol: ptr.To(v1.ProtocolTCP)},
						{Name: ptr.To("metrics"), Port: ptr.To[int32](9153), Protocol: ptr.To(v1.ProtocolTCP)},
					}, readyEP("10.244.0.8", testNode), readyEP("10.244.1.9", "node-2")),
				},
			},
		},
		{
			name: "terminating-fallback",
			state: State{
				Services: []*v1.Service{service("web", "10.96.0.20", nil)},
				Slices: []*discoveryv1.EndpointSlice{slice("web", "web-abc", nil,
					ep{ip: "10.244.0.5", node: testNode, serving: true, terminating: true},
					ep{ip: "10.244.1.3", node: "node-2", terminating: true},
					ep{ip: "10.244.2.7", node: "node-3", serving: true, terminating: true})},
			},
		},
	}
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range renderCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			nft := knftables.NewFake(knftables.IPv4Family, TableName)
			got := apply(t, nft, cfg, tc.state)
			golden := filepath.Join("testdata", tc.name+".nft")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("rules differ from %s (go test -run TestRenderGolden -update rewrites it); got:\n%s", golden, got)
			}
		})
	}
}

// A sync that rewrites only the changed Services leaves the same table as
// one that rewrites everything, from every golden state to every other.
func TestUpdateEqualsFullRewrite(t *testing.T) {
	cases := append(renderCases(), renderCase{name: "nothing"})
	ctx := context.Background()
	for _, from := range cases {
		for _, to := range cases {
			if from.cfg != nil || to.cfg != nil {
				continue // another skeleton: Update refuses, tested below
			}
			t.Run(from.name+" to "+to.name, func(t *testing.T) {
				partial := knftables.NewFake(knftables.IPv4Family, TableName)
				apply(t, partial, testConfig(), from.state)
				prev := Render(testConfig(), from.state)
				tx := partial.NewTransaction()
				if !Render(testConfig(), to.state).Update(tx, prev) {
					t.Fatal("Update refused a change of Services only")
				}
				if err := partial.Run(ctx, tx); err != nil {
					t.Fatalf("update refused: %v\n%s", err, tx)
				}
				full := apply(t, knftables.NewFake(knftables.IPv4Family, TableName), testConfig(), to.state)
				if got := partial.Dump(); got != full {
					t.Errorf("updated table:\n%s\nwant, as written whole:\n%s", got, full)
				}
			})
		}
	}
	withAddresses := testConfig()
	withAddresses.NodePortCIDRs = []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}
	if Render(withAddresses, State{}).Update(knftables.NewFake(knftables.IPv4Family, TableName).NewTransaction(), Render(testConfig(), State{})) {
		t.Error("Update accepted a changed skeleton (--nodeport-addresses); only a full rewrite can change it")
	}
}
