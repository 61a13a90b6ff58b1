package etcd3

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-lite/kube-lite/pkg/etcd/etcdtest"
)

// compactedBefore reports whether history before rev is gone.
func compactedBefore(t *testing.T, c *clientv3.Client, rev int64) bool {
	t.Helper()
	_, err := c.Get(context.Background(), "k", clientv3.WithRev(rev-1))
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("get at %d: %v", rev-1, err)
	}
	return err != nil
}

func put(t *testing.T, c *clientv3.Client) int64 {
	t.Helper()
	resp, err := c.Put(context.Background(), "k", "v")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

func TestCompactRoundsAreSharedBetweenAPIServers(t *testing.T) {
	c := etcdtest.Start(t)
	ctx := testCtx(t)
	put(t, c)
	put(t, c)

	// Round 1: A claims it; there is nothing from an earlier round to
	// compact to. B sees the claim and does nothing.
	aVer, aRev, err := compactRound(ctx, c, 0, 0)
	if err != nil {
		t.Fatalf("A round 1: %v", err)
	}
	bVer, _, err := compactRound(ctx, c, 0, 0)
	if err != nil {
		t.Fatalf("B round 1: %v", err)
	}
	if aVer != 1 || bVer != 1 {
		t.Fatalf("after round 1 versions A=%d B=%d, want both 1", aVer, bVer)
	}
	if compactedBefore(t, c, aRev) {
		t.Fatalf("round 1 compacted; it must keep one round of history")
	}
	put(t, c)

	// Round 2: A compacts to what it saw in round 1; B, late, must not
	// compact again.
	if _, _, err := compactRound(ctx, c, aVer, aRev); err != nil {
		t.Fatalf("A round 2: %v", err)
	}
	if !compactedBefore(t, c, aRev) {
		t.Errorf("round 2 did not compact to round 1's revision %d", aRev)
	}
	last := put(t, c)
	if _, _, err := compactRound(ctx, c, bVer, last); err != nil {
		t.Fatalf("B round 2: %v", err)
	}
	if compactedBefore(t, c, last) {
		t.Errorf("a second apiserver compacted in a round already claimed")
	}
}

func TestStartCompactorCompactsEveryInterval(t *testing.T) {
	c := etcdtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Now())
	startCompactor(ctx, c, time.Minute, clk, slog.Default())

	first := put(t, c)
	deadline := time.Now().Add(liveness)
	// Each tick compacts to what the previous one saw: after a few ticks
	// the write before them is history.
	for !compactedBefore(t, c, first+1) {
		if time.Now().After(deadline) {
			t.Fatalf("no compaction past revision %d", first)
		}
		if clk.HasWaiters() {
			clk.Step(time.Minute)
		}
		put(t, c)
		time.Sleep(10 * time.Millisecond)
	}
}
