package pki

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func writePKI(t *testing.T, dir string, o Options, opts ...Option) *Result {
	t.Helper()
	opts = append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	res, err := WriteClusterPKI(context.Background(), dir, o, opts...)
	if err != nil {
		t.Fatalf("WriteClusterPKI: %v", err)
	}
	return res
}

func baseOptions() Options {
	return Options{
		APIServerURL:   "https://10.0.0.1:6443",
		APIServerHosts: []string{"cp.example", "192.168.1.10"},
		Nodes:          []string{"node-1", "node-2"},
		NodeHosts:      map[string][]string{"node-2": {"10.0.0.5", "node-2.example"}},
	}
}

func ipStrings(ips []net.IP) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func TestWriteClusterPKIIdentities(t *testing.T) {
	dir := t.TempDir()
	writePKI(t, dir, baseOptions())
	l := Layout(dir)
	ca, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		cert  string
		cn    string
		orgs  []string
		usage x509.ExtKeyUsage
		dns   []string
		ips   []string
	}{
		{
			name: "apiserver", cert: l.APIServerCert(), cn: "kube-apiserver", usage: x509.ExtKeyUsageServerAuth,
			dns: []string{"localhost", "cp.example", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			ips: []string{"10.0.0.1", "127.0.0.1", "192.168.1.10"},
		},
		{name: "admin", cert: filepath.Join(dir, "admin.crt"), cn: "kubernetes-admin", orgs: []string{"system:masters"}, usage: x509.ExtKeyUsageClientAuth},
		{name: "scheduler", cert: filepath.Join(dir, "scheduler.crt"), cn: "system:kube-scheduler", usage: x509.ExtKeyUsageClientAuth},
		{name: "controller-manager", cert: filepath.Join(dir, "controller-manager.crt"), cn: "system:kube-controller-manager", usage: x509.ExtKeyUsageClientAuth},
		{name: "proxy", cert: filepath.Join(dir, "proxy.crt"), cn: "system:kube-proxy", usage: x509.ExtKeyUsageClientAuth},
		{name: "node-1 client", cert: filepath.Join(dir, "node-node-1.crt"), cn: "system:node:node-1", orgs: []string{"system:nodes"}, usage: x509.ExtKeyUsageClientAuth},
		{name: "node-2 client", cert: filepath.Join(dir, "node-node-2.crt"), cn: "system:node:node-2", orgs: []string{"system:nodes"}, usage: x509.ExtKeyUsageClientAuth},
		{name: "node-1 kubelet serving", cert: l.KubeletCert("node-1"), cn: "system:node:node-1", orgs: []string{"system:nodes"}, usage: x509.ExtKeyUsageServerAuth, dns: []string{"node-1"}},
		{
			name: "node-2 kubelet serving", cert: l.KubeletCert("node-2"), cn: "system:node:node-2", orgs: []string{"system:nodes"}, usage: x509.ExtKeyUsageServerAuth,
			dns: []string{"node-2", "node-2.example"}, ips: []string{"10.0.0.5"},
		},
		{name: "apiserver kubelet client", cert: l.APIServerKubeletClientCert(), cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}, usage: x509.ExtKeyUsageClientAuth},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cert, err := LoadCertFile(tc.cert)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.CertPool(), KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
				t.Errorf("does not chain to the CA for usage %v: %v", tc.usage, err)
			}
			other := x509.ExtKeyUsageClientAuth
			if tc.usage == other {
				other = x509.ExtKeyUsageServerAuth
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.CertPool(), KeyUsages: []x509.ExtKeyUsage{other}}); err == nil {
				t.Errorf("also valid for usage %v, want only %v", other, tc.usage)
			}
			if cert.Subject.CommonName != tc.cn {
				t.Errorf("CN = %q, want %q", cert.Subject.CommonName, tc.cn)
			}
			if !sameSet(cert.Subject.Organization, tc.orgs) {
				t.Errorf("O = %q, want %q", cert.Subject.Organization, tc.orgs)
			}
			if !sameSet(cert.DNSNames, tc.dns) {
				t.Errorf("DNS SANs = %q, want %q", cert.DNSNames, tc.dns)
			}
			if got := ipStrings(cert.IPAddresses); !sameSet(got, tc.ips) {
				t.Errorf("IP SANs = %q, want %q", got, tc.ips)
			}
			if key, err := LoadKeyFile(strings.TrimSuffix(tc.cert, ".crt") + ".key"); err != nil {
				t.Error(err)
			} else if !publicKeyMatches(key, cert.PublicKey) {
				t.Error("key file does not match the certificate")
			}
		})
	}
}

func TestWriteClusterPKIServiceAccountKey(t *testing.T) {
	dir := t.TempDir()
	writePKI(t, dir, baseOptions())
	l := Layout(dir)
	key, err := LoadKeyFile(l.ServiceAccountKey())
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok || rsaKey.N.BitLen() != 2048 {
		t.Fatalf("sa.key is %T, want a 2048-bit RSA key", key)
	}
	pubPEM, err := os.ReadFile(l.ServiceAccountPublicKey())
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pubPEM)
	if block == nil || block.Type != "PUBLIC KEY" {
		t.Fatalf("sa.pub is not a PEM PUBLIC KEY: %q", pubPEM)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !rsaKey.PublicKey.Equal(pub) {
		t.Error("sa.pub is not the public half of sa.key")
	}
}

func TestWriteClusterPKISecretsArePrivate(t *testing.T) {
	dir := t.TempDir()
	// A key copied in with loose permissions gets tightened on re-run.
	writePKI(t, dir, baseOptions())
	if err := os.Chmod(filepath.Join(dir, "admin.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	writePKI(t, dir, baseOptions())

	var secrets int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		name := d.Name()
		switch {
		case strings.Contains(name, ".tmp-"):
			t.Errorf("temporary file %s left behind", name)
		case strings.HasSuffix(name, ".key"), strings.HasSuffix(name, ".kubeconfig"):
			secrets++
			if mode := info.Mode().Perm(); mode != 0o600 {
				t.Errorf("%s has mode %o, want 600", name, mode)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// ca, apiserver, apiserver-kubelet-client, sa, admin, scheduler,
	// controller-manager, proxy, 2 nodes × (client, kubelet): 12 keys; 6 kubeconfigs.
	if secrets != 18 {
		t.Errorf("found %d key and kubeconfig files, want 18", secrets)
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}

func actions(res *Result) map[string]Action {
	out := map[string]Action{}
	for _, f := range res.Files {
		out[filepath.Base(f.Path)] = f.Action
	}
	return out
}

func TestWriteClusterPKIRerun(t *testing.T) {
	tests := []struct {
		name   string
		change func(o *Options)
		// files whose bytes must differ after the re-run; all others must be identical.
		changed  []string
		want     map[string]Action
		notAdded []string
	}{
		{
			name:   "same options keep every file",
			change: func(o *Options) {},
			want:   map[string]Action{"ca.crt": Kept, "apiserver.crt": Kept, "admin.kubeconfig": Kept, "sa.key": Kept, "sa.pub": Kept},
		},
		{
			name:    "a new node is added",
			change:  func(o *Options) { o.Nodes = append(o.Nodes, "node-3") },
			changed: []string{"node-node-3.crt", "node-node-3.key", "node-node-3.kubeconfig", "kubelet-node-3.crt", "kubelet-node-3.key"},
			want:    map[string]Action{"ca.crt": Kept, "node-node-1.kubeconfig": Kept, "node-node-3.kubeconfig": Created, "kubelet-node-3.crt": Created},
		},
		{
			name:    "a new apiserver host reissues the apiserver certificate only",
			change:  func(o *Options) { o.APIServerHosts = append(o.APIServerHosts, "lb.example") },
			changed: []string{"apiserver.crt", "apiserver.key"},
			want:    map[string]Action{"ca.crt": Kept, "apiserver.crt": Reissued, "admin.crt": Kept},
		},
		{
			name:    "a new node address reissues that kubelet's certificate only",
			change:  func(o *Options) { o.NodeHosts = map[string][]string{"node-2": {"10.0.0.6"}} },
			changed: []string{"kubelet-node-2.crt", "kubelet-node-2.key"},
			want:    map[string]Action{"kubelet-node-2.crt": Reissued, "kubelet-node-1.crt": Kept, "node-node-2.kubeconfig": Kept},
		},
		{
			name:    "a new server URL rewrites kubeconfigs, keeps client certs",
			change:  func(o *Options) { o.APIServerURL = "https://10.0.0.1:7443" },
			changed: []string{"admin.kubeconfig", "scheduler.kubeconfig", "controller-manager.kubeconfig", "proxy.kubeconfig", "node-node-1.kubeconfig", "node-node-2.kubeconfig"},
			want:    map[string]Action{"admin.crt": Kept, "admin.kubeconfig": Updated, "apiserver.crt": Kept},
		},
		{
			name:     "a node left out keeps its files",
			change:   func(o *Options) { o.Nodes = []string{"node-1"}; o.NodeHosts = nil },
			want:     map[string]Action{"node-node-1.kubeconfig": Kept},
			notAdded: []string{"node-node-2.kubeconfig"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := baseOptions()
			writePKI(t, dir, o)
			before := readDir(t, dir)

			tc.change(&o)
			res := writePKI(t, dir, o)
			after := readDir(t, dir)

			for name, data := range before {
				if _, ok := after[name]; !ok {
					t.Errorf("%s was removed", name)
					continue
				}
				if slices.Contains(tc.changed, name) != !bytes.Equal(data, after[name]) {
					t.Errorf("%s changed = %v, want %v", name, !bytes.Equal(data, after[name]), slices.Contains(tc.changed, name))
				}
			}
			for name := range after {
				if _, ok := before[name]; !ok && !slices.Contains(tc.changed, name) {
					t.Errorf("unexpected new file %s", name)
				}
			}
			for _, name := range tc.changed {
				if _, ok := after[name]; !ok {
					t.Errorf("%s missing after re-run", name)
				}
			}
			got := actions(res)
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s: action %q, want %q", name, got[name], want)
				}
			}
			for _, name := range tc.notAdded {
				if _, ok := got[name]; ok {
					t.Errorf("%s was handled, want it left alone", name)
				}
			}
		})
	}
}

func TestWriteClusterPKIRenewsBeforeExpiry(t *testing.T) {
	dir := t.TempDir()
	clk := clocktesting.NewFakePassiveClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	writePKI(t, dir, baseOptions(), WithClock(clk))
	oldAdmin, err := LoadCertFile(filepath.Join(dir, "admin.crt"))
	if err != nil {
		t.Fatal(err)
	}
	before := readDir(t, dir)

	// Half a year on, nothing is due.
	clk.SetTime(clk.Now().Add(180 * 24 * time.Hour))
	res := writePKI(t, dir, baseOptions(), WithClock(clk))
	if got := actions(res)["admin.crt"]; got != Kept {
		t.Errorf("after 180 days admin.crt: %q, want kept", got)
	}

	// In the last tenth of the year, leaves are renewed; the CA stays.
	clk.SetTime(oldAdmin.NotAfter.Add(-10 * 24 * time.Hour))
	res = writePKI(t, dir, baseOptions(), WithClock(clk))
	after := readDir(t, dir)
	if !bytes.Equal(before["ca.crt"], after["ca.crt"]) || !bytes.Equal(before["ca.key"], after["ca.key"]) {
		t.Error("the CA was replaced")
	}
	if !bytes.Equal(before["sa.key"], after["sa.key"]) {
		t.Error("the service account key was replaced")
	}
	for _, name := range []string{"admin.crt", "apiserver.crt", "kubelet-node-1.crt"} {
		if bytes.Equal(before[name], after[name]) {
			t.Errorf("%s was not renewed", name)
		}
	}
	if got := actions(res)["admin.crt"]; got != Reissued {
		t.Errorf("admin.crt: %q, want reissued", got)
	}
	newAdmin, err := LoadCertFile(filepath.Join(dir, "admin.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if !newAdmin.NotAfter.After(oldAdmin.NotAfter) {
		t.Errorf("renewed admin.crt expires %s, not later than the old %s", newAdmin.NotAfter, oldAdmin.NotAfter)
	}
}

func TestWriteClusterPKIReissuesBrokenPairs(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"key missing", func(t *testing.T, dir string) { mustRemove(t, filepath.Join(dir, "admin.key")) }},
		{"certificate missing", func(t *testing.T, dir string) { mustRemove(t, filepath.Join(dir, "admin.crt")) }},
		{"key replaced", func(t *testing.T, dir string) {
			data, err := os.ReadFile(filepath.Join(dir, "scheduler.key"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "admin.key"), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"certificate garbage", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "admin.crt"), []byte("junk"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writePKI(t, dir, baseOptions())
			tc.damage(t, dir)
			res := writePKI(t, dir, baseOptions())
			if got := actions(res)["admin.crt"]; got != Reissued {
				t.Errorf("admin.crt: %q, want reissued", got)
			}
			ca, err := LoadCA(dir)
			if err != nil {
				t.Fatal(err)
			}
			kp, absent, err := loadKeyPair(filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key"))
			if err != nil || absent {
				t.Fatalf("admin pair after re-run: absent=%v err=%v", absent, err)
			}
			if reason := mismatch(kp, ca, CertSpec{CommonName: AdminUser, Organizations: []string{MastersGroup}, Usages: []Usage{UsageClient}}); reason != "" {
				t.Errorf("admin pair after re-run unusable: %s", reason)
			}
		})
	}
}

func mustRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func TestWriteClusterPKIRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"no URL", Options{}, "apiserver URL is required"},
		{"http URL", Options{APIServerURL: "http://127.0.0.1:6443"}, "want https://host[:port]"},
		{"URL without host", Options{APIServerURL: "https://:6443"}, "want https://host[:port]"},
		{"bad node name", Options{APIServerURL: "https://x:6443", Nodes: []string{"Node_1"}}, `invalid node name "Node_1"`},
		{"path in node name", Options{APIServerURL: "https://x:6443", Nodes: []string{"../etc"}}, `invalid node name "../etc"`},
		{"duplicate node", Options{APIServerURL: "https://x:6443", Nodes: []string{"a", "a"}}, `node "a" listed twice`},
		{"hosts for unknown node", Options{APIServerURL: "https://x:6443", Nodes: []string{"a"}, NodeHosts: map[string][]string{"b": {"1.2.3.4"}}}, `node "b", which is not in the node list`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := WriteClusterPKI(context.Background(), dir, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("wrote %d files despite invalid options", len(entries))
			}
		})
	}
}

func TestWriteClusterPKIStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WriteClusterPKI(ctx, dir, baseOptions()); err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Fatalf("error %v, want context canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "admin.kubeconfig")); err == nil {
		t.Error("admin.kubeconfig written after cancellation")
	}
}

func TestWriteClusterPKIConcurrentRunsShareOneCA(t *testing.T) {
	dir := t.TempDir()
	const runs = 4
	errs := make(chan error, runs)
	for range runs {
		go func() {
			_, err := WriteClusterPKI(context.Background(), dir, baseOptions(), WithLogger(slog.New(slog.DiscardHandler)))
			errs <- err
		}()
	}
	for range runs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ca, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	matches, err := filepath.Glob(filepath.Join(dir, "*.crt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range matches {
		cert, err := LoadCertFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.CertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("%s does not chain to the CA left on disk: %v", filepath.Base(path), err)
		}
	}
}
