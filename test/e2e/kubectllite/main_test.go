//go:build e2e

// Package kubectllite runs the built kubectl-lite binary against a real
// kube-lite-apiserver process (embedded etcd, self-signed serving cert).
// No scheduler or kubelet runs: tests bind pods and write their status
// themselves, and a tiny fake kubelet serves container logs.
package kubectllite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

// cluster is the apiserver every test talks to.
type cluster struct {
	binDir     string
	kubectl    string
	serverURL  string
	caPEM      []byte
	kubeconfig string
	home       string
	token      string // bearer token of the admin user, when the server authenticates
	cs         kubernetes.Interface
}

var env cluster

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	tmp, err := os.MkdirTemp("", "kubectllite-e2e-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	env.binDir = filepath.Join(tmp, "bin")
	if err := e2eutil.BuildBinaries(env.binDir, "./cmd/kube-lite-apiserver", "./cmd/kubectl-lite"); err != nil {
		return 0, err
	}
	env.kubectl = filepath.Join(env.binDir, "kubectl-lite")

	args := []string{"--data-dir=" + filepath.Join(tmp, "data")}
	authn, err := apiserverAuthenticates()
	if err != nil {
		return 0, err
	}
	if authn {
		tokens := filepath.Join(tmp, "tokens.csv")
		if err := os.WriteFile(tokens, []byte(adminToken+",admin,admin-uid,\"system:masters\"\n"+viewerToken+",viewer,viewer-uid,\"\"\n"), 0o600); err != nil {
			return 0, err
		}
		args = append(args, "--token-auth-file="+tokens)
		env.token = adminToken
	}
	srv, err := e2eutil.StartAPIServer(filepath.Join(env.binDir, "kube-lite-apiserver"), tmp, args...)
	if err != nil {
		return 0, err
	}
	defer srv.Stop()
	env.serverURL, env.caPEM = srv.URL, srv.CAPEM
	env.kubeconfig = filepath.Join(tmp, "admin.kubeconfig")
	if err := writeKubeconfig(env.kubeconfig, kubeconfigSpec{context: "admin", namespace: ""}); err != nil {
		return 0, err
	}
	env.home = filepath.Join(tmp, "home")
	if err := os.MkdirAll(env.home, 0o755); err != nil {
		return 0, err
	}
	if env.cs, err = e2eutil.Clientset(env.kubeconfig); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// Static tokens for servers that authenticate: an admin (system:masters)
// and a user with no permissions.
const (
	adminToken  = "admin-token-0123456789"
	viewerToken = "viewer-token-0123456789"
)

// apiserverAuthenticates tells whether the built apiserver has
// authentication flags; before it had them, it let every request in.
func apiserverAuthenticates() (bool, error) {
	out, _ := exec.Command(filepath.Join(env.binDir, "kube-lite-apiserver"), "--help").CombinedOutput()
	if !strings.Contains(string(out), "--secure-port") {
		return false, fmt.Errorf("kube-lite-apiserver --help printed no flags: %s", out)
	}
	return strings.Contains(string(out), "--token-auth-file"), nil
}

// kubeconfigSpec describes a kubeconfig for the test apiserver; server
// overrides the URL (to point at nothing, for resolution tests).
type kubeconfigSpec struct {
	context, namespace, server, token string
}

func writeKubeconfig(path string, s kubeconfigSpec) error {
	server := s.server
	if server == "" {
		server = env.serverURL
	}
	token := s.token
	if token == "" {
		token = env.token
	}
	return e2eutil.TokenKubeconfig{Server: server, CAPEM: env.caPEM, Token: token, Context: s.context, Namespace: s.namespace}.Write(path)
}

// result is what a user sees from one kubectl-lite run.
type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
}

// invocation configures one run of the binary.
type invocation struct {
	env   []string // replaces KUBECONFIG/HOME defaults when set
	stdin string
}

// kubectl runs the binary with the admin kubeconfig via $KUBECONFIG.
func kubectl(t *testing.T, args ...string) result {
	t.Helper()
	return kubectlWith(t, invocation{}, args...)
}

func kubectlWith(t *testing.T, inv invocation, args ...string) result {
	t.Helper()
	return runBinary(t, env.kubectl, inv, args...)
}

// runBinary runs bin (kubectl-lite, or upstream kubectl to compare with)
// as a user runs kubectl-lite.
func runBinary(t *testing.T, bin string, inv invocation, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := commandOf(ctx, bin, args...)
	cmd.Env = append(cmd.Env, inv.env...)
	cmd.Stdin = strings.NewReader(inv.stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{out: out.String(), err: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s %v: %v", filepath.Base(bin), args, err)
	}
	return r
}

// command is kubectl-lite as a user runs it: the admin kubeconfig via
// $KUBECONFIG and a home of its own.
func command(ctx context.Context, args ...string) *exec.Cmd {
	return commandOf(ctx, env.kubectl, args...)
}

func commandOf(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(baseEnv(), "HOME="+env.home, "KUBECONFIG="+env.kubeconfig)
	return cmd
}

// start starts kubectl-lite for a test that reads its output while it
// still runs.
func start(ctx context.Context, t *testing.T, args ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := command(ctx, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdout
}

// baseEnv is the test's environment minus what decides kubeconfig resolution.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// mustSucceed runs kubectl-lite and fails the test on a non-zero exit.
func mustSucceed(t *testing.T, args ...string) result {
	t.Helper()
	r := kubectl(t, args...)
	if r.code != 0 {
		t.Fatalf("kubectl-lite %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// namespace creates a fresh namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + "-" + strconv.FormatInt(time.Now().UnixNano()%100000, 10)
	_, err := env.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// writeFile writes a manifest into a temp dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// lines splits output into non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// fields splits each table line into columns.
func table(s string) [][]string {
	var out [][]string
	for _, l := range lines(s) {
		out = append(out, strings.Fields(l))
	}
	return out
}
