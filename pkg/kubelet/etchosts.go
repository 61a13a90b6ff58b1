package kubelet

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	etcHostsPath = "/etc/hosts"
	// maxHostnameLen is a DNS label's limit, which a pod's hostname obeys.
	maxHostnameLen = 63
	// maxFQDNLen is the kernel's limit on a hostname.
	maxFQDNLen = 64
)

// kernelHostname is the hostname the pod's sandbox gets, as upstream's
// GetNodenameForKernel: the pod's FQDN with setHostnameAsFQDN, which fails
// when longer than the kernel allows (the name is still returned).
func (kl *Kubelet) kernelHostname(pod *v1.Pod) (string, error) {
	hostname, domain := kl.podHostnameAndDomain(pod)
	if pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN || domain == "" {
		return hostname, nil
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > maxFQDNLen {
		return fqdn, fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, maxFQDNLen, len(fqdn))
	}
	return fqdn, nil
}

// podHostnameAndDomain is the pod's hostname (spec.hostname, else its name
// cut to a DNS label) and, with a subdomain, its domain
// <subdomain>.<namespace>.svc.<cluster domain>, as upstream's
// GeneratePodHostNameAndDomain.
func (kl *Kubelet) podHostnameAndDomain(pod *v1.Pod) (hostname, domain string) {
	hostname = pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	if len(hostname) > maxHostnameLen {
		hostname = strings.TrimRight(hostname[:maxHostnameLen], "-.")
	}
	if pod.Spec.Subdomain != "" {
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, kl.cfg.ClusterDomain)
	}
	return hostname, domain
}

// etcHostsMount writes the pod's Kubernetes-managed hosts file and mounts it
// at /etc/hosts, as upstream's kubelet does for every container that does
// not mount something there itself: the pod's own name at its IP and the
// spec's hostAliases, or, on the host network, the node's hosts file with
// the aliases appended. Without it the runtime's copy of the node's file
// was all a container saw, hostAliases and the pod's hostname missing.
func (kl *Kubelet) etcHostsMount(pod *v1.Pod, c *v1.Container, podIP string) (*runtimeapi.Mount, error) {
	if podIP == "" {
		return nil, nil
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == etcHostsPath {
			return nil, nil
		}
	}
	var content []byte
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile(etcHostsPath)
		if err != nil {
			return nil, fmt.Errorf("read the node's hosts file: %w", err)
		}
		content = append([]byte("# Kubernetes-managed hosts file (host network).\n"), node...)
		content = append(content, hostAliasEntries(pod.Spec.HostAliases)...)
	} else {
		hostname, domain := kl.podHostnameAndDomain(pod)
		content = managedHosts(podIP, hostname, domain, pod.Spec.HostAliases)
	}
	dir := filepath.Join(kl.cfg.RootDir, "pods", string(pod.UID))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create pod dir: %w", err)
	}
	path := filepath.Join(dir, "etc-hosts")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return nil, fmt.Errorf("write hosts file: %w", err)
	}
	return &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: path}, nil
}

// managedHosts is the hosts file of a pod on its own network.
func managedHosts(podIP, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	if domain != "" {
		fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", podIP, hostname, domain, hostname)
	} else {
		fmt.Fprintf(&b, "%s\t%s\n", podIP, hostname)
	}
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// hostAliasEntries is one line per alias IP, its names tab-separated.
func hostAliasEntries(aliases []v1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}
