package scheduler

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// The filter and score hot path must not allocate per node: a scheduling
// cycle over 1,000 nodes allocates about as much as one over 100.
func TestSchedulingCycleAllocationsDoNotGrowWithNodes(t *testing.T) {
	allocs := func(nodes int) float64 {
		s, err := New(Config{Client: fake.NewClientset(), PercentageOfNodesToScore: 100})
		if err != nil {
			t.Fatal(err)
		}
		for i := range nodes {
			s.cache.AddNode(testNode(fmt.Sprintf("n%05d", i), "32", 110))
		}
		pod := framework.NewPodInfo(testPod("p", "100m"))
		s.cache.UpdateSnapshot(s.snapshot)
		cycle := func() {
			if _, st, _ := s.schedulePod(context.Background(), framework.NewCycleState(), pod); !st.IsSuccess() {
				t.Fatal(st.AsError())
			}
		}
		cycle() // size the reusable buffers
		return testing.AllocsPerRun(20, cycle)
	}
	small, large := allocs(100), allocs(1000)
	if large > small+20 {
		t.Errorf("a cycle over 1000 nodes allocates %.0f times, over 100 nodes %.0f: allocations grow with nodes", large, small)
	}
}
