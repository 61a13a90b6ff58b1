package kubelet

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Upstream's limits on what a pod's resolv.conf may hold (the API's
// MaxDNSNameservers, MaxDNSSearchPaths and MaxDNSSearchListChars).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// podDNS is the resolver configuration the sandbox gets, as upstream's
// GetPodDNS without a cluster DNS server (so ClusterFirst falls back to
// Default): the node's resolv.conf, or nothing for dnsPolicy None, with the
// pod's dnsConfig appended (duplicates dropped, its options overriding the
// node's), cut to the resolver's limits; warnings word each cut as
// upstream's DNSConfigForming events. nil leaves the runtime's copy of the
// node's file, which is the same when the pod has no dnsConfig.
func (kl *Kubelet) podDNS(pod *v1.Pod) (dns *runtimeapi.DNSConfig, warnings []string, err error) {
	switch {
	case pod.Spec.DNSPolicy == v1.DNSNone:
		dns = &runtimeapi.DNSConfig{}
	case pod.Spec.DNSConfig == nil:
		return nil, nil, nil
	default:
		dns, err = parseResolvConf(kl.cfg.ResolvConf)
		if err != nil {
			return nil, nil, err
		}
	}
	if c := pod.Spec.DNSConfig; c != nil {
		dns.Servers = appendUnique(dns.Servers, c.Nameservers)
		dns.Searches = appendUnique(dns.Searches, c.Searches)
		dns.Options = mergeDNSOptions(dns.Options, c.Options)
	}
	if len(dns.Servers) > maxDNSNameservers {
		dns.Servers = dns.Servers[:maxDNSNameservers]
		warnings = append(warnings, "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: "+strings.Join(dns.Servers, " "))
	}
	cut := false
	for len(dns.Searches) > maxDNSSearchPaths || len(strings.Join(dns.Searches, " ")) > maxDNSSearchListChars {
		dns.Searches = dns.Searches[:len(dns.Searches)-1]
		cut = true
	}
	if cut {
		warnings = append(warnings, "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: "+strings.Join(dns.Searches, " "))
	}
	return dns, warnings, nil
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
