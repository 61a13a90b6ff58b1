// Package etcdtest runs embedded etcd servers for tests: one that every
// test of a package shares, or a private one for a test that changes what
// others would see (compaction). Neither syncs to disk.
package etcdtest

import (
	"context"
	"fmt"
	"os"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kube-lite/kube-lite/pkg/etcd"
)

// Run starts an etcd in a temporary directory, calls run with it and a
// gRPC client, stops it and returns run's result; TestMain passes m.Run's
// exit code through it.
func Run(run func(e *etcd.Embedded, c *clientv3.Client) int) int {
	dir, err := os.MkdirTemp("", "etcdtest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Stop()
	c, err := etcd.NewClient(ctx, etcd.Config{Endpoints: e.Endpoints()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	return run(e, c)
}

// Start starts a private etcd for one test and returns a gRPC client; both
// stop when the test ends.
func Start(t testing.TB) *clientv3.Client {
	t.Helper()
	e, err := etcd.StartEmbedded(context.Background(), etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Stop)
	c, err := etcd.NewClient(context.Background(), etcd.Config{Endpoints: e.Endpoints()})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
