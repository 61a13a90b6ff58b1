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
	"crypto/x509"
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
	"k8s.io/client-go/tools/clientcmd"
)

const nodeName = "e2e-node"

// podCIDR and bridge are this run's own (see pickNetwork), so that runs on
// one host (and other clusters there) never share a bridge or addresses.
var podCIDR, bridge string

// pickNetwork chooses a /24 in 10.244.100-249.0 that no interface on this
// host uses, and a bridge name from it.
func pickNetwork() error {
	used := map[string]bool{}
	ifaces, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifaces {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				used[fmt.Sprintf("%d", n.IP.To4()[2])+"/"+fmt.Sprintf("%d", n.IP.To4()[0])] = true
			}
		}
	}
	start := os.Getpid() % 150
	for i := 0; i < 150; i++ {
		octet := 100 + (start+i)%150
		if !used[fmt.Sprintf("%d/10", octet)] {
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
	serverURL   string
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

func repoRoot() string { return filepath.Join("..", "..", "..") }

func run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
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
	if _, err := run("hack/containerd.sh", "install"); err != nil {
		return 0, err
	}
	env.binDir = filepath.Join(tmp, "bin")
	if _, err := run("go", "build", "-o", env.binDir+"/", "./cmd/kube-lite-apiserver", "./cmd/kube-lite-kubelet", "./cmd/kubectl-lite"); err != nil {
		return 0, err
	}
	env.imageDir = filepath.Join(tmp, "images")
	if _, err := run("hack/images.sh", env.imageDir); err != nil {
		return 0, err
	}
	env.ctrDir = filepath.Join(tmp, "containerd")
	out, err := run("hack/containerd.sh", "start", env.ctrDir)
	if err != nil {
		return 0, err
	}
	defer func() {
		_, _ = run("hack/containerd.sh", "stop", env.ctrDir)
		_, _ = run("ip", "link", "del", bridge)
	}()
	sock := strings.TrimSpace(out)

	stopAPI, err := startAPIServer(tmp)
	if err != nil {
		return 0, err
	}
	defer stopAPI()

	if env.kubeletPort, err = freePort(); err != nil {
		return 0, err
	}
	env.kubeletLog = filepath.Join(tmp, "kubelet.log")
	if err := startKubelet(sock); err != nil {
		return 0, err
	}
	defer stopKubelet()
	if err := waitNodeReady(2 * time.Minute); err != nil {
		log, _ := os.ReadFile(env.kubeletLog)
		return 0, fmt.Errorf("%w\nkubelet log:\n%s", err, log)
	}
	code := m.Run()
	if code != 0 {
		log, _ := os.ReadFile(env.kubeletLog)
		fmt.Fprintf(os.Stderr, "---- kubelet log (last 60 lines) ----\n%s\n", lastLines(string(log), 60))
	}
	return code, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func startAPIServer(tmp string) (func(), error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	tokens := filepath.Join(tmp, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(
		"admin-token,admin,admin-uid,\"system:masters\"\n"+
			"node-token,system:node:"+nodeName+",node-uid,\"system:nodes\"\n"), 0o600); err != nil {
		return nil, err
	}
	certDir := filepath.Join(tmp, "certs")
	logFile, err := os.Create(filepath.Join(tmp, "apiserver.log"))
	if err != nil {
		return nil, err
	}
	srv := exec.Command(filepath.Join(env.binDir, "kube-lite-apiserver"),
		"--secure-port", strconv.Itoa(port), "--bind-address", "127.0.0.1",
		"--data-dir", filepath.Join(tmp, "etcd"), "--cert-dir", certDir, "--token-auth-file", tokens)
	srv.Stdout, srv.Stderr = logFile, logFile
	if err := srv.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
		logFile.Close()
	}
	env.serverURL = fmt.Sprintf("https://127.0.0.1:%d", port)
	var ca []byte
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ca, err = os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
		if err == nil && ready(ca) {
			break
		}
		if time.Now().After(deadline) {
			stop()
			log, _ := os.ReadFile(logFile.Name())
			return nil, fmt.Errorf("apiserver not ready\n%s", log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	env.adminKC = filepath.Join(tmp, "admin.kubeconfig")
	env.nodeKC = filepath.Join(tmp, "node.kubeconfig")
	for path, token := range map[string]string{env.adminKC: "admin-token", env.nodeKC: "node-token"} {
		if err := writeKubeconfig(path, ca, token); err != nil {
			stop()
			return nil, err
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env.adminKC)
	if err != nil {
		stop()
		return nil, err
	}
	if env.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

func writeKubeconfig(path string, ca []byte, token string) error {
	cfg := clientcmdapiConfig(env.serverURL, ca, token)
	return clientcmd.WriteToFile(*cfg, path)
}

func ready(ca []byte) bool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(env.serverURL + "/readyz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
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

func waitNodeReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		node, err := env.cs.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err == nil {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("node %s not Ready within %s", nodeName, timeout)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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
