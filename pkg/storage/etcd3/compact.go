package etcd3

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"
)

// compactRevKey records, for every apiserver sharing the etcd cluster, the
// compaction round last claimed and the revision it will compact to; its
// version is the round counter. Upstream uses the same key.
const compactRevKey = "compact_rev_key"

// DefaultCompactionInterval keeps about five minutes of history, as upstream.
const DefaultCompactionInterval = 5 * time.Minute

// Compact discards history before rev. Watches and lists asking for older
// revisions get "resource version too old" afterwards.
func Compact(ctx context.Context, client *clientv3.Client, rev int64) error {
	if _, err := client.Compact(ctx, rev); err != nil {
		return fmt.Errorf("etcd3: compact to %d: %w", rev, err)
	}
	return nil
}

// StartCompactor compacts etcd every interval to the revision it saw one
// interval earlier, so that at least interval of history stays available to
// watchers that reconnect. Several apiservers may run one against the same
// cluster: a compare-and-swap on compactRevKey lets only one of them compact
// per round. It runs until ctx ends.
func StartCompactor(ctx context.Context, client *clientv3.Client, interval time.Duration) {
	startCompactor(ctx, client, interval, clock.RealClock{}, slog.Default())
}

func startCompactor(ctx context.Context, client *clientv3.Client, interval time.Duration, clk clock.WithTicker, log *slog.Logger) {
	if interval <= 0 {
		interval = DefaultCompactionInterval
	}
	go func() {
		t := clk.NewTicker(interval)
		defer t.Stop()
		var version, rev int64
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
			}
			v, r, err := compactRound(ctx, client, version, rev)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("etcd compaction failed", "err", err)
				}
				continue
			}
			version, rev = v, r
		}
	}()
}

// compactRound claims the next round if nobody else did since version (the
// key's version we last saw), compacts to prevRev, and returns the key's
// version and the current revision for the next round.
func compactRound(ctx context.Context, client *clientv3.Client, version, prevRev int64) (int64, int64, error) {
	resp, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", version)).
		Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(prevRev, 10))).
		Else(clientv3.OpGet(compactRevKey)).
		Commit()
	if err != nil {
		return version, prevRev, fmt.Errorf("etcd3: claim compaction: %w", err)
	}
	cur := resp.Header.Revision
	if !resp.Succeeded {
		// Another apiserver compacted this round; follow its counter.
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return 0, cur, nil
		}
		return kvs[0].Version, cur, nil
	}
	if prevRev > 0 {
		if _, err := client.Compact(ctx, prevRev); err != nil && !isCompactedErr(err) {
			return version + 1, cur, fmt.Errorf("etcd3: compact to %d: %w", prevRev, err)
		}
	}
	return version + 1, cur, nil
}
