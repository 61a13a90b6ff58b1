//go:build e2e

// Package compose drives the docker-compose cluster of deploy/compose (three
// etcd members, two apiservers, two schedulers and controller-managers,
// three nodes, a registry) through client-go and the docker CLI.
//
// hack/compose.sh test brings the cluster up, runs these tests and takes it
// down. Run alone (go test -tags e2e ./test/e2e/compose/), TestMain does the
// same through hack/compose.sh; KEEP=1 leaves the cluster running, and
// KUBE_LITE_COMPOSE_KUBECONFIG pointing at a running cluster's admin
// kubeconfig skips both up and down.
package compose

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

const (
	// waitLimit bounds every wait so that a broken component fails a test
	// instead of hanging the suite; nothing asserts how fast things happen.
	waitLimit = 3 * time.Minute
	registry  = "registry:5000"
	testapp   = registry + "/kube-lite/testapp:1.0"
	busybox   = registry + "/kube-lite/busybox:1.35"
)

var nodeNames = []string{"node-1", "node-2", "node-3"}

type cluster struct {
	skip        string
	project     string
	composeFile string
	kubeconfig  string
	cs          kubernetes.Interface
}

var env cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := e2eutil.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.project = getenv("KUBE_LITE_COMPOSE_PROJECT", "kube-lite-compose")
	env.composeFile = getenv("KUBE_LITE_COMPOSE_FILE", filepath.Join(root, "deploy", "compose", "docker-compose.yml"))
	env.kubeconfig = os.Getenv("KUBE_LITE_COMPOSE_KUBECONFIG")

	if env.kubeconfig == "" {
		if os.Geteuid() != 0 {
			env.skip = "the compose e2e tests start dockerd and containers: run as root (or point KUBE_LITE_COMPOSE_KUBECONFIG at a running cluster)"
			return m.Run()
		}
		script := filepath.Join(root, "hack", "compose.sh")
		if err := runScript(script, "up"); err != nil {
			fmt.Fprintf(os.Stderr, "hack/compose.sh up: %v\n", err)
			return 1
		}
		if os.Getenv("KEEP") == "" {
			defer func() {
				if err := runScript(script, "down"); err != nil {
					fmt.Fprintf(os.Stderr, "hack/compose.sh down: %v\n", err)
				}
			}()
		}
		dir := getenv("KUBE_LITE_DIR", filepath.Join(root, ".kube-lite"))
		env.kubeconfig = filepath.Join(dir, "compose", "admin.kubeconfig")
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeconfig %s: %v\n", env.kubeconfig, err)
		return 1
	}
	cfg.Timeout = 30 * time.Second
	env.cs, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func runScript(script string, args ...string) error {
	cmd := exec.Command(script, args...)
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	return cmd.Run()
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func setup(t *testing.T) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
}

// compose runs docker-compose on the cluster's project and returns its
// trimmed standard output.
func compose(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	return command(ctx, t, "docker-compose", append([]string{"-p", env.project, "-f", env.composeFile}, args...)...)
}

// docker runs the docker CLI and returns its trimmed standard output.
func docker(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	return command(ctx, t, "docker", args...)
}

func command(ctx context.Context, t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := tryCommand(ctx, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tryCommand(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// container is the id of a compose service's container.
func container(ctx context.Context, t *testing.T, service string) string {
	t.Helper()
	id := compose(ctx, t, "ps", "-q", service)
	if id == "" {
		t.Fatalf("service %s has no container", service)
	}
	return id
}

// waitFor polls cond until it reports done, fails the test after waitLimit
// with the last state cond described.
func waitFor(ctx context.Context, t *testing.T, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	last := ""
	for {
		done, state, err := cond(ctx)
		if err != nil {
			state = err.Error()
		}
		if done {
			return
		}
		if state != "" {
			last = state
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; last seen: %s", what, last)
		case <-time.After(time.Second):
		}
	}
}
