//go:build e2e

package kubectllite

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReplace: replace -f PUTs the file's object, a missing object is
// kubectl's NotFound with exit 1, and --force deletes and recreates it.
func TestReplace(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	createConfigMap(t, ns, "c", nil)
	before, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm := func(name, v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: %s}\n", name, v)
	}

	changed := writeFile(t, dir, "c.yaml", cm("c", "one"))
	r := kubectl(t, "-n", ns, "replace", "-f", changed)
	if r.code != 0 || r.out != "configmap/c replaced\n" || r.err != "" {
		t.Fatalf("replace -f: %s", r)
	}
	got, err := env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "one" || got.UID != before.UID {
		t.Fatalf("after replace: data %v, uid %s (was %s)", got.Data, got.UID, before.UID)
	}

	missing := writeFile(t, dir, "missing.yaml", cm("nope", "x"))
	r = kubectl(t, "-n", ns, "replace", "-f", missing)
	wantErr := fmt.Sprintf("Error from server (NotFound): error when replacing %q: configmaps \"nope\" not found\n", missing)
	if r.code != 1 || r.out != "" || r.err != wantErr {
		t.Fatalf("replace of a missing object: %s\nwant stderr %q", r, wantErr)
	}

	forced := writeFile(t, dir, "forced.yaml", cm("c", "two"))
	r = kubectl(t, "-n", ns, "replace", "--force", "-f", forced)
	wantOut := fmt.Sprintf("configmap \"c\" deleted from %s namespace\nconfigmap/c replaced\n", ns)
	if r.code != 0 || r.out != wantOut || r.err != "" {
		t.Fatalf("replace --force: %s\nwant stdout %q", r, wantOut)
	}
	got, err = env.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "two" || got.UID == before.UID {
		t.Fatalf("after replace --force: data %v, uid %s (was %s, want a new one)", got.Data, got.UID, before.UID)
	}
}
