package kubelet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

// runNodeStatus registers the node and runs the node status loop against a
// Node whose Ready condition the API holds as apiReady, until the kubelet has written its
// status once, and returns the events it recorded.
func runNodeStatus(t *testing.T, apiReady v1.ConditionStatus) []string {
	t.Helper()
	h := newHarness(t)
	rec := record.NewFakeRecorder(10)
	h.kl.recorder = rec
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	if apiReady != "" {
		node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: apiReady}}
	}
	if _, err := h.client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// As Run does: registration writes the status first.
	if err := h.kl.registerNode(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); h.kl.nodeStatusLoop(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := h.client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
		if err == nil && readyStatus(n.Status) == v1.ConditionTrue && n.Status.NodeInfo.KubeletVersion != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the kubelet never reported its node Ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	return drainEvents(rec)
}

func TestNodeReadinessChangesAreEvents(t *testing.T) {
	for _, before := range []v1.ConditionStatus{"", v1.ConditionUnknown, v1.ConditionFalse} {
		events := strings.Join(runNodeStatus(t, before), "\n")
		if events != "Normal NodeReady Node node-1 status is now: NodeReady" {
			t.Errorf("Ready %q → True: events %q, want one NodeReady", before, events)
		}
	}
	// A restarted kubelet finds its node Ready already: nothing happened.
	if events := runNodeStatus(t, v1.ConditionTrue); len(events) != 0 {
		t.Errorf("Ready True → True: events %q, want none", events)
	}
}

func TestNodeSaysTheRuntimeIsDownOnlyAfterItFailedForThirtySeconds(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ready := func() (bool, string) {
		t.Helper()
		for _, c := range h.kl.nodeStatus(ctx, nil).Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue, c.Message
			}
		}
		t.Fatal("no Ready condition")
		return false, ""
	}
	h.rt.SetStatusError(errors.New("rpc error: code = Unavailable desc = connection error"))
	if ok, msg := ready(); ok || msg != "container runtime status check may not have completed yet" {
		t.Fatalf("runtime never seen: ready %v %q", ok, msg)
	}
	h.rt.SetStatusError(nil)
	if ok, msg := ready(); !ok {
		t.Fatalf("runtime up: not ready: %q", msg)
	}
	// containerd restarts: a short outage leaves the node Ready.
	h.rt.SetStatusError(errors.New("rpc error: code = Unavailable desc = connection error"))
	h.clock.Step(20 * time.Second)
	if ok, msg := ready(); !ok {
		t.Fatalf("runtime down for 20s: not ready: %q", msg)
	}
	h.clock.Step(10 * time.Second)
	if ok, msg := ready(); ok || msg != "container runtime is down" {
		t.Fatalf("runtime down for 30s: ready %v %q, want NotReady 'container runtime is down'", ok, msg)
	}
	h.rt.SetStatusError(nil)
	if ok, msg := ready(); !ok {
		t.Fatalf("runtime back: not ready: %q", msg)
	}
}
