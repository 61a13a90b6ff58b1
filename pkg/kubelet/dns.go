package kubelet

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Upstream's limits on what a pod's resolv.conf may hold (the API's
// MaxDNSNameservers, MaxDNSSearchPaths and MaxDNSSearchListChars).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// dnsWarning is an event podDNS asks for when the pod's sandbox is made:
// a cut to the resolver's limits (DNSConfigForming) or a ClusterFirst pod
// on a kubelet without cluster DNS (MissingClusterDNS).
type dnsWarning struct {
	reason, message string
}

const (
	reasonDNSConfigForming  = "DNSConfigForming"
	reasonMissingClusterDNS = "MissingClusterDNS"
)

// podDNS is the resolver configuration the sandbox gets, as upstream's
// GetPodDNS. ClusterFirst (and ClusterFirstWithHostNet) ask the cluster DNS
// servers only, searching the pod's namespace's and the cluster's service
// domains before the node's, with ndots:5; ClusterFirst on a host-network
// pod, and on a kubelet without cluster DNS, falls back to Default: the
// node's resolv.conf. None starts empty. The pod's dnsConfig is appended
// (duplicates dropped, its options overriding), and the result cut to the
// resolver's limits. nil leaves the runtime's copy of the node's file,
// which is the same for Default without a dnsConfig.
func (kl *Kubelet) podDNS(pod *v1.Pod) (dns *runtimeapi.DNSConfig, warnings []dnsWarning, err error) {
	policy := pod.Spec.DNSPolicy
	switch {
	case policy == v1.DNSClusterFirst && pod.Spec.HostNetwork:
		policy = v1.DNSDefault
	case policy != v1.DNSNone && policy != v1.DNSDefault:
		// ClusterFirst, ClusterFirstWithHostNet, and (as upstream) a
		// policy the API should have refused.
		policy = v1.DNSClusterFirst
	}
	if policy == v1.DNSClusterFirst && len(kl.cfg.ClusterDNS) == 0 {
		msg := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", v1.DNSClusterFirst, v1.DNSDefault)
		warnings = append(warnings, dnsWarning{reasonMissingClusterDNS, msg})
		policy = v1.DNSDefault
	}
	switch policy {
	case v1.DNSNone:
		dns = &runtimeapi.DNSConfig{}
	case v1.DNSDefault:
		if pod.Spec.DNSConfig == nil {
			return nil, warnings, nil
		}
		if dns, err = parseResolvConf(kl.cfg.ResolvConf); err != nil {
			return nil, nil, err
		}
	default:
		host, err := parseResolvConf(kl.cfg.ResolvConf)
		if err != nil {
			return nil, nil, err
		}
		dns = clusterDNSConfig(kl.cfg.ClusterDNS, kl.cfg.ClusterDomain, pod.Namespace, host.Searches)
	}
	if c := pod.Spec.DNSConfig; c != nil {
		dns.Servers = appendUnique(dns.Servers, c.Nameservers)
		dns.Searches = appendUnique(dns.Searches, c.Searches)
		dns.Options = mergeDNSOptions(dns.Options, c.Options)
	}
	if len(dns.Servers) > maxDNSNameservers {
		dns.Servers = dns.Servers[:maxDNSNameservers]
		warnings = append(warnings, dnsWarning{reasonDNSConfigForming, "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(dns.Servers, " ")})
	}
	cut := false
	for len(dns.Searches) > maxDNSSearchPaths || len(strings.Join(dns.Searches, " ")) > maxDNSSearchListChars {
		dns.Searches = dns.Searches[:len(dns.Searches)-1]
		cut = true
	}
	if cut {
		warnings = append(warnings, dnsWarning{reasonDNSConfigForming, "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(dns.Searches, " ")})
	}
	return dns, warnings, nil
}

// clusterDNSConfig is a ClusterFirst pod's resolver before its dnsConfig:
// the cluster's servers only (they forward what they do not answer), the
// service domains of the pod's namespace and of the cluster searched
// before the node's, and upstream's ndots:5 so that a service's short name
// is tried in them first.
func clusterDNSConfig(servers []string, domain, namespace string, hostSearches []string) *runtimeapi.DNSConfig {
	searches := hostSearches
	if domain != "" {
		searches = appendUnique([]string{namespace + ".svc." + domain, "svc." + domain, domain}, hostSearches)
	}
	return &runtimeapi.DNSConfig{Servers: slices.Clone(servers), Searches: searches, Options: []string{"ndots:5"}}
}

// recordDNSWarning sends w as an event about pod; a missing cluster DNS is
// also told on the Node, as upstream.
func (kl *Kubelet) recordDNSWarning(pod *v1.Pod, w dnsWarning) {
	if w.reason != reasonMissingClusterDNS {
		kl.recorder.Event(pod, v1.EventTypeWarning, w.reason, w.message)
		return
	}
	node := &v1.ObjectReference{Kind: "Node", Name: kl.cfg.NodeName, UID: types.UID(kl.cfg.NodeName)}
	kl.recorder.Event(node, v1.EventTypeWarning, w.reason, w.message)
	kl.recorder.Eventf(pod, v1.EventTypeWarning, w.reason, "pod: %q. %s", fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID), w.message)
}

// parseResolvConf reads the nameservers, the last search line (without
// trailing dots) and the options of a resolv.conf.
func parseResolvConf(path string) (*runtimeapi.DNSConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read resolv.conf: %w", err)
	}
	dns := &runtimeapi.DNSConfig{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			dns.Servers = append(dns.Servers, fields[1])
		case "search":
			dns.Searches = nil
			for _, s := range fields[1:] {
				if s != "." {
					dns.Searches = append(dns.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			dns.Options = mergeDNSOptions(dns.Options, optionsOf(fields[1:]))
		}
	}
	return dns, sc.Err()
}

func optionsOf(words []string) []v1.PodDNSConfigOption {
	out := make([]v1.PodDNSConfigOption, 0, len(words))
	for _, w := range words {
		name, value, ok := strings.Cut(w, ":")
		o := v1.PodDNSConfigOption{Name: name}
		if ok {
			o.Value = &value
		}
		out = append(out, o)
	}
	return out
}

// mergeDNSOptions adds options to existing ("name" or "name:value"), one
// of the same name replacing the earlier in its place.
func mergeDNSOptions(existing []string, options []v1.PodDNSConfigOption) []string {
	out := slices.Clone(existing)
	for _, o := range options {
		opt := o.Name
		if o.Value != nil && *o.Value != "" {
			opt += ":" + *o.Value
		}
		i := slices.IndexFunc(out, func(e string) bool {
			name, _, _ := strings.Cut(e, ":")
			return name == o.Name
		})
		if i >= 0 {
			out[i] = opt
		} else {
			out = append(out, opt)
		}
	}
	return out
}

func appendUnique(to, more []string) []string {
	for _, s := range more {
		if !slices.Contains(to, s) {
			to = append(to, s)
		}
	}
	return to
}
