package balancedallocation

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func TestScore(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64 // nil: skipped
	}{
		// balanced: cpu 2/4, mem 4/8 → 100; skewed: cpu 3/4, mem 1/8 → 1-0.3125 → 68.
		{"cpu and memory requests", Pod("p", Requests("cpu", "1", "memory", "1Gi")), map[string]int64{"balanced": 100, "skewed": 68}},
		{"no requests: skipped", Pod("p"), nil},
	}
	balanced := NodeInfo(Node("balanced"), Pod("e1", Requests("cpu", "1", "memory", "3Gi")))
	skewed := NodeInfo(Node("skewed"), Pod("e2", Requests("cpu", "2")))
	pl, _ := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Score(t, pl, tt.pod, balanced, skewed)
			if (got == nil) != (tt.want == nil) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("score[%s] = %d, want %d", n, got[n], w)
				}
			}
		})
	}
}
