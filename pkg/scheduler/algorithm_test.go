package scheduler

import "testing"

func TestFitErrorMessage(t *testing.T) {
	tests := []struct {
		nodes  int
		counts map[string]int
		want   string
	}{
		{3, map[string]int{"node(s) had untolerated taint {k: v}": 2, "Insufficient cpu": 1},
			"0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {k: v}."},
		{5, map[string]int{"Insufficient memory": 5, "Insufficient cpu": 5},
			"0/5 nodes are available: 5 Insufficient cpu, 5 Insufficient memory."},
	}
	for _, tt := range tests {
		if got := fitErrorMessage(tt.nodes, tt.counts); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		pct   int32
		nodes int
		want  int
	}{
		{0, 50, 50},      // small clusters: all nodes
		{0, 1000, 420},   // adaptive: 50 - 1000/125 = 42%
		{0, 5000, 500},   // 50 - 40 = 10%
		{0, 20000, 1000}, // floor of 5%
		{0, 150, 100},    // never fewer than 100
		{100, 5000, 5000},
		{30, 1000, 300},
	}
	for _, tt := range tests {
		s := &Scheduler{pct: tt.pct}
		if got := s.numFeasibleNodesToFind(tt.nodes); got != tt.want {
			t.Errorf("pct %d, %d nodes: %d, want %d", tt.pct, tt.nodes, got, tt.want)
		}
	}
}
