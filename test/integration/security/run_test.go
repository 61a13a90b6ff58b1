package security_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/pkg/pki"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestRunWithClusterPKI starts the server as kube-lite-apiserver does, with
// the flags a cluster made by kube-lite-pki uses.
func TestRunWithClusterPKI(t *testing.T) {
	port := freePort(t)
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	dir := t.TempDir()
	l := pki.Layout(dir)
	quiet := pki.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := pki.WriteClusterPKI(context.Background(), dir, pki.Options{APIServerURL: url, Nodes: []string{"n1"}}, quiet); err != nil {
		t.Fatal(err)
	}
	o := apiserver.NewOptions()
	o.BindAddress, o.SecurePort, o.DataDir, o.CertDir = "127.0.0.1", port, t.TempDir(), t.TempDir()
	o.TLSCertFile, o.TLSKeyFile = l.APIServerCert(), l.APIServerKey()
	o.Security.ClientCAFile = l.CACert()
	o.Security.ServiceAccountKeyFiles = []string{l.ServiceAccountPublicKey()}
	o.Security.ServiceAccountSigningKeyFile = l.ServiceAccountKey()

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- apiserver.Run(ctx, o, ready) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("apiserver exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("apiserver never became ready")
	}

	load := func(path string) *rest.Config {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	admin := client(t, load(l.AdminKubeconfig()))
	tctx := ctxT(t)
	if _, err := admin.CoreV1().Namespaces().List(tctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("admin lists namespaces: %v", err)
	}
	node := client(t, load(l.NodeKubeconfig("n1")))
	_, err := node.CoreV1().Secrets("default").List(tctx, metav1.ListOptions{})
	wantStatus(t, "node lists secrets", err, 403, metav1.StatusReasonForbidden)
	sched := client(t, load(l.SchedulerKubeconfig()))
	if _, err := sched.CoreV1().Nodes().List(tctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("scheduler lists nodes: %v", err)
	}

	anon := &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{CAFile: l.CACert()}}
	_, err = client(t, anon).CoreV1().Pods("default").List(tctx, metav1.ListOptions{})
	wantStatus(t, "no credentials", err, 401, metav1.StatusReasonUnauthorized)
	hc, err := rest.HTTPClientFor(anon)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz without credentials: %d", resp.StatusCode)
	}
}
