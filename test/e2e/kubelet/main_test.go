//go:build e2e

// Package kubelet runs the real kube-lite-kubelet binary against a real
// kube-lite-apiserver, a private containerd, runc and the CNI plugins on
// this host. It needs root; hack/containerd.sh installs and starts what it
// needs and hack/images.sh builds the images, so it runs on a fresh machine.
// No scheduler runs: tests create pods with spec.nodeName set.
package kubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-lite/kube-lite/pkg/kubelet/cri"
	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

const nodeName = "e2e-node"

// podCIDR and bridge are this run's own (see pickNetwork), so that runs on
// one host (and other clusters there) never share a bridge or addresses.
var podCIDR, bridge string

// pickNetwork chooses a /24 in 10.244.100-249.0 that no interface on this
// host uses, and a bridge name from it.
func pickNetwork() error {
	// Third octets of the host's 10.x.y.z addresses.
	used := map[int]bool{}
	ifaces, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifaces {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip4 := n.IP.To4(); ip4 != nil && ip4[0] == 10 {
					used[int(ip4[2])] = true
				}
			}
		}
	}
	start := os.Getpid() % 150
	for i := 0; i < 150; i++ {
		octet := 100 + (start+i)%150
		if !used[octet] {
			podCIDR = fmt.Sprintf("10.244.%d.0/24", octet)
			bridge = fmt.Sprintf("kle2e%d", octet)
			return nil
		}
	}
	return fmt.Errorf("no free 10.244.x.0/24 for the pod network")
}

type cluster struct {
	skip        string
	root        string
	binDir      string
	imageDir    string
	ctrDir      string
	adminKC     string
	nodeKC      string
	kubeletPort int
	kubelet     *exec.Cmd
	kubeletLog  string
	cs          kubernetes.Interface
}

var env cluster

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		env.skip = "the kubelet e2e tests need root (containerd, runc, CNI, mounts)"
		os.Exit(m.Run())
	}
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelet e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func requireCluster(t *testing.T) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
}

func setup(m *testing.M) (int, error) {
	tmp, err := os.MkdirTemp("", "kubelet-e2e-")
	if err != nil {
		return 0, err
	}
	env.root = tmp
	defer os.RemoveAll(tmp)
	if err := pickNetwork(); err != nil {
		return 0, err
	}
	if _, err := e2eutil.Run("hack/containerd.sh", "install"); err != nil {
		return 0, err
	}
	env.binDir = filepath.Join(tmp, "bin")
	if err := e2eutil.BuildBinaries(env.binDir, "./cmd/kube-lite-apiserver", "./cmd/kube-lite-kubelet", "./cmd/kubectl-lite"); err != nil {
		return 0, err
	}
	env.imageDir = filepath.Join(tmp, "images")
	if _, err := e2eutil.Run("hack/images.sh", env.imageDir); err != nil {
		return 0, err
	}
	env.ctrDir = filepath.Join(tmp, "containerd")
	out, err := e2eutil.Run("hack/containerd.sh", "start", env.ctrDir)
	if err != nil {
		return 0, err
	}
	defer func() {
		_, _ = e2eutil.Run("hack/containerd.sh", "stop", env.ctrDir)
		_, _ = e2eutil.Run("ip", "link", "del", bridge)
	}()
	sock := strings.TrimSpace(out)

	stopAPI, err := startAPIServer(tmp)
	if err != nil {
		return 0, err
	}
	defer stopAPI()

	if env.kubeletPort, err = e2eutil.FreePort(); err != nil {
		return 0, err
	}
	env.kubeletLog = filepath.Join(tmp, "kubelet.log")
	if err := startKubelet(sock); err != nil {
		return 0, err
	}
	defer stopKubelet()
	if err := e2eutil.Eventually(context.Background(), "node "+nodeName+" Ready", nodeReady); err != nil {
		log, _ := os.ReadFile(env.kubeletLog)
		return 0, fmt.Errorf("%w\nkubelet log:\n%s", err, log)
	}
	code := m.Run()
	if code != 0 {
		log, _ := os.ReadFile(env.kubeletLog)
		fmt.Fprintf(os.Stderr, "---- kubelet log (last 60 lines) ----\n%s\n", e2eutil.LastLines(string(log), 60))
	}
	if err := waitNodeEmpty(sock); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet e2e teardown:", err)
	}
	return code, nil
}

// waitNodeEmpty lets the kubelet tear down the pods the tests deleted
// (their CNI DEL removes hostPort rules from the host's iptables) before
// containerd is stopped under it.
func waitNodeEmpty(sock string) error {
	rt, err := cri.Dial(sock)
	if err != nil {
		return err
	}
	defer rt.Close()
	return e2eutil.Eventually(context.Background(), "no pod sandboxes left", func(ctx context.Context) (bool, error) {
		sandboxes, err := rt.ListPodSandbox(ctx, nil)
		return err == nil && len(sandboxes) == 0, nil
	})
}

func startAPIServer(tmp string) (func(), error) {
	tokens := filepath.Join(tmp, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(
		"admin-token,admin,admin-uid,\"system:masters\"\n"+
			"node-token,system:node:"+nodeName+",node-uid,\"system:nodes\"\n"), 0o600); err != nil {
		return nil, err
	}
	srv, err := e2eutil.StartAPIServer(filepath.Join(env.binDir, "kube-lite-apiserver"), tmp,
		"--data-dir="+filepath.Join(tmp, "etcd"), "--token-auth-file="+tokens)
	if err != nil {
		return nil, err
	}
	env.adminKC = filepath.Join(tmp, "admin.kubeconfig")
	env.nodeKC = filepath.Join(tmp, "node.kubeconfig")
	for path, token := range map[string]string{env.adminKC: "admin-token", env.nodeKC: "node-token"} {
		kc := e2eutil.TokenKubeconfig{Server: srv.URL, CAPEM: srv.CAPEM, Token: token, Context: "e2e"}
		if err := kc.Write(path); err != nil {
			srv.Stop()
			return nil, err
		}
	}
	if env.cs, err = e2eutil.Clientset(env.adminKC); err != nil {
		srv.Stop()
		return nil, err
	}
	return srv.Stop, nil
}

func startKubelet(sock string) error {
	logFile, err := os.OpenFile(env.kubeletLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(env.binDir, "kube-lite-kubelet"),
		"--kubeconfig", env.nodeKC,
		"--node-name", nodeName,
		"--container-runtime-endpoint", "unix://"+sock,
		"--root-dir", filepath.Join(env.root, "kubelet"),
		"--pod-cidr", podCIDR,
		"--image-dir", env.imageDir,
		"--cni-conf-dir", filepath.Join(env.ctrDir, "cni", "net.d"),
		"--port", strconv.Itoa(env.kubeletPort),
		"--healthz-port", "0",
		"--crashloop-backoff-initial", "2s",
		"--image-pull-backoff-initial", "2s",
		"--sync-frequency", "5s",
		"--cni-bridge", bridge, "--non-masquerade-cidr=",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	go func() { _ = cmd.Wait(); logFile.Close() }()
	env.kubelet = cmd
	return nil
}

func stopKubelet() {
	if env.kubelet == nil || env.kubelet.Process == nil {
		return
	}
	_ = env.kubelet.Process.Signal(syscall.SIGTERM)
	for i := 0; i < 100; i++ {
		if env.kubelet.Process.Signal(syscall.Signal(0)) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = env.kubelet.Process.Kill()
}

func nodeReady(ctx context.Context) (bool, error) {
	node, err := env.cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return false, nil
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true, nil
		}
	}
	return false, nil
}

// kubeletGet reads a path of the kubelet's HTTPS API.
func kubeletGet(path string) (string, error) {
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d%s", env.kubeletPort, path))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return string(b), err
}
