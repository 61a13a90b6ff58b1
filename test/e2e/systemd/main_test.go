//go:build e2e

// Package systemd exercises deploy/systemd and the scripts that install it:
// hack/install-control-plane.sh and hack/join-node.sh run with --no-systemd
// under a temporary --root, so they write the same units, config and
// certificates as on a VM and run the units' commands the way systemd
// would — against a real etcd (Debian's etcd-server), containerd, runc and
// CNI on this host. It needs root.
package systemd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

// env holds what every test shares: binaries and images are built once.
type sharedEnv struct {
	skip     string
	tmp      string
	binDir   string
	imageDir string
}

var env sharedEnv

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		env.skip = "the systemd e2e tests need root (containerd, runc, CNI, mounts)"
		os.Exit(m.Run())
	}
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemd e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	tmp, err := os.MkdirTemp("", "kl-sd-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	env.tmp = tmp
	if _, err := e2eutil.Run("hack/containerd.sh", "install"); err != nil {
		return 0, err
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		if _, err := e2eutil.Run("apt-get", "install", "-y", "--no-install-recommends", "etcd-server"); err != nil {
			return 0, err
		}
	}
	env.binDir = filepath.Join(tmp, "bin")
	if err := e2eutil.BuildBinaries(env.binDir, "./cmd/kube-lite-apiserver", "./cmd/kube-lite-scheduler",
		"./cmd/kube-lite-controller-manager", "./cmd/kube-lite-kubelet", "./cmd/kube-lite-proxy", "./cmd/kube-lite-pki", "./cmd/kubectl-lite"); err != nil {
		return 0, err
	}
	env.imageDir = filepath.Join(tmp, "images")
	if _, err := e2eutil.Run("hack/images.sh", env.imageDir); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

func requireRoot(t *testing.T) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
}
