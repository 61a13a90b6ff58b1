package cache_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	. "github.com/kube-lite/kube-lite/pkg/scheduler/cache"
	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func requestedCPU(t *testing.T, s *Snapshot, node string) int64 {
	t.Helper()
	ni, ok := s.Get(node)
	if !ok {
		t.Fatalf("node %s not in snapshot", node)
	}
	return ni.Requested.MilliCPU
}

func TestAssumeConfirmForget(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := New(clk, 30*time.Second)
	c.AddNode(Node("n1"))
	s := NewSnapshot()

	p1 := Pod("p1", Requests("cpu", "1"), On("n1"))
	if err := c.AssumePod(framework.NewPodInfo(p1)); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	if got := requestedCPU(t, s, "n1"); got != 1000 {
		t.Fatalf("after assume: %dm requested, want 1000m", got)
	}
	// The informer confirms: still counted once.
	c.AddPod(p1)
	c.UpdateSnapshot(s)
	if got := requestedCPU(t, s, "n1"); got != 1000 || c.IsAssumedPod(p1) {
		t.Fatalf("after confirm: %dm requested (assumed=%v), want 1000m, confirmed", got, c.IsAssumedPod(p1))
	}

	p2 := Pod("p2", Requests("cpu", "2"), On("n1"))
	_ = c.AssumePod(framework.NewPodInfo(p2))
	c.ForgetPod(p2)
	c.UpdateSnapshot(s)
	if got := requestedCPU(t, s, "n1"); got != 1000 {
		t.Fatalf("after forget: %dm requested, want 1000m", got)
	}
}

func TestAssumedPodExpiresOnlyAfterBinding(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := New(clk, 30*time.Second)
	c.AddNode(Node("n1"))
	p := Pod("p", Requests("cpu", "1"), On("n1"))
	_ = c.AssumePod(framework.NewPodInfo(p))
	clk.Step(time.Hour)
	c.CleanupExpiredAssumedPods()
	if c.PodCount() != 1 {
		t.Fatal("assumed pod with binding in flight expired")
	}
	c.FinishBinding(p)
	clk.Step(31 * time.Second)
	c.CleanupExpiredAssumedPods()
	if c.PodCount() != 0 {
		t.Fatal("unconfirmed pod did not expire after its binding finished")
	}
}

func TestSnapshotIsIncrementalAndIsolated(t *testing.T) {
	c := New(clocktesting.NewFakeClock(time.Now()), time.Minute)
	c.AddNode(Node("n1"))
	c.AddNode(Node("n2"))
	s := NewSnapshot()
	c.UpdateSnapshot(s)
	n2Before, _ := s.Get("n2")
	n2Gen := n2Before.Generation

	c.AddPod(Pod("p", Requests("cpu", "1"), On("n1")))
	c.UpdateSnapshot(s)
	n2After, _ := s.Get("n2")
	if n2After.Generation != n2Gen {
		t.Error("unchanged node was copied again")
	}
	if got := requestedCPU(t, s, "n1"); got != 1000 {
		t.Errorf("n1 requested %dm, want 1000m", got)
	}
	// A later cache change is invisible until the next update.
	c.AddPod(Pod("q", Requests("cpu", "1"), On("n1")))
	if got := requestedCPU(t, s, "n1"); got != 1000 {
		t.Errorf("snapshot changed without UpdateSnapshot: %dm", got)
	}

	c.RemoveNode(Node("n2"))
	c.UpdateSnapshot(s)
	if _, ok := s.Get("n2"); ok || len(s.List()) != 1 {
		t.Errorf("removed node still listed: %d nodes", len(s.List()))
	}
	c.AddNode(Node("n3", func(n *v1.Node) { n.Status.Images = []v1.ContainerImage{{Names: []string{"app:1"}, SizeBytes: 1}} }))
	c.UpdateSnapshot(s)
	if len(s.List()) != 2 || s.NumNodesWithImage("app:1") != 1 {
		t.Errorf("after adding n3: %d nodes, %d with app:1", len(s.List()), s.NumNodesWithImage("app:1"))
	}
}

func TestPodOnUnknownNodeIsNotListed(t *testing.T) {
	c := New(clocktesting.NewFakeClock(time.Now()), time.Minute)
	c.AddPod(Pod("p", Requests("cpu", "1"), On("late")))
	s := NewSnapshot()
	c.UpdateSnapshot(s)
	if len(s.List()) != 0 {
		t.Fatal("node without a Node object listed")
	}
	c.AddNode(Node("late"))
	c.UpdateSnapshot(s)
	if got := requestedCPU(t, s, "late"); got != 1000 {
		t.Errorf("pod seen before its node: %dm requested, want 1000m", got)
	}
}

func TestNodeImagesFollowUpdates(t *testing.T) {
	withImages := func(names ...string) func(*v1.Node) {
		return func(n *v1.Node) {
			for _, name := range names {
				n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: []string{name}, SizeBytes: 1})
			}
		}
	}
	c := New(clocktesting.NewFakeClock(time.Now()), time.Minute)
	c.AddNode(Node("n1", withImages("a:1")))
	c.AddNode(Node("n2", withImages("a:1")))
	s := NewSnapshot()
	c.UpdateSnapshot(s)
	if got := s.NumNodesWithImage("a:1"); got != 2 {
		t.Fatalf("a:1 on %d nodes, want 2", got)
	}
	c.UpdateNode(Node("n1", withImages("a:1"), func(n *v1.Node) { n.Labels["heartbeat"] = "1" }))
	c.UpdateNode(Node("n2", withImages("b:1")))
	c.UpdateSnapshot(s)
	if a, b := s.NumNodesWithImage("a:1"), s.NumNodesWithImage("b:1"); a != 1 || b != 1 {
		t.Errorf("after updates: a:1 on %d nodes, b:1 on %d, want 1 and 1", a, b)
	}
}
