//go:build e2e

package kubectllite

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLabelAnnotateExplain: label, annotate and explain exist and answer
// as kubectl's do.
func TestLabelAnnotateExplain(t *testing.T) {
	ns := namespace(t)
	createConfigMap(t, ns, "a", nil)
	createConfigMap(t, ns, "b", nil)

	steps := []struct {
		args             []string
		code             int
		wantOut, wantErr string
	}{
		{[]string{"label", "cm", "a", "tier=web"}, 0, "configmap/a labeled\n", ""},
		{[]string{"label", "cm", "a", "tier=db"}, 1, "", "error: 'tier' already has a value (web), and --overwrite is false\n"},
		{[]string{"label", "cm", "a", "tier=db", "--overwrite"}, 0, "configmap/a labeled\n", ""},
		{[]string{"label", "cm", "a", "nope", "x=y"}, 1, "configmap/a labeled\n", `Error from server (NotFound): configmaps "nope" not found` + "\n"},
		{[]string{"label", "cm", "--all", "tier-"}, 0, "configmap/a unlabeled\nlabel \"tier\" not found.\nconfigmap/b not labeled\n", ""},
		{[]string{"annotate", "cm", "b", "note=hi"}, 0, "configmap/b annotated\n", ""},
		{[]string{"annotate", "cm", "b", "--list"}, 0, "note=hi\n", ""},
		{[]string{"annotate", "cm", "b"}, 1, "", "error: at least one annotation update is required\n"},
	}
	for _, s := range steps {
		r := kubectl(t, append([]string{"-n", ns}, s.args...)...)
		if r.code != s.code || r.out != s.wantOut || r.err != s.wantErr {
			t.Fatalf("kubectl-lite %s: %s\nwant exit %d, stdout %q, stderr %q", strings.Join(s.args, " "), r, s.code, s.wantOut, s.wantErr)
		}
	}
	cm, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Annotations["note"] != "hi" || cm.Labels["x"] != "" {
		t.Fatalf("configmap b: labels %v, annotations %v", cm.Labels, cm.Annotations)
	}

	r := mustSucceed(t, "explain", "deployments.spec.replicas")
	for _, want := range []string{"GROUP:      apps", "KIND:       Deployment", "FIELD: replicas <integer>"} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("explain: %s\nwant %q", r, want)
		}
	}
	r = kubectl(t, "explain", "pods.spec.nope")
	if r.code != 1 || !strings.Contains(r.err, `field "nope" does not exist`) {
		t.Fatalf("explain of a missing field: %s", r)
	}
}
