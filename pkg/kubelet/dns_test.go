package kubelet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// A pod's dnsConfig is appended to the node's resolv.conf under dnsPolicy
// Default and ClusterFirst (which, without a cluster DNS server, falls back
// to Default as upstream), and stands alone under None; duplicates are
// dropped and the pod's options override the node's. Only None used
// dnsConfig: under the other policies it was ignored.
func TestPodDNSConfigIsMergedWithTheNodes(t *testing.T) {
	h := newHarness(t)
	h.kl.cfg.ResolvConf = filepath.Join(t.TempDir(), "resolv.conf")
	node := "# node\nnameserver 10.0.0.2\nsearch a.com b.com.\noptions ndots:1 timeout:2\n"
	if err := os.WriteFile(h.kl.cfg.ResolvConf, []byte(node), 0o644); err != nil {
		t.Fatal(err)
	}
	dnsConfig := &v1.PodDNSConfig{
		Nameservers: []string{"10.0.0.2", "1.1.1.1"},
		Searches:    []string{"c.com", "a.com"},
		Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("5")}, {Name: "edns0"}},
	}
	tests := []struct {
		policy                     v1.DNSPolicy
		config                     *v1.PodDNSConfig
		servers, searches, options []string
	}{
		{v1.DNSDefault, dnsConfig, []string{"10.0.0.2", "1.1.1.1"}, []string{"a.com", "b.com", "c.com"}, []string{"ndots:5", "timeout:2", "edns0"}},
		{v1.DNSClusterFirst, dnsConfig, []string{"10.0.0.2", "1.1.1.1"}, []string{"a.com", "b.com", "c.com"}, []string{"ndots:5", "timeout:2", "edns0"}},
		{v1.DNSNone, dnsConfig, []string{"10.0.0.2", "1.1.1.1"}, []string{"c.com", "a.com"}, []string{"ndots:5", "edns0"}},
	}
	for _, tc := range tests {
		pod := testPod("dns", func(p *v1.Pod) { p.Spec.DNSPolicy, p.Spec.DNSConfig = tc.policy, tc.config })
		got := h.kl.sandboxConfig(pod, 0).DnsConfig
		if got == nil || !slices.Equal(got.Servers, tc.servers) || !slices.Equal(got.Searches, tc.searches) || !slices.Equal(got.Options, tc.options) {
			t.Fatalf("%s: DNS config %+v, want servers %v searches %v options %v", tc.policy, got, tc.servers, tc.searches, tc.options)
		}
	}
	// Without a dnsConfig the runtime's copy of the node's file serves.
	if got := h.kl.sandboxConfig(testPod("plain"), 0).DnsConfig; got != nil {
		t.Fatalf("DNS config %+v for a pod without dnsConfig", got)
	}
}

// More than three nameservers in all are cut to three with upstream's
// DNSConfigForming warning.
func TestTooManyNameserversAreCutWithAWarning(t *testing.T) {
	h := newHarness(t)
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	h.kl.cfg.ResolvConf = filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(h.kl.cfg.ResolvConf, []byte("nameserver 10.0.0.1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := testPod("dns4", func(p *v1.Pod) {
		p.Spec.DNSPolicy = v1.DNSDefault
		p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}}
	})
	h.add(pod)
	h.sync(pod)
	if got := h.kl.sandboxConfig(pod, 0).DnsConfig.Servers; !slices.Equal(got, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}) {
		t.Fatalf("nameservers %v", got)
	}
	const want = "Warning DNSConfigForming Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.1 10.0.0.2 10.0.0.3"
	if !slices.Contains(drainEvents(rec), want) {
		t.Fatalf("no event %q", want)
	}
}

// Each dnsPolicy gives the sandbox upstream's resolver configuration on a
// kubelet with cluster DNS: ClusterFirst asks the cluster's server only and
// searches the service domains before the node's, with ndots:5; a
// host-network pod needs ClusterFirstWithHostNet for that and otherwise
// falls back to Default (nil: the runtime copies the node's file).
func TestPodDNSPerPolicy(t *testing.T) {
	h := newHarness(t)
	h.kl.cfg.ClusterDNS = []string{"10.96.0.10"}
	h.kl.cfg.ResolvConf = filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(h.kl.cfg.ResolvConf, []byte("nameserver 10.0.0.2\nsearch a.com cluster.local\noptions timeout:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dnsConfig := &v1.PodDNSConfig{
		Nameservers: []string{"1.1.1.1"},
		Searches:    []string{"c.com", "svc.cluster.local"},
		Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}},
	}
	cluster := []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "a.com"}
	tests := []struct {
		name                       string
		policy                     v1.DNSPolicy
		hostNetwork                bool
		config                     *v1.PodDNSConfig
		servers, searches, options []string // nil servers: no config, the node's file
	}{
		{"ClusterFirst", v1.DNSClusterFirst, false, nil, []string{"10.96.0.10"}, cluster, []string{"ndots:5"}},
		{"ClusterFirst with dnsConfig", v1.DNSClusterFirst, false, dnsConfig,
			[]string{"10.96.0.10", "1.1.1.1"}, append(slices.Clone(cluster), "c.com"), []string{"ndots:2", "edns0"}},
		{"ClusterFirst on the host network falls back to Default", v1.DNSClusterFirst, true, nil, nil, nil, nil},
		{"ClusterFirst on the host network with dnsConfig", v1.DNSClusterFirst, true, dnsConfig,
			[]string{"10.0.0.2", "1.1.1.1"}, []string{"a.com", "cluster.local", "c.com", "svc.cluster.local"}, []string{"timeout:2", "ndots:2", "edns0"}},
		{"ClusterFirstWithHostNet on the host network", v1.DNSClusterFirstWithHostNet, true, nil, []string{"10.96.0.10"}, cluster, []string{"ndots:5"}},
		{"ClusterFirstWithHostNet in the pod network", v1.DNSClusterFirstWithHostNet, false, nil, []string{"10.96.0.10"}, cluster, []string{"ndots:5"}},
		{"Default", v1.DNSDefault, false, nil, nil, nil, nil},
		{"None", v1.DNSNone, false, dnsConfig, []string{"1.1.1.1"}, []string{"c.com", "svc.cluster.local"}, []string{"ndots:2", "edns0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("dns", func(p *v1.Pod) {
				p.Namespace = "team"
				p.Spec.DNSPolicy, p.Spec.HostNetwork, p.Spec.DNSConfig = tc.policy, tc.hostNetwork, tc.config
			})
			got := h.kl.sandboxConfig(pod, 0).DnsConfig
			if tc.servers == nil {
				if got != nil {
					t.Fatalf("DNS config %+v, want the node's file", got)
				}
				return
			}
			if got == nil || !slices.Equal(got.Servers, tc.servers) || !slices.Equal(got.Searches, tc.searches) || !slices.Equal(got.Options, tc.options) {
				t.Fatalf("DNS config %+v, want servers %v searches %v options %v", got, tc.servers, tc.searches, tc.options)
			}
		})
	}
}

// A ClusterFirst pod on a kubelet without cluster DNS gets the node's
// resolver, and upstream's MissingClusterDNS warning on the pod and the Node.
func TestClusterFirstWithoutClusterDNSWarns(t *testing.T) {
	h := newHarness(t)
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	h.kl.cfg.ResolvConf = filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(h.kl.cfg.ResolvConf, []byte("nameserver 10.0.0.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := testPod("nodns", func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSClusterFirst })
	h.add(pod)
	h.sync(pod)
	if h.running(pod, "main") == nil {
		t.Fatalf("not running: %+v", h.status(pod))
	}
	if got := h.kl.sandboxConfig(pod, 0).DnsConfig; got != nil {
		t.Fatalf("DNS config %+v, want the node's file", got)
	}
	const msg = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
	events := drainEvents(rec)
	for _, want := range []string{
		"Warning MissingClusterDNS " + msg,
		`Warning MissingClusterDNS pod: "nodns_default(uid-nodns)". ` + msg,
	} {
		if !slices.Contains(events, want) {
			t.Errorf("no event %q in %q", want, events)
		}
	}
}
