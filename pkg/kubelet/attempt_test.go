package kubelet

import (
	"os"
	"path/filepath"
	"testing"
)

// A runtime that lost its containers (the node restarted) leaves their logs
// behind: the container started again is the next attempt, with its own log,
// and the restart count goes on from there.
func TestAContainerTheRuntimeLostStartsAsTheNextAttempt(t *testing.T) {
	h := newHarness(t)
	pod := testPod("lost")
	dir := filepath.Join(h.kl.sandboxConfig(pod, 0).LogDirectory, "main")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"0.log", "1.log", "2.log.20260101-000000"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.add(pod)
	h.sync(pod)
	c := h.running(pod, "main")
	if c == nil {
		t.Fatal("the container did not start")
	}
	if got := c.Metadata.GetAttempt(); got != 2 {
		t.Fatalf("attempt %d, want 2 (after 0.log and 1.log)", got)
	}
	if rc := h.status(pod).ContainerStatuses[0].RestartCount; rc != 2 {
		t.Fatalf("restartCount %d, want 2", rc)
	}
}
