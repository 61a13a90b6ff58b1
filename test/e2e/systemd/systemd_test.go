//go:build e2e

package systemd

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

const (
	nodeName = "sd-node"
	// clusterCIDR is this test's own, so that its bridge, routes and
	// masquerade rules never meet another test's pod network.
	clusterCIDR = "10.213.0.0/16"
	cidrPrefix  = "10.213."
	bridge      = "kl-sd0"
	// serviceCIDR is this test's own too: kube-lite-proxy routes the whole
	// range on the host.
	serviceCIDR = "10.212.0.0/16"
	// kubernetesIP is the kubernetes Service's address, the range's first.
	kubernetesIP = "10.212.0.1"
	clusterDNS   = "10.212.0.10"
)

func TestScriptsRefuseBadInput(t *testing.T) {
	requireRoot(t)
	emptyPKI := t.TempDir()
	root := t.TempDir()
	// A complete PKI whose serving certificate lacks the kubernetes
	// Service's address (10.96.0.1, the default range's first).
	pkiWithoutServiceIP := t.TempDir()
	if out, err := e2eutil.Run(filepath.Join(env.binDir, "kube-lite-pki"), "--dir", pkiWithoutServiceIP,
		"--apiserver-url", "https://127.0.0.1:6443", "--node", nodeName+"=127.0.0.1"); err != nil {
		t.Fatalf("kube-lite-pki: %v\n%s", err, out)
	}
	rootWithoutNoSystemd := "--root needs --no-systemd"
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		rootWithoutNoSystemd = "use --no-systemd"
	}
	tests := []struct {
		name   string
		script string
		args   []string
		want   string
	}{
		{"control plane without --pki", "hack/install-control-plane.sh", []string{"--no-systemd", "--root", root}, "--pki DIR is required"},
		{"control plane with an empty PKI dir", "hack/install-control-plane.sh", []string{"--no-systemd", "--root", root, "--pki", emptyPKI}, "ca.crt is missing"},
		{"control plane with an unknown flag", "hack/install-control-plane.sh", []string{"--frobnicate"}, "unknown option --frobnicate"},
		{"control plane under --root with systemd", "hack/install-control-plane.sh", []string{"--root", root, "--pki", emptyPKI}, rootWithoutNoSystemd},
		{"control plane whose certificate lacks the kubernetes Service's IP", "hack/install-control-plane.sh", []string{"--no-systemd", "--root", root, "--pki", pkiWithoutServiceIP}, "run kube-lite-pki again with --apiserver-host 10.96.0.1"},
		{"node without its certificates", "hack/join-node.sh", []string{"--no-systemd", "--root", root, "--pki", emptyPKI, "--node", "n1"}, "run kube-lite-pki with --node n1"},
		{"node with a bridge name too long", "hack/join-node.sh", []string{"--no-systemd", "--root", root, "--pki", emptyPKI, "--cni-bridge", "a-far-too-long-bridge"}, "at most 15 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e2eutil.Run(tt.script, tt.args...)
			if err == nil {
				t.Fatalf("%s %v succeeded, want an error with %q:\n%s", tt.script, tt.args, tt.want, out)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("%s %v printed\n%s\nwant it to contain %q", tt.script, tt.args, out, tt.want)
			}
		})
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("refused runs wrote into --root: %v", entries)
	}
}

func TestControlPlaneAndNodeWithoutSystemd(t *testing.T) {
	requireRoot(t)
	// A short path: containerd's socket ends up under it, and unix socket
	// paths are limited to 108 bytes.
	tmp, err := os.MkdirTemp("", "kl-sd-")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(tmp, "root")
	pkiDir := filepath.Join(tmp, "pki")
	apiPort := e2eutil.MustFreePort(t)
	server := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	if _, err := e2eutil.Run(filepath.Join(env.binDir, "kube-lite-pki"), "--dir", pkiDir, "--apiserver-url", server,
		"--apiserver-host", "127.0.0.1", "--apiserver-host", kubernetesIP, "--node", nodeName+"=127.0.0.1"); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range []string{"kube-lite-proxy", "kube-lite-kubelet", "containerd", "kube-lite-apiserver", "kube-lite-etcd"} {
				b, _ := os.ReadFile(filepath.Join(root, "var/log/kube-lite", l+".log"))
				t.Logf("---- %s.log (last 30 lines) ----\n%s", l, e2eutil.LastLines(string(b), 30))
			}
		}
		if out, err := e2eutil.Run("hack/join-node.sh", "--stop", "--no-systemd", "--root", root); err != nil {
			t.Errorf("join-node.sh --stop: %v\n%s", err, out)
		}
		if out, err := e2eutil.Run("hack/install-control-plane.sh", "--stop", "--no-systemd", "--root", root); err != nil {
			t.Errorf("install-control-plane.sh --stop: %v\n%s", err, out)
		}
		if left := e2eutil.Leftovers(tmp); len(left) > 0 {
			t.Errorf("after --stop, still on the host:\n%s", strings.Join(left, "\n"))
		}
		if rules := e2eutil.NATRulesFor(cidrPrefix); len(rules) > 0 {
			t.Errorf("after --stop, NAT rules for %s are left:\n%s", clusterCIDR, strings.Join(rules, "\n"))
		}
		if err := exec.Command("ip", "link", "show", bridge).Run(); err == nil {
			t.Errorf("after --stop, bridge %s is left", bridge)
		}
		if err := exec.Command("nft", "list", "table", "ip", "kube-lite").Run(); err == nil {
			t.Errorf("after --stop, kube-lite-proxy's nftables table ip kube-lite is left")
		}
		for _, table := range []string{"main", "all"} {
			if out, _ := exec.Command("ip", "route", "show", "table", table, "to", "match", kubernetesIP).Output(); strings.Contains(string(out), serviceCIDR) {
				t.Errorf("after --stop, a route for the service range is left in table %s:\n%s", table, out)
			}
		}
		if !t.Failed() {
			os.RemoveAll(tmp)
		}
	})

	cpArgs := []string{"--no-systemd", "--root", root, "--pki", pkiDir,
		"--bin-dir", env.binDir, "--secure-port", strconv.Itoa(apiPort),
		"--etcd-client-port", strconv.Itoa(e2eutil.MustFreePort(t)), "--etcd-peer-port", strconv.Itoa(e2eutil.MustFreePort(t)),
		"--scheduler-port", strconv.Itoa(e2eutil.MustFreePort(t)), "--controller-manager-port", strconv.Itoa(e2eutil.MustFreePort(t)),
		"--cluster-cidr", clusterCIDR, "--service-cluster-ip-range", serviceCIDR}
	out, err := e2eutil.Run("hack/install-control-plane.sh", cpArgs...)
	if err != nil {
		t.Fatalf("install-control-plane.sh: %v", err)
	}
	t.Logf("install-control-plane.sh:\n%s", out)

	kubeletPort := e2eutil.MustFreePort(t)
	proxyHealthzPort := e2eutil.MustFreePort(t)
	nodeArgs := []string{"--no-systemd", "--root", root, "--pki", pkiDir, "--node", nodeName,
		"--node-ip", "127.0.0.1", "--bin-dir", env.binDir, "--images", env.imageDir,
		"--kubelet-port", strconv.Itoa(kubeletPort), "--healthz-port", strconv.Itoa(e2eutil.MustFreePort(t)), "--cni-bridge", bridge,
		"--cluster-cidr", clusterCIDR, "--service-cluster-ip-range", serviceCIDR, "--cluster-dns", clusterDNS,
		"--proxy-healthz-port", strconv.Itoa(proxyHealthzPort), "--proxy-metrics-port", strconv.Itoa(e2eutil.MustFreePort(t))}
	out, err = e2eutil.Run("hack/join-node.sh", nodeArgs...)
	if err != nil {
		t.Fatalf("join-node.sh: %v", err)
	}
	t.Logf("join-node.sh:\n%s", out)

	t.Run("files are where the units expect them", func(t *testing.T) {
		files := []struct {
			path string
			mode os.FileMode
		}{
			{"usr/local/bin/kube-lite-apiserver", 0o755},
			{"usr/local/bin/kube-lite-kubelet", 0o755},
			{"usr/local/bin/kube-lite-proxy", 0o755},
			{"usr/local/bin/kubectl-lite", 0o755},
			{"etc/kube-lite/pki/ca.crt", 0o644},
			{"etc/kube-lite/pki/apiserver.key", 0o600},
			{"etc/kube-lite/pki/sa.key", 0o600},
			{"etc/kube-lite/pki/admin.kubeconfig", 0o600},
			{"etc/kube-lite/pki/kubelet.kubeconfig", 0o600},
			{"etc/kube-lite/pki/kubelet.key", 0o600},
			{"etc/kube-lite/pki/proxy.kubeconfig", 0o600},
			{"etc/kube-lite/apiserver.env", 0o644},
			{"etc/kube-lite/kubelet.env", 0o644},
			{"etc/kube-lite/proxy.env", 0o644},
			{"etc/kube-lite/containerd/config.toml", 0o644},
			{"etc/systemd/system/kube-lite-etcd.service", 0o644},
			{"etc/systemd/system/kube-lite-apiserver.service", 0o644},
			{"etc/systemd/system/kube-lite-scheduler.service", 0o644},
			{"etc/systemd/system/kube-lite-controller-manager.service", 0o644},
			{"etc/systemd/system/kube-lite-kubelet.service", 0o644},
			{"etc/systemd/system/kube-lite-proxy.service", 0o644},
			{"etc/systemd/system/containerd.service.d/10-kube-lite.conf", 0o644},
			{"var/lib/kube-lite/images/pause.tar", 0o644},
		}
		for _, f := range files {
			st, err := os.Stat(filepath.Join(root, f.path))
			if err != nil {
				t.Errorf("%s: %v", f.path, err)
				continue
			}
			if st.Mode().Perm() != f.mode {
				t.Errorf("%s has mode %o, want %o", f.path, st.Mode().Perm(), f.mode)
			}
		}
		cfg, err := os.ReadFile(filepath.Join(root, "etc/kube-lite/containerd/config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"restrict_oom_score_adj = true", `sandbox_image = "kube-lite.local/pause:3.10"`,
			"SystemdCgroup = false", `bin_dir = "/usr/lib/cni"`, `conf_dir = "` + root + `/etc/kube-lite/cni/net.d"`,
			`address = "` + root + `/run/containerd/containerd.sock"`} {
			if !strings.Contains(string(cfg), want) {
				t.Errorf("containerd config.toml lacks %q:\n%s", want, cfg)
			}
		}
	})

	t.Run("the processes run the units' ExecStart", func(t *testing.T) {
		tests := []struct {
			unit string
			argv []string
		}{
			{"kube-lite-etcd", []string{"/usr/bin/etcd", "--data-dir", root + "/var/lib/kube-lite/etcd"}},
			{"kube-lite-apiserver", []string{root + "/usr/local/bin/kube-lite-apiserver", "--secure-port", strconv.Itoa(apiPort)}},
			{"kube-lite-scheduler", []string{root + "/usr/local/bin/kube-lite-scheduler", "--kubeconfig", root + "/etc/kube-lite/pki/scheduler.kubeconfig"}},
			{"kube-lite-controller-manager", []string{root + "/usr/local/bin/kube-lite-controller-manager", "--cluster-cidr", clusterCIDR}},
			{"containerd", []string{"/usr/bin/containerd", "--config", root + "/etc/kube-lite/containerd/config.toml"}},
			{"kube-lite-kubelet", []string{root + "/usr/local/bin/kube-lite-kubelet", "--port", strconv.Itoa(kubeletPort)}},
			{"kube-lite-proxy", []string{root + "/usr/local/bin/kube-lite-proxy", "--service-cluster-ip-range", serviceCIDR,
				"--healthz-bind-address", "0.0.0.0:" + strconv.Itoa(proxyHealthzPort)}},
		}
		for _, tt := range tests {
			pid, err := os.ReadFile(filepath.Join(root, "run/kube-lite", tt.unit+".pid"))
			if err != nil {
				t.Errorf("%s: %v", tt.unit, err)
				continue
			}
			b, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/cmdline")
			if err != nil {
				t.Errorf("%s (pid %s) is not running: %v", tt.unit, strings.TrimSpace(string(pid)), err)
				continue
			}
			argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
			if argv[0] != tt.argv[0] {
				t.Errorf("%s runs %q, want %q", tt.unit, argv[0], tt.argv[0])
			}
			if joined := " " + strings.Join(argv, " ") + " "; !strings.Contains(joined, " "+strings.Join(tt.argv[1:], " ")+" ") {
				t.Errorf("%s runs %q, want the arguments %q", tt.unit, argv, tt.argv[1:])
			}
		}
	})

	t.Run("systemd-analyze verify", func(t *testing.T) {
		if _, err := exec.LookPath("systemd-analyze"); err != nil {
			t.Skip("systemd-analyze is not installed")
		}
		units := filepath.Join(root, "etc/systemd/system")
		paths, _ := filepath.Glob(filepath.Join(units, "kube-lite-*.service"))
		if len(paths) != 6 {
			t.Fatalf("want 6 kube-lite units in %s, found %v", units, paths)
		}
		// The drop-in is checked as part of the unit it changes: Debian's
		// containerd.service with the drop-in's [Service] lines appended.
		if base, err := os.ReadFile("/lib/systemd/system/containerd.service"); err == nil {
			dropIn, err := os.ReadFile(filepath.Join(units, "containerd.service.d/10-kube-lite.conf"))
			if err != nil {
				t.Fatal(err)
			}
			merged := filepath.Join(t.TempDir(), "containerd.service")
			if err := os.WriteFile(merged, append(append(base, '\n'), dropIn...), 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, merged)
		}
		for _, p := range paths {
			out, err := exec.Command("systemd-analyze", "verify", p).CombinedOutput()
			if err != nil || len(strings.TrimSpace(string(out))) > 0 {
				t.Errorf("systemd-analyze verify %s: %v\n%s", filepath.Base(p), err, out)
			}
		}
	})

	cs, err := e2eutil.Clientset(filepath.Join(root, "etc/kube-lite/pki/admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	t.Run("the node is Ready with a podCIDR from the cluster range", func(t *testing.T) {
		node, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready := false
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			t.Errorf("node %s is not Ready: %+v", nodeName, node.Status.Conditions)
		}
		if !strings.HasPrefix(node.Spec.PodCIDR, cidrPrefix) {
			t.Errorf("node %s has podCIDR %q, want one from %s", nodeName, node.Spec.PodCIDR, clusterCIDR)
		}
	})

	t.Run("a pod is scheduled, runs and its log is served through the kubelet port", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "hello", Image: "kube-lite.local/busybox:1.35", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"/bin/sh", "-c", "echo hello from $(hostname)"},
				}},
			},
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *corev1.Pod
		err := e2eutil.Eventually(ctx, "pod hello finished", func(ctx context.Context) (bool, error) {
			var err error
			got, err = cs.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed, nil
		})
		if err != nil {
			t.Fatalf("%v (status %+v)", err, got.Status)
		}
		if got.Status.Phase != corev1.PodSucceeded || got.Spec.NodeName != nodeName {
			t.Fatalf("pod hello: phase %s on node %q, want Succeeded on %s", got.Status.Phase, got.Spec.NodeName, nodeName)
		}
		logs, err := cs.CoreV1().Pods("default").GetLogs("hello", &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(logs) != "hello from hello\n" {
			t.Errorf("pod hello logged %q, want %q", logs, "hello from hello\n")
		}
	})

	t.Run("a pod reaches the API through the kubernetes Service (kube-lite-proxy)", func(t *testing.T) {
		// Plain HTTP to the HTTPS port: busybox's own TLS sends no
		// signature_algorithms, which Go's TLS server refuses since Go
		// 1.25, and the answer to plain HTTP is as much the apiserver's.
		script := `echo "service=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
for i in $(seq 30); do
  out=$(printf 'GET /livez HTTP/1.0\r\n\r\n' | nc -w 5 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT")
  case "$out" in *HTTPS*) echo "$out"; exit 0 ;; esac
  sleep 1
done
exit 1`
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "api-client", Namespace: "default"},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "client", Image: "kube-lite.local/busybox:1.35", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"/bin/sh", "-c", script},
				}},
			},
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *corev1.Pod
		err := e2eutil.Eventually(ctx, "pod api-client finished", func(ctx context.Context) (bool, error) {
			var err error
			got, err = cs.CoreV1().Pods("default").Get(ctx, "api-client", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed, nil
		})
		if err != nil {
			t.Fatalf("%v (status %+v)", err, got.Status)
		}
		logs, err := cs.CoreV1().Pods("default").GetLogs("api-client", &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"service=" + kubernetesIP + ":443\n", "Client sent an HTTP request to an HTTPS server."} {
			if !strings.Contains(string(logs), want) {
				t.Errorf("pod api-client (%s) logged\n%s\nwant %q", got.Status.Phase, logs, want)
			}
		}
	})

	t.Run("running the scripts again leaves what runs running", func(t *testing.T) {
		units := []string{"kube-lite-etcd", "kube-lite-apiserver", "kube-lite-scheduler", "kube-lite-controller-manager", "containerd", "kube-lite-kubelet", "kube-lite-proxy"}
		pids := func() map[string]string {
			m := map[string]string{}
			for _, u := range units {
				b, _ := os.ReadFile(filepath.Join(root, "run/kube-lite", u+".pid"))
				m[u] = strings.TrimSpace(string(b))
			}
			return m
		}
		before := pids()
		for _, script := range []struct {
			name string
			args []string
		}{{"hack/install-control-plane.sh", cpArgs}, {"hack/join-node.sh", nodeArgs}} {
			out, err := e2eutil.Run(script.name, script.args...)
			if err != nil {
				t.Fatalf("%s again: %v", script.name, err)
			}
			if !strings.Contains(out, "already running") {
				t.Errorf("%s again printed\n%s\nwant it to report the running units", script.name, out)
			}
		}
		if after := pids(); !maps.Equal(before, after) {
			t.Errorf("pids changed from %v to %v", before, after)
		}
	})
}
