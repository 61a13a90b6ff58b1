//go:build e2e

package upstreamkubectl

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func ssaConfigMap(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n" + data
}

func getConfigMap(t *testing.T, name string, args ...string) *corev1.ConfigMap {
	t.Helper()
	out := mustKubectl(t, append([]string{"get", "configmap", name, "-o", "yaml"}, args...)...)
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	return &cm
}

// kubectl apply --server-side creates and updates, hides managedFields in
// get -o yaml unless asked, refuses to take another manager's field until
// --force-conflicts.
func TestServerSideApply(t *testing.T) {
	f := writeManifest(t, "ssa.yaml", ssaConfigMap("  color: blue\n  size: small\n"))
	if out := mustKubectl(t, "apply", "--server-side", "-f", f); strings.TrimSpace(out) != "configmap/ssa serverside-applied" {
		t.Fatalf("create: %q", out)
	}
	if cm := getConfigMap(t, "ssa"); cm.Data["color"] != "blue" || cm.ManagedFields != nil {
		t.Fatalf("get -o yaml: data %v, managedFields %v", cm.Data, cm.ManagedFields)
	}
	cm := getConfigMap(t, "ssa", "--show-managed-fields")
	if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Manager != "kubectl" || cm.ManagedFields[0].Operation != "Apply" {
		t.Fatalf("managedFields: %+v", cm.ManagedFields)
	}

	f = writeManifest(t, "ssa.yaml", ssaConfigMap("  color: green\n"))
	if out := mustKubectl(t, "apply", "--server-side", "-f", f); strings.TrimSpace(out) != "configmap/ssa serverside-applied" {
		t.Fatalf("update: %q", out)
	}
	if cm := getConfigMap(t, "ssa"); cm.Data["color"] != "green" || cm.Data["size"] != "" {
		t.Fatalf("after the update (size no longer applied): %v", cm.Data)
	}

	other := writeManifest(t, "ssa-other.yaml", ssaConfigMap("  color: red\n"))
	_, errOut, err := kubectl(t, "apply", "--server-side", "--field-manager=other", "-f", other)
	if err == nil || !strings.Contains(errOut, `Apply failed with 1 conflict: conflict with "kubectl": .data.color`) {
		t.Fatalf("conflicting apply: %v\n%s", err, errOut)
	}
	if cm := getConfigMap(t, "ssa"); cm.Data["color"] != "green" {
		t.Fatalf("the refused apply was stored: %v", cm.Data)
	}
	mustKubectl(t, "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", other)
	cm = getConfigMap(t, "ssa", "--show-managed-fields")
	if cm.Data["color"] != "red" {
		t.Fatalf("forced apply: %v", cm.Data)
	}
	for _, e := range cm.ManagedFields {
		if e.Manager == "kubectl" && strings.Contains(string(e.FieldsV1.Raw), "f:color") {
			t.Fatalf("kubectl still owns color: %s", e.FieldsV1.Raw)
		}
	}
	mustKubectl(t, "delete", "configmap", "ssa")
}

// kubectl diff shows a changed image, with the strategic merge patch
// client-side apply computes (a server dry run carrying
// $setElementOrder) and with server-side apply's dry run.
func TestDiffShowsImageChange(t *testing.T) {
	f := writeManifest(t, "diff.yaml", strings.ReplaceAll(deploymentYAML, "name: web", "name: diffweb"))
	mustKubectl(t, "apply", "-f", f)
	changed := writeManifest(t, "diff.yaml", strings.ReplaceAll(strings.ReplaceAll(deploymentYAML, "name: web", "name: diffweb"),
		"busybox:1.35", "busybox:1.36"))
	// The image is client-side apply's field: a server-side diff by
	// another manager must force to show it.
	for _, args := range [][]string{{"diff", "-f", changed}, {"diff", "--server-side", "--force-conflicts", "-f", changed}} {
		out, errOut, err := kubectl(t, args...)
		// kubectl diff exits 1 when there are differences.
		if err == nil || !strings.Contains(out, "-        image: kube-lite.local/busybox:1.35") || !strings.Contains(out, "+        image: kube-lite.local/busybox:1.36") {
			t.Fatalf("kubectl %s: %v\n%s\n%s", strings.Join(args, " "), err, out, errOut)
		}
	}
	// Nothing of the dry runs was stored.
	if out := mustKubectl(t, "get", "deployment", "diffweb", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); out != "kube-lite.local/busybox:1.35" {
		t.Fatalf("image after diff: %q", out)
	}
	mustKubectl(t, "delete", "deployment", "diffweb")
}

// An object managed with client-side apply moves to server-side apply
// without losing a field, and then a field dropped from the manifest goes.
func TestClientSideToServerSideApplyMigration(t *testing.T) {
	f := writeManifest(t, "migrate.yaml", strings.ReplaceAll(ssaConfigMap("  color: blue\n  size: small\n"), "name: ssa", "name: migrate"))
	mustKubectl(t, "apply", "-f", f)
	cm := getConfigMap(t, "migrate", "--show-managed-fields")
	if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Manager != "kubectl-client-side-apply" {
		t.Fatalf("client-side apply's managedFields: %+v", cm.ManagedFields)
	}
	mustKubectl(t, "apply", "--server-side", "-f", f)
	cm = getConfigMap(t, "migrate", "--show-managed-fields")
	if cm.Data["color"] != "blue" || cm.Data["size"] != "small" {
		t.Fatalf("after the migration: %v", cm.Data)
	}
	for _, e := range cm.ManagedFields {
		if e.Manager == "kubectl-client-side-apply" {
			t.Fatalf("client-side apply still manages: %s", e.FieldsV1.Raw)
		}
	}
	f = writeManifest(t, "migrate.yaml", strings.ReplaceAll(ssaConfigMap("  color: blue\n"), "name: ssa", "name: migrate"))
	mustKubectl(t, "apply", "--server-side", "-f", f)
	if cm := getConfigMap(t, "migrate"); cm.Data["color"] != "blue" || cm.Data["size"] != "" {
		t.Fatalf("after dropping size: %v", cm.Data)
	}
	mustKubectl(t, "delete", "configmap", "migrate")
}
