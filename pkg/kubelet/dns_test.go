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
