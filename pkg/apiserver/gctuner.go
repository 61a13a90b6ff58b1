package apiserver

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"
)

const (
	// gcTuneInterval is how often the request rate is looked at.
	gcTuneInterval = time.Second
	// gcBusyRate is the request rate (per second) from which the server
	// counts as busy. Controllers and kubelets of a small cluster stay far
	// below it; a burst of creates goes over it at once.
	gcBusyRate = 500
)

// gcTuner lets the heap grow further between collections while the server
// is busy, and restores the usual target when it is not.
//
// Under a sustained write load the apiserver (with its embedded etcd)
// spends about an eighth of its CPU in the garbage collector: each request
// allocates ~20 KB (HTTP/2 frames and headers, the decoded and encoded
// object, etcd's raft entry, transaction and trace), and a heap of a few
// tens of MB is collected many times a second. Doubling the target roughly
// halves that, for about one live heap more memory while busy. An idle
// server keeps the default target, so its memory use does not change.
type gcTuner struct {
	requests    func() int64
	busyPercent int
	idlePercent int
	busy        bool
	last        int64 // requests at the previous look
}

// startGCTuner runs the tuner until ctx ends. requests returns the number
// of requests served so far. busyPercent is the GC percent while busy; 0,
// or a GOGC set in the environment (the operator's choice wins), leaves the
// collector alone; it reports whether the tuner runs.
func startGCTuner(ctx context.Context, requests func() int64, busyPercent int, gogcEnv string) bool {
	if busyPercent <= 0 || gogcEnv != "" {
		return false
	}
	// SetGCPercent returns the previous setting: read it and put it back.
	idle := debug.SetGCPercent(100)
	debug.SetGCPercent(idle)
	if idle < 0 || busyPercent <= idle {
		return false
	}
	t := &gcTuner{requests: requests, busyPercent: busyPercent, idlePercent: idle}
	go t.run(ctx)
	return true
}

func (t *gcTuner) run(ctx context.Context) {
	tick := time.NewTicker(gcTuneInterval)
	defer tick.Stop()
	defer t.set(false)
	t.last = t.requests()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t.look(gcTuneInterval)
	}
}

// look sets the target from the requests served over the last interval.
func (t *gcTuner) look(interval time.Duration) {
	n := t.requests()
	t.set(float64(n-t.last)/interval.Seconds() >= gcBusyRate)
	t.last = n
}

func (t *gcTuner) set(busy bool) {
	if busy == t.busy {
		return
	}
	t.busy = busy
	percent := t.idlePercent
	if busy {
		percent = t.busyPercent
	}
	debug.SetGCPercent(percent)
	slog.Debug("garbage collector target changed", "busy", busy, "gcPercent", percent)
}
