//go:build e2e

// Package upstreamkubectl drives a real kube-lite-apiserver process with
// upstream kubectl, built from k8s.io/kubectl: what a user types, checked
// against what a user reads.
package upstreamkubectl

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
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

	"github.com/kube-lite/kube-lite/pkg/pki"
)

// env is the cluster every test in the package talks to.
type env struct {
	kubectl    string
	kubeconfig string
	work       string
}

var cluster env

func TestMain(m *testing.M) {
	code, err := setUp(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "upstreamkubectl e2e: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setUp(m *testing.M) (int, error) {
	root, err := repoRoot()
	if err != nil {
		return 0, err
	}
	tmp, err := os.MkdirTemp("", "kube-lite-e2e-kubectl-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	binDir := filepath.Join(tmp, "bin")
	kubectl := filepath.Join(binDir, "kubectl")
	apiserverBin := filepath.Join(binDir, "kube-lite-apiserver")
	for _, b := range []struct{ out, pkg string }{
		{kubectl, "./test/e2e/upstreamkubectl/kubectl"},
		{apiserverBin, "./cmd/kube-lite-apiserver"},
	} {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("build %s: %w\n%s", b.pkg, err, out)
		}
	}

	// Clients authenticate with certificates from their own CA, as in a
	// real cluster; system:masters makes the e2e user a cluster admin.
	clientCA, err := pki.EnsureCA(filepath.Join(tmp, "client-ca"))
	if err != nil {
		return 0, err
	}
	admin, err := pki.IssueCert(clientCA, pki.CertSpec{CommonName: "e2e-admin", Organizations: []string{"system:masters"}, Usages: []pki.Usage{pki.UsageClient}})
	if err != nil {
		return 0, err
	}

	port, err := freePort()
	if err != nil {
		return 0, err
	}
	certDir := filepath.Join(tmp, "certs")
	logPath := filepath.Join(tmp, "apiserver.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	srv := exec.Command(apiserverBin, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--data-dir="+filepath.Join(tmp, "etcd"), "--cert-dir="+certDir,
		"--client-ca-file="+filepath.Join(tmp, "client-ca", pki.CACertFile))
	srv.Stdout, srv.Stderr = logFile, logFile
	if err := srv.Start(); err != nil {
		return 0, fmt.Errorf("start apiserver: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = srv.Wait(); close(exited) }()
	defer func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = srv.Process.Kill()
			<-exited
		}
	}()
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	if err := waitReady(url, exited); err != nil {
		log, _ := os.ReadFile(logPath)
		return 0, fmt.Errorf("%w\napiserver log:\n%s", err, log)
	}
	ca, err := os.ReadFile(filepath.Join(certDir, pki.SelfSignedCertFile))
	if err != nil {
		return 0, fmt.Errorf("serving certificate: %w", err)
	}
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	if _, err := pki.WriteKubeconfig(kubeconfig, pki.Kubeconfig{ServerURL: url, CAPEM: ca, User: "e2e-admin", ClientCertPEM: admin.CertPEM, ClientKeyPEM: admin.KeyPEM}); err != nil {
		return 0, err
	}
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return 0, err
	}
	cluster = env{kubectl: kubectl, kubeconfig: kubeconfig, work: work}
	code := m.Run()
	if code != 0 {
		log, _ := os.ReadFile(logPath)
		fmt.Fprintf(os.Stderr, "--- apiserver log (last 4 KiB):\n%s\n", tail(log, 4<<10))
	}
	return code, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitReady(url string, exited <-chan struct{}) error {
	// The probe skips verification: it only asks whether the port answers;
	// kubectl itself verifies the server against the CA.
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := hc.Get(url + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("apiserver exited before it was ready")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("apiserver not ready at %s: %v", url, err)
		}
	}
}

// kubectl runs kubectl against the test cluster and returns stdout and
// stderr; err is non-nil when kubectl exits non-zero.
func kubectl(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cluster.kubectl, append([]string{"--kubeconfig", cluster.kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// mustKubectl is kubectl that fails the test on a non-zero exit.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// writeManifest writes a manifest into the work directory and returns its path.
func writeManifest(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(cluster.work, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
