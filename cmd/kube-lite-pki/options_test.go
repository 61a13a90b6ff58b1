package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-lite/kube-lite/pkg/pki"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newCommand(&out)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestCommandRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"http URL", []string{"--apiserver-url", "http://127.0.0.1:6443"}, "--apiserver-url: invalid apiserver URL"},
		{"bad node name", []string{"--node", "Node_1"}, `--node: invalid node name "Node_1"`},
		{"empty node name", []string{"--node", "=10.0.0.1"}, "empty node name"},
		{"node with '=' and no address", []string{"--node", "n1="}, "no address after '='"},
		{"duplicate node", []string{"--node", "n1", "--node", "n1=10.0.0.1"}, `node "n1" listed twice`},
		{"empty dir", []string{"--dir", ""}, "--dir must not be empty"},
		{"zero validity", []string{"--validity", "0s"}, "--validity must be positive"},
		{"positional argument", []string{"extra"}, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"--dir", dir}, tc.args...)
			_, err := run(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("wrote %d files despite the error", len(entries))
			}
		})
	}
}

func TestCommandWritesAndKeepsPKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	base := []string{"--dir", dir, "--apiserver-url", "https://10.0.0.1:6443", "--apiserver-host", "myhost", "--node", "node-1"}

	out, err := run(t, base...)
	if err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	for _, want := range []string{"created  ca.crt", "created  admin.kubeconfig", "created  node-node-1.kubeconfig", "created  kubelet-node-1.crt", "KUBECONFIG=" + filepath.Join(dir, "admin.kubeconfig")} {
		if !strings.Contains(out, want) {
			t.Errorf("first run output lacks %q:\n%s", want, out)
		}
	}

	out, err = run(t, append(base, "--node", "node-2=10.0.0.5,node-2.example")...)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	for _, want := range []string{"kept     ca.crt", "kept     apiserver.crt", "kept     node-node-1.kubeconfig", "created  node-node-2.kubeconfig", "created  kubelet-node-2.crt"} {
		if !strings.Contains(out, want) {
			t.Errorf("second run output lacks %q:\n%s", want, out)
		}
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "node-node-2.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.0.0.1:6443" {
		t.Errorf("node-2 kubeconfig server %q, want https://10.0.0.1:6443", cfg.Host)
	}
	data, err := os.ReadFile(filepath.Join(dir, "kubelet-node-2.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCertPEM(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cert.DNSNames, ","); got != "node-2,node-2.example" {
		t.Errorf("kubelet-node-2 DNS SANs %q, want node-2,node-2.example", got)
	}
	if len(cert.IPAddresses) != 1 || cert.IPAddresses[0].String() != "10.0.0.5" {
		t.Errorf("kubelet-node-2 IP SANs %v, want [10.0.0.5]", cert.IPAddresses)
	}
}
