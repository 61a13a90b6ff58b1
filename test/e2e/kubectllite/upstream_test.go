//go:build e2e

package kubectllite

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-lite/kube-lite/test/e2e/e2eutil"
)

// upstreamBuild is upstream kubectl, built from the k8s.io/kubectl module
// whose commands kubectl-lite reuses (the same main as the upstreamkubectl
// e2e tests), once, by the first test that compares with it.
var upstreamBuild struct {
	once sync.Once
	path string
	err  error
}

func upstreamKubectl(t *testing.T) string {
	t.Helper()
	upstreamBuild.once.Do(func() {
		dir := filepath.Join(filepath.Dir(env.kubectl), "upstream")
		upstreamBuild.err = e2eutil.BuildBinaries(dir, "./test/e2e/upstreamkubectl/kubectl")
		upstreamBuild.path = filepath.Join(dir, "kubectl")
	})
	if upstreamBuild.err != nil {
		t.Fatalf("building upstream kubectl: %v", upstreamBuild.err)
	}
	return upstreamBuild.path
}

// twins are two namespaces holding the same objects: the same command
// runs in one with kubectl-lite and in the other with upstream kubectl.
type twins struct {
	lite, up string
}

func newTwins(t *testing.T) twins {
	t.Helper()
	base := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(base) > 40 {
		base = base[:40]
	}
	base = strings.Trim(base, "-") + "-" + strconv.FormatInt(time.Now().UnixNano()%100000, 10)
	tw := twins{lite: base + "-lite", up: base + "-kubectl"}
	for _, ns := range []string{tw.lite, tw.up} {
		if _, err := env.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
	return tw
}

// each sets up the same objects in both namespaces.
func (tw twins) each(f func(ns string)) {
	f(tw.lite)
	f(tw.up)
}

// run runs args in each namespace with each client; upstream's output
// names kubectl-lite's namespace in place of its own, so that the two
// compare.
func (tw twins) run(t *testing.T, inv invocation, args ...string) (lite, up result) {
	t.Helper()
	lite = runBinary(t, env.kubectl, inv, append([]string{"-n", tw.lite}, args...)...)
	up = runBinary(t, upstreamKubectl(t), inv, append([]string{"-n", tw.up}, args...)...)
	up.out = strings.ReplaceAll(up.out, tw.up, tw.lite)
	up.err = strings.ReplaceAll(up.err, tw.up, tw.lite)
	return lite, up
}

// same runs args with both clients and fails the test unless a user sees
// the same: stdout, stderr and exit code. It returns kubectl-lite's.
func (tw twins) same(t *testing.T, args ...string) result {
	t.Helper()
	return tw.sameWith(t, invocation{}, nil, args...)
}

// sameWith is same with an invocation and a normalisation of what
// differs between any two runs (temporary paths, generated names).
func (tw twins) sameWith(t *testing.T, inv invocation, normalize func(string) string, args ...string) result {
	t.Helper()
	lite, up := tw.run(t, inv, args...)
	// Usage errors name the program.
	named := func(s string) string { return strings.ReplaceAll(s, "kubectl-lite ", "kubectl ") }
	if normalize == nil {
		normalize = func(s string) string { return s }
	}
	if normalize(named(lite.out)) != normalize(up.out) || normalize(named(lite.err)) != normalize(up.err) || lite.code != up.code {
		t.Errorf("%s: kubectl-lite and kubectl differ\nkubectl-lite: %s\nkubectl: %s", strings.Join(args, " "), lite, up)
	}
	return lite
}

// tempPath matches the files kubectl names under the temporary directory.
var tempPath = regexp.MustCompile(`/tmp/[^\s"]+`)

func withoutTempPaths(s string) string {
	return tempPath.ReplaceAllString(s, "/tmp/...")
}
