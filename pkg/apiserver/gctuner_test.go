package apiserver

import (
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads the collector's current target.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestGCTunerFollowsTheRequestRate(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })

	var served int64
	g := &gcTuner{requests: func() int64 { return served }, busyPercent: 200, idlePercent: 100}
	for _, step := range []struct {
		requests int64
		want     int
	}{
		{10, 100},             // a quiet second
		{gcBusyRate, 200},     // busy: the heap may grow further
		{gcBusyRate * 3, 200}, // still busy
		{3, 100},              // quiet again: back to the default
	} {
		served += step.requests
		g.look(time.Second)
		if got := gcPercent(); got != step.want {
			t.Fatalf("after %d requests in a second: GC percent %d, want %d", step.requests, got, step.want)
		}
	}
}

func TestGCTunerLeavesAnOperatorsGOGC(t *testing.T) {
	orig := debug.SetGCPercent(150)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	busy := func() int64 { return 1 << 40 }
	if startGCTuner(t.Context(), busy, 400, "150") {
		t.Error("the tuner started although GOGC is set")
	}
	if startGCTuner(t.Context(), busy, 0, "") {
		t.Error("the tuner started although it is disabled")
	}
	if startGCTuner(t.Context(), busy, 120, "") {
		t.Error("the tuner started with a busy target below the current 150")
	}
	if got := gcPercent(); got != 150 {
		t.Fatalf("GC percent %d, want the operator's 150 untouched", got)
	}
}
