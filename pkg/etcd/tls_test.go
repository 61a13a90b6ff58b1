package etcd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{cert: cert, key: key, dir: dir}
	writePEM(t, filepath.Join(dir, name+".crt"), "CERTIFICATE", der)
	return ca
}

// issue writes name.crt and name.key signed by the CA and returns their paths.
func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	crt, k := filepath.Join(ca.dir, name+".crt"), filepath.Join(ca.dir, name+".key")
	writePEM(t, crt, "CERTIFICATE", der)
	writePEM(t, k, "EC PRIVATE KEY", kder)
	return crt, k
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNewClientTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "ca")
	other := newTestCA(t, dir, "other-ca")
	serverCrt, serverKey := ca.issue(t, "server", x509.ExtKeyUsageServerAuth)
	clientCrt, clientKey := ca.issue(t, "client", x509.ExtKeyUsageClientAuth)
	strangerCrt, strangerKey := other.issue(t, "stranger", x509.ExtKeyUsageClientAuth)
	caFile := filepath.Join(dir, "ca.crt")

	e, err := StartEmbedded(context.Background(), EmbeddedConfig{
		DataDir: filepath.Join(dir, "data"), UnsafeNoFsync: true,
		ServerCertFile: serverCrt, ServerKeyFile: serverKey, ClientCAFile: caFile,
	})
	if err != nil {
		t.Fatalf("StartEmbedded with TLS: %v", err)
	}
	defer e.Stop()
	if !strings.HasPrefix(e.Endpoints()[0], "https://") {
		t.Fatalf("endpoint %s, want https", e.Endpoints()[0])
	}

	tests := []struct {
		name   string
		cfg    Config
		wantOK bool
	}{
		{"trusted client certificate", Config{CAFile: caFile, CertFile: clientCrt, KeyFile: clientKey}, true},
		{"no client certificate", Config{CAFile: caFile}, false},
		{"certificate from another CA", Config{CAFile: caFile, CertFile: strangerCrt, KeyFile: strangerKey}, false},
		{"server not trusted", Config{CAFile: filepath.Join(dir, "other-ca.crt"), CertFile: clientCrt, KeyFile: clientKey}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Endpoints = e.Endpoints()
			tt.cfg.DialTimeout = 2 * time.Second
			c, err := NewClient(context.Background(), tt.cfg)
			if tt.wantOK != (err == nil) {
				t.Fatalf("NewClient: error %v, want success %v", err, tt.wantOK)
			}
			if err != nil {
				return
			}
			defer c.Close()
			if _, err := c.Put(context.Background(), "/tls", "ok"); err != nil {
				t.Errorf("put over TLS: %v", err)
			}
		})
	}
}
