package podworkers

import (
	"context"
	"sync"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestSyncsAreSerializedPerPodAndRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := testclock.NewFakeClock(time.Now())

	var mu sync.Mutex
	running := map[string]int{}
	calls := map[string]int{}
	overlap := false
	synced := make(chan string, 100)
	w := New(clk, func(ctx context.Context, key string) (time.Duration, bool) {
		mu.Lock()
		running[key]++
		if running[key] > 1 {
			overlap = true
		}
		calls[key]++
		n := calls[key]
		mu.Unlock()
		mu.Lock()
		running[key]--
		mu.Unlock()
		synced <- key
		// First sync of "a" asks to be retried in 10s; the second finishes it.
		if key == "a" && n == 1 {
			return 10 * time.Second, false
		}
		return 0, key == "a"
	})
	w.Update(ctx, "a")
	w.Update(ctx, "b")
	got := map[string]bool{}
	for len(got) < 2 {
		got[<-synced] = true
	}
	if !w.Has("a") {
		t.Fatal("a's worker went away before its retry")
	}
	// The retry fires only when its time has come.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(10 * time.Second)
	if k := <-synced; k != "a" {
		t.Fatalf("retried %q, want a", k)
	}
	for w.Has("a") {
		time.Sleep(time.Millisecond)
	}
	if !w.Has("b") {
		t.Fatal("b's worker must stay until it is done")
	}
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Fatal("two syncs of one pod overlapped")
	}
	if calls["a"] != 2 {
		t.Fatalf("a synced %d times, want 2", calls["a"])
	}
	cancel()
	w.Wait()
}

func TestInterruptCancelsTheSyncInProgressAndSyncsAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	blocked := make(chan struct{})
	results := make(chan error, 2)
	calls := 0
	w := New(testclock.NewFakeClock(time.Now()), func(sctx context.Context, key string) (time.Duration, bool) {
		calls++
		if calls == 1 {
			close(blocked)
			<-sctx.Done() // a runtime call that only ends when cancelled
			results <- sctx.Err()
			return 0, false
		}
		results <- sctx.Err()
		return 0, true
	})
	w.Update(ctx, "p")
	<-blocked
	w.Interrupt(ctx, "p")
	if err := <-results; err != context.Canceled {
		t.Fatalf("the interrupted sync saw %v, want it cancelled", err)
	}
	select {
	case err := <-results:
		if err != nil {
			t.Fatalf("the sync after the interrupt runs cancelled: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no sync after the interrupt")
	}
	cancel()
	w.Wait()
}
