package pki

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestEnsureCA(t *testing.T) {
	dir := t.TempDir()
	ca, err := EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA {
		t.Error("CA certificate is not a CA")
	}
	if life := ca.Cert.NotAfter.Sub(ca.Cert.NotBefore); life < CAValidity {
		t.Errorf("CA valid for %s, want at least %s", life, CAValidity)
	}
	certPEM, _ := os.ReadFile(filepath.Join(dir, CACertFile))
	keyPEM, _ := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if info, err := os.Stat(filepath.Join(dir, CAKeyFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("ca.key: %v, mode %v; want 0600", err, info.Mode().Perm())
	}

	again, err := EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cert.Equal(ca.Cert) {
		t.Error("second EnsureCA returned a different CA")
	}
	certPEM2, _ := os.ReadFile(filepath.Join(dir, CACertFile))
	keyPEM2, _ := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if !bytes.Equal(certPEM, certPEM2) || !bytes.Equal(keyPEM, keyPEM2) {
		t.Error("second EnsureCA rewrote ca.crt or ca.key")
	}
}

func TestEnsureCARefusesToReplace(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		clock  time.Time
		wantIn string
	}{
		{
			name:   "certificate without key",
			setup:  func(t *testing.T, dir string) { mustRemove(t, filepath.Join(dir, CAKeyFile)) },
			wantIn: "incomplete",
		},
		{
			name:   "key without certificate",
			setup:  func(t *testing.T, dir string) { mustRemove(t, filepath.Join(dir, CACertFile)) },
			wantIn: "incomplete",
		},
		{
			name:   "expired",
			setup:  func(t *testing.T, dir string) {},
			clock:  time.Now().Add(CAValidity + 24*time.Hour),
			wantIn: "expired",
		},
		{
			name: "leaf certificate in place of the CA",
			setup: func(t *testing.T, dir string) {
				kp, err := IssueCert(mustCA(t, dir), CertSpec{CommonName: "x", Usages: []Usage{UsageClient}})
				if err != nil {
					t.Fatal(err)
				}
				writeTestFile(t, filepath.Join(dir, CACertFile), kp.CertPEM)
				writeTestFile(t, filepath.Join(dir, CAKeyFile), kp.KeyPEM)
			},
			wantIn: "not a CA certificate",
		},
		{
			name: "key of another CA",
			setup: func(t *testing.T, dir string) {
				other := t.TempDir()
				mustCA(t, other)
				data, err := os.ReadFile(filepath.Join(other, CAKeyFile))
				if err != nil {
					t.Fatal(err)
				}
				writeTestFile(t, filepath.Join(dir, CAKeyFile), data)
			},
			wantIn: "does not belong to",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mustCA(t, dir)
			tc.setup(t, dir)
			before := readDir(t, dir)
			var opts []Option
			if !tc.clock.IsZero() {
				opts = append(opts, WithClock(clocktesting.NewFakePassiveClock(tc.clock)))
			}
			_, err := EnsureCA(dir, opts...)
			if err == nil || !strings.Contains(err.Error(), tc.wantIn) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantIn)
			}
			after := readDir(t, dir)
			if len(after) != len(before) {
				t.Errorf("files in dir went from %d to %d", len(before), len(after))
			}
			for name, data := range before {
				if !bytes.Equal(data, after[name]) {
					t.Errorf("%s was rewritten", name)
				}
			}
		})
	}
}

func TestIssueCertRejectsBadSpecs(t *testing.T) {
	ca := mustCA(t, t.TempDir())
	tests := []struct {
		name string
		spec CertSpec
		want string
	}{
		{"no common name", CertSpec{Usages: []Usage{UsageClient}}, "empty common name"},
		{"no usage", CertSpec{CommonName: "x"}, "no usages"},
		{"unknown usage", CertSpec{CommonName: "x", Usages: []Usage{"peer"}}, `unknown usage "peer"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := IssueCert(ca, tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestIssueCertNeverOutlivesTheCA(t *testing.T) {
	ca := mustCA(t, t.TempDir())
	kp, err := IssueCert(ca, CertSpec{CommonName: "x", Usages: []Usage{UsageClient}, Validity: 2 * CAValidity})
	if err != nil {
		t.Fatal(err)
	}
	if kp.Cert.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("certificate expires %s, after its CA (%s)", kp.Cert.NotAfter, ca.Cert.NotAfter)
	}
}

func mustCA(t *testing.T, dir string) *CA {
	t.Helper()
	ca, err := EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func writeTestFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
