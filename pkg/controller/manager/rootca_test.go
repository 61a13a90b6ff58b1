package manager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func TestRootCA(t *testing.T) {
	const pemCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	dir := t.TempDir()
	good := filepath.Join(dir, "ca.crt")
	bad := filepath.Join(dir, "junk")
	_ = os.WriteFile(good, []byte(pemCA), 0o600)
	_ = os.WriteFile(bad, []byte("not pem"), 0o600)
	fromKubeconfig := &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("kubeconfig CA")}}
	tests := []struct {
		name    string
		file    string
		cfg     *rest.Config
		want    string
		wantErr string
	}{
		{name: "--root-ca-file wins", file: good, cfg: fromKubeconfig, want: pemCA},
		{name: "else the kubeconfig's CA data", cfg: fromKubeconfig, want: "kubeconfig CA"},
		{name: "or its CA file", cfg: &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: good}}, want: pemCA},
		{name: "no CA at all", cfg: &rest.Config{}, wantErr: "no --root-ca-file"},
		{name: "missing file", file: filepath.Join(dir, "absent"), cfg: fromKubeconfig, wantErr: "no such file"},
		{name: "not PEM", file: bad, cfg: fromKubeconfig, wantErr: "no PEM data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rootCA(tt.file, tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
