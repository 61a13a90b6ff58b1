package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad --admission-control-config-file stops the apiserver before it
// starts anything, with one line naming the file and the field.
func TestRunRefusesABadAdmissionConfiguration(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admission.yaml")
	config := `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: strict
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	o.DataDir = filepath.Join(dir, "etcd")
	o.CertDir = filepath.Join(dir, "certs")
	o.AdmissionControlConfigFile = path
	err := Run(context.Background(), o, nil)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "defaults.enforce") {
		t.Fatalf("Run: %v, want one line naming %s and defaults.enforce", err, path)
	}
	if _, err := os.Stat(o.DataDir); !os.IsNotExist(err) {
		t.Errorf("the data dir exists (%v): etcd started before the configuration was read", err)
	}
}
