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
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	if _, err := run("hack/containerd.sh", "install"); err != nil {
		return 0, err
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		if _, err := run("apt-get", "install", "-y", "--no-install-recommends", "etcd-server"); err != nil {
			return 0, err
		}
	}
	env.binDir = filepath.Join(tmp, "bin")
	if _, err := run("go", "build", "-o", env.binDir+"/", "./cmd/kube-lite-apiserver", "./cmd/kube-lite-scheduler",
		"./cmd/kube-lite-controller-manager", "./cmd/kube-lite-kubelet", "./cmd/kube-lite-pki", "./cmd/kubectl-lite"); err != nil {
		return 0, err
	}
	env.imageDir = filepath.Join(tmp, "images")
	if _, err := run("hack/images.sh", env.imageDir); err != nil {
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

func repoRoot() string { return filepath.Join("..", "..", "..") }

func run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// leftovers lists what still refers to dir on this host: processes with dir
// in their command line and mounts under it.
func leftovers(dir string) []string {
	var left []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		cmdline := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmdline, dir+"/") {
			left = append(left, "process "+filepath.Base(filepath.Dir(p))+": "+cmdline)
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			left = append(left, "mount "+f[1])
		}
	}
	return left
}

// natRulesFor lists the iptables NAT rules that mention a pod range.
func natRulesFor(cidrPrefix string) []string {
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		return nil
	}
	var rules []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, cidrPrefix) {
			rules = append(rules, line)
		}
	}
	return rules
}
