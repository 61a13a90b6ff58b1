//go:build e2e

// Package upstreamkubectl drives a real kube-lite-apiserver process with
// upstream kubectl, built from k8s.io/kubectl: what a user types, checked
// against what a user reads.
package upstreamkubectl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-lite/kube-lite/pkg/pki"
	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
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
	tmp, err := os.MkdirTemp("", "kube-lite-e2e-kubectl-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	binDir := filepath.Join(tmp, "bin")
	if err := e2eutil.BuildBinaries(binDir, "./test/e2e/upstreamkubectl/kubectl", "./cmd/kube-lite-apiserver"); err != nil {
		return 0, err
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

	srv, err := e2eutil.StartAPIServer(filepath.Join(binDir, "kube-lite-apiserver"), tmp,
		"--data-dir="+filepath.Join(tmp, "etcd"), "--client-ca-file="+filepath.Join(tmp, "client-ca", pki.CACertFile))
	if err != nil {
		return 0, err
	}
	defer srv.Stop()
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	if _, err := pki.WriteKubeconfig(kubeconfig, pki.Kubeconfig{ServerURL: srv.URL, CAPEM: srv.CAPEM, User: "e2e-admin", ClientCertPEM: admin.CertPEM, ClientKeyPEM: admin.KeyPEM}); err != nil {
		return 0, err
	}
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return 0, err
	}
	cluster = env{kubectl: filepath.Join(binDir, "kubectl"), kubeconfig: kubeconfig, work: work}
	code := m.Run()
	if code != 0 {
		log, _ := os.ReadFile(srv.LogPath)
		fmt.Fprintf(os.Stderr, "--- apiserver log (last 4 KiB):\n%s\n", e2eutil.Tail(log, 4<<10))
	}
	return code, nil
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
