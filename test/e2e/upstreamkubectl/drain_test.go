//go:build e2e

package upstreamkubectl

import (
	"slices"
	"strings"
	"testing"
)

const guardedYAML = `apiVersion: v1
kind: Node
metadata:
  name: drain-node
---
apiVersion: v1
kind: Pod
metadata:
  name: guarded
  labels:
    app: guarded
spec:
  nodeName: drain-node
  containers:
  - name: main
    image: kube-lite.local/busybox:1.35
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: guarded
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app: guarded
`

// TestDrainHonoursBudget: kubectl applies a PodDisruptionBudget (validated
// against the served OpenAPI), shows it with upstream's columns, and
// `kubectl drain` cannot evict the one running pod the budget keeps.
func TestDrainHonoursBudget(t *testing.T) {
	mustKubectl(t, "apply", "-f", writeManifest(t, "guarded.yaml", guardedYAML))
	// No kubelet runs here: report the pod running and ready as one would.
	mustKubectl(t, "patch", "pod", "guarded", "--subresource=status", "--type=merge",
		"-p", `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`)
	// No disruption controller either: write the budget's status as it
	// would. A budget it has not seen yet is refused with Retry-After, which
	// client-go honours by itself for 100 s before kubectl drain sees it.
	mustKubectl(t, "patch", "pdb", "guarded", "--subresource=status", "--type=merge",
		"-p", `{"status":{"observedGeneration":1,"expectedPods":1,"currentHealthy":1,"desiredHealthy":1,"disruptionsAllowed":0}}`)

	out := mustKubectl(t, "get", "pdb", "guarded")
	if got, want := header(out), []string{"NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"}; !slices.Equal(got, want) {
		t.Errorf("kubectl get pdb: columns %v, want %v\n%s", got, want, out)
	}
	if r := row(out, "guarded"); len(r) < 4 || !slices.Equal(r[1:4], []string{"1", "N/A", "0"}) {
		t.Errorf("kubectl get pdb: row %v, want guarded 1 N/A 0 ...\n%s", r, out)
	}

	stdout, stderr, err := kubectl(t, "drain", "drain-node", "--force", "--timeout=3s")
	if err == nil {
		t.Fatalf("kubectl drain succeeded although the budget allows no disruption:\n%s%s", stdout, stderr)
	}
	if want := "Cannot evict pod as it would violate the pod's disruption budget."; !strings.Contains(stderr, want) {
		t.Errorf("kubectl drain stderr lacks %q:\n%s", want, stderr)
	}
	if ts := mustKubectl(t, "get", "pod", "guarded", "-o", "jsonpath={.metadata.deletionTimestamp}"); ts != "" {
		t.Errorf("the guarded pod is being deleted (%s) although its eviction was refused", ts)
	}
	mustKubectl(t, "delete", "pdb", "guarded")
	mustKubectl(t, "delete", "pod", "guarded", "--force", "--grace-period=0")
	mustKubectl(t, "delete", "node", "drain-node")
}
