package scheduler

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// BenchmarkSchedulePod measures one scheduling cycle (snapshot refresh,
// filter, score, select) without the API: the ceiling the scheduler puts
// on throughput.
func BenchmarkSchedulePod(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			s, err := New(Config{Client: fake.NewClientset()})
			if err != nil {
				b.Fatal(err)
			}
			for i := range nodes {
				s.cache.AddNode(testNode(fmt.Sprintf("n%05d", i), "32", 110))
			}
			pod := framework.NewPodInfo(testPod("p", "100m"))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s.cache.UpdateSnapshot(s.snapshot)
				host, st, _ := s.schedulePod(ctx, framework.NewCycleState(), pod)
				if !st.IsSuccess() || host == "" {
					b.Fatal(st.AsError())
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
		})
	}
}
