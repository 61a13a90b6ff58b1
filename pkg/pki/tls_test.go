package pki

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"
)

// whoAmI answers with the user and groups a Kubernetes apiserver would derive
// from the verified client certificate.
func whoAmI(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		http.Error(w, "no verified client certificate", http.StatusUnauthorized)
		return
	}
	subject := r.TLS.VerifiedChains[0][0].Subject
	fmt.Fprintf(w, "%s %s", subject.CommonName, strings.Join(subject.Organization, ","))
}

// startAPIServer serves whoAmI with the PKI's apiserver certificate and
// requires client certificates signed by the PKI's CA, as kube-lite's
// apiserver does. The PKI is written for the server's own address.
func startAPIServer(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(whoAmI))
	o := baseOptions()
	o.APIServerURL = "https://" + srv.Listener.Addr().String()
	writePKI(t, dir, o)

	l := Layout(dir)
	serving, err := tls.LoadX509KeyPair(l.APIServerCert(), l.APIServerKey())
	if err != nil {
		t.Fatal(err)
	}
	clientCAs, err := LoadCertPool(l.CACert())
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{serving},
		ClientCAs:    clientCAs,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	// The handshake errors of the rejection cases are expected; keep them
	// out of the test log.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func get(ctx context.Context, cfg *rest.Config, path string) (string, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return string(body), nil
}

func TestKubeconfigsAuthenticateOverTLS(t *testing.T) {
	dir := t.TempDir()
	srv := startAPIServer(t, dir)
	l := Layout(dir)

	tests := []struct {
		kubeconfig string
		want       string
	}{
		{l.AdminKubeconfig(), "kubernetes-admin system:masters"},
		{l.SchedulerKubeconfig(), "system:kube-scheduler "},
		{l.ControllerManagerKubeconfig(), "system:kube-controller-manager "},
		{l.ProxyKubeconfig(), "system:kube-proxy "},
		{l.NodeKubeconfig("node-1"), "system:node:node-1 system:nodes"},
		{l.NodeKubeconfig("node-2"), "system:node:node-2 system:nodes"},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.kubeconfig), func(t *testing.T) {
			raw, err := clientcmd.LoadFromFile(tc.kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if raw.CurrentContext != ClusterName || raw.Contexts[ClusterName] == nil || raw.Contexts[ClusterName].Cluster != ClusterName {
				t.Errorf("current context %q (%+v), want %q on cluster %q", raw.CurrentContext, raw.Contexts[ClusterName], ClusterName, ClusterName)
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", tc.kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != srv.URL {
				t.Errorf("server %q, want %q", cfg.Host, srv.URL)
			}
			got, err := get(context.Background(), cfg, "/whoami")
			if err != nil {
				t.Fatalf("request with %s: %v", filepath.Base(tc.kubeconfig), err)
			}
			if got != tc.want {
				t.Errorf("server saw %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAPIServerRejectsForeignCredentials(t *testing.T) {
	dir := t.TempDir()
	srv := startAPIServer(t, dir)
	good, err := clientcmd.BuildConfigFromFlags("", Layout(dir).AdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}

	// Another cluster's admin: same names, different CA.
	other := t.TempDir()
	o := baseOptions()
	o.APIServerURL = srv.URL
	writePKI(t, other, o)
	foreign, err := clientcmd.BuildConfigFromFlags("", Layout(other).AdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		mutate func(cfg *rest.Config)
	}{
		{"no client certificate", func(cfg *rest.Config) { cfg.CertData, cfg.KeyData = nil, nil }},
		{"client certificate of another CA", func(cfg *rest.Config) { cfg.CertData, cfg.KeyData = foreign.CertData, foreign.KeyData }},
		{"server checked against another CA", func(cfg *rest.Config) { cfg.CAData = foreign.CAData }},
		{"server name not in the certificate", func(cfg *rest.Config) { cfg.ServerName = "elsewhere.example" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rest.CopyConfig(good)
			tc.mutate(cfg)
			if got, err := get(context.Background(), cfg, "/whoami"); err == nil {
				t.Fatalf("request succeeded (server saw %q), want a TLS failure", got)
			}
		})
	}
	// The same request with the untouched config works, so the failures
	// above are the credentials' doing.
	if _, err := get(context.Background(), good, "/whoami"); err != nil {
		t.Fatalf("admin kubeconfig: %v", err)
	}
}

func TestAPIServerCertificateServesInClusterNames(t *testing.T) {
	dir := t.TempDir()
	srv := startAPIServer(t, dir)
	cfg, err := clientcmd.BuildConfigFromFlags("", Layout(dir).AdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"localhost", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "cp.example"} {
		t.Run(name, func(t *testing.T) {
			c := rest.CopyConfig(cfg)
			c.Host = srv.URL
			c.ServerName = name
			if _, err := get(context.Background(), c, "/whoami"); err != nil {
				t.Errorf("TLS as %q: %v", name, err)
			}
		})
	}
}

func hostnameSAN(t *testing.T) string {
	t.Helper()
	name, err := os.Hostname()
	if err != nil {
		t.Skipf("no hostname: %v", err)
	}
	return strings.ToLower(name)
}

func TestSelfSignedServing(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath, err := SelfSignedServing(dir, []string{"api.example", "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	if certPath != filepath.Join(dir, "apiserver.crt") || keyPath != filepath.Join(dir, "apiserver.key") {
		t.Errorf("paths %s, %s", certPath, keyPath)
	}
	cert, err := LoadCertFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	wantDNS := []string{"localhost", "api.example", hostnameSAN(t)}
	for _, n := range wantDNS {
		if !strings.Contains(strings.Join(cert.DNSNames, " "), n) {
			t.Errorf("DNS SANs %q lack %q", cert.DNSNames, n)
		}
	}
	for _, ip := range []string{"127.0.0.1", "::1", "10.1.2.3"} {
		if !strings.Contains(strings.Join(ipStrings(cert.IPAddresses), " "), ip) {
			t.Errorf("IP SANs %q lack %s", cert.IPAddresses, ip)
		}
	}
	if info, err := os.Stat(keyPath); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("apiserver.key mode: %v %v, want 0600", info.Mode().Perm(), err)
	}

	// A client that trusts the certificate reaches the server by each name.
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	roots, err := LoadCertPool(certPath)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		serverName string
		wantOK     bool
	}{
		{"localhost", true},
		{"api.example", true},
		{"127.0.0.1", true},
		{"other.example", false},
	}
	for _, tc := range tests {
		t.Run(tc.serverName, func(t *testing.T) {
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: tc.serverName}}}
			resp, err := client.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
			if (err == nil) != tc.wantOK {
				t.Errorf("GET as %q: err=%v, want ok=%v", tc.serverName, err, tc.wantOK)
			}
		})
	}
}

func TestSelfSignedServingReuse(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		setup       func(t *testing.T, dir string) // after the first call
		hosts       []string
		later       time.Duration
		wantRewrite bool
	}{
		{name: "same hosts", hosts: []string{"api.example"}},
		{name: "half a year later", hosts: []string{"api.example"}, later: 180 * 24 * time.Hour},
		{name: "new host", hosts: []string{"api.example", "lb.example"}, wantRewrite: true},
		{name: "expired", hosts: []string{"api.example"}, later: 400 * 24 * time.Hour, wantRewrite: true},
		{name: "key removed", hosts: []string{"api.example"}, wantRewrite: true,
			setup: func(t *testing.T, dir string) { mustRemove(t, filepath.Join(dir, SelfSignedKeyFile)) }},
		{
			name: "CA-signed pair put there on purpose", hosts: []string{"lb.example"},
			setup: func(t *testing.T, dir string) {
				ca, err := EnsureCA(t.TempDir(), WithClock(clocktesting.NewFakePassiveClock(start)))
				if err != nil {
					t.Fatal(err)
				}
				kp, err := IssueCert(ca, CertSpec{CommonName: "custom", DNSNames: []string{"custom.example"}, Usages: []Usage{UsageServer}})
				if err != nil {
					t.Fatal(err)
				}
				writeTestFile(t, filepath.Join(dir, SelfSignedCertFile), kp.CertPEM)
				writeTestFile(t, filepath.Join(dir, SelfSignedKeyFile), kp.KeyPEM)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			clk := clocktesting.NewFakePassiveClock(start)
			if _, _, err := SelfSignedServing(dir, []string{"api.example"}, WithClock(clk)); err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before := readDir(t, dir)
			clk.SetTime(start.Add(tc.later))
			certPath, _, err := SelfSignedServing(dir, tc.hosts, WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			after := readDir(t, dir)
			rewritten := !bytes.Equal(before[SelfSignedCertFile], after[SelfSignedCertFile])
			if rewritten != tc.wantRewrite {
				t.Errorf("certificate rewritten = %v, want %v", rewritten, tc.wantRewrite)
			}
			cert, err := LoadCertFile(certPath)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: mustPool(t, certPath), CurrentTime: clk.Now(), DNSName: tc.hosts[0]}); tc.wantRewrite && err != nil {
				t.Errorf("rewritten certificate does not serve %s now: %v", tc.hosts[0], err)
			}
		})
	}
}

func mustPool(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	pool, err := LoadCertPool(path)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}
