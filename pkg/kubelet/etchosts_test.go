package kubelet

import (
	"fmt"
	"os"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

// A container sees upstream's Kubernetes-managed /etc/hosts: the pod's
// FQDN and hostname at its IP, then the hostAliases; the kernel hostname is
// the FQDN with setHostnameAsFQDN. The runtime's copy of the node's hosts
// file was mounted instead, hostAliases ignored, and the hostname was
// never the FQDN.
func TestContainersSeeTheManagedHostsFile(t *testing.T) {
	h := newHarness(t)
	pod := testPod("web-0", func(p *v1.Pod) {
		p.Spec.Hostname = "web"
		p.Spec.Subdomain = "svc1"
		p.Spec.SetHostnameAsFQDN = ptr.To(true)
		p.Spec.HostAliases = []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}, {IP: "10.1.2.4", Hostnames: []string{"baz"}}}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "own", Image: "busybox",
			VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/etc/hosts"}}})
		p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	})
	fqdn := "web.svc1." + pod.Namespace + ".svc.cluster.local"
	if got := h.kl.sandboxConfig(pod, 0).Hostname; got != fqdn {
		t.Fatalf("sandbox hostname %q, want %q", got, fqdn)
	}
	mounts := volume.Mounted{"v": t.TempDir()}
	cfg, err := h.kl.containerConfig(t.Context(), pod, &pod.Spec.Containers[0], 0, "10.0.0.7", mounts)
	if err != nil {
		t.Fatal(err)
	}
	var hosts string
	for _, m := range cfg.Mounts {
		if m.ContainerPath == "/etc/hosts" {
			b, err := os.ReadFile(m.HostPath)
			if err != nil {
				t.Fatal(err)
			}
			hosts = string(b)
		}
	}
	want := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		"10.0.0.7\t" + fqdn + "\tweb\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n10.1.2.4\tbaz\n"
	if hosts != want {
		t.Fatalf("/etc/hosts =\n%s\nwant\n%s", hosts, want)
	}
	// A container that mounts its own /etc/hosts keeps it.
	cfg, err = h.kl.containerConfig(t.Context(), pod, &pod.Spec.Containers[1], 0, "10.0.0.7", mounts)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range cfg.Mounts {
		if m.ContainerPath == "/etc/hosts" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d mounts at /etc/hosts, want only the container's own", n)
	}
	// Without a subdomain the pod's name is its hostname, cut to a DNS label.
	long := testPod("a-very-long-pod-name-that-is-longer-than-a-dns-label-may-be-x-y-z")
	if got := h.kl.sandboxConfig(long, 0).Hostname; got != "a-very-long-pod-name-that-is-longer-than-a-dns-label-may-be-x-y" {
		t.Fatalf("hostname %q", got)
	}
}

// An FQDN longer than the kernel's 64 characters fails the sandbox with
// upstream's words instead of reaching the runtime.
func TestTooLongFQDNFailsTheSandbox(t *testing.T) {
	h := newHarness(t)
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	pod := testPod("fqdn", func(p *v1.Pod) {
		p.Spec.Hostname = "a-rather-long-hostname-for-this-pod"
		p.Spec.Subdomain = "and-its-subdomain"
		p.Spec.SetHostnameAsFQDN = ptr.To(true)
	})
	h.add(pod)
	h.sync(pod)
	if n := h.rt.Calls["RunPodSandbox"]; n != 0 {
		t.Fatalf("%d sandboxes run", n)
	}
	fqdn := "a-rather-long-hostname-for-this-pod.and-its-subdomain." + pod.Namespace + ".svc.cluster.local"
	want := fmt.Sprintf("Warning FailedCreatePodSandBox Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (64 characters is the max, %d characters requested)", fqdn, len(fqdn))
	if !slices.Contains(drainEvents(rec), want) {
		t.Fatalf("no event %q", want)
	}
}
