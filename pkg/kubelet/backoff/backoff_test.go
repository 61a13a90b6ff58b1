package backoff

import (
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestCrashLoopDelaysDoubleUpToMaxAndReset(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testclock.NewFakePassiveClock(start)
	b := New(clk, 10*time.Second, 5*time.Minute, 10*time.Minute)

	if in, _ := b.InBackOffSince("c", start); in {
		t.Fatal("a key never seen must not be in back-off")
	}
	var got []time.Duration
	now := start
	for i := 0; i < 8; i++ {
		b.Next("c", now)
		got = append(got, b.Delay("c"))
		// The container crashes right after it restarts.
		if in, left := b.InBackOffSince("c", now); !in || left != b.Delay("c") {
			t.Fatalf("restart %d: in back-off=%v left=%s, want true %s", i, in, left, b.Delay("c"))
		}
		now = now.Add(b.Delay("c"))
		clk.SetTime(now)
		if in, _ := b.InBackOffSince("c", now.Add(-b.Delay("c"))); in {
			t.Fatalf("restart %d: still in back-off after the full delay", i)
		}
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays = %v, want %v", got, want)
		}
	}

	// Ten quiet minutes of running: the next crash starts over at 10s.
	now = now.Add(11 * time.Minute)
	clk.SetTime(now)
	b.Next("c", now)
	if d := b.Delay("c"); d != 10*time.Second {
		t.Fatalf("after a long run delay = %s, want 10s", d)
	}
}

func TestForgetPrefixDropsOnlyThatPod(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Now())
	b := New(clk, time.Second, time.Minute, 0)
	b.Next("pod1/a", clk.Now())
	b.Next("pod2/a", clk.Now())
	b.ForgetPrefix("pod1/")
	if b.Delay("pod1/a") != 0 || b.Delay("pod2/a") != time.Second {
		t.Fatalf("pod1=%s pod2=%s", b.Delay("pod1/a"), b.Delay("pod2/a"))
	}
}
