package etcd

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func startTestEtcd(t *testing.T) *Embedded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := StartEmbedded(ctx, EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(e.Stop)
	return e
}

func TestEmbeddedServesClients(t *testing.T) {
	e := startTestEtcd(t)
	ctx := context.Background()
	if eps := e.Endpoints(); len(eps) != 1 || !strings.HasPrefix(eps[0], "http://127.0.0.1:") {
		t.Fatalf("Endpoints() = %v, want one loopback URL", eps)
	}
	remote, err := NewClient(ctx, Config{Endpoints: e.Endpoints(), DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer remote.Close()
	local := e.InProcessClient()
	defer local.Close()

	clients := map[string]*clientv3.Client{"grpc": remote, "in-process": local}
	for name, c := range clients {
		key := "/test/" + name
		if _, err := c.Put(ctx, key, name); err != nil {
			t.Fatalf("%s: put: %v", name, err)
		}
		// Each write must be visible to the other client: one server.
		for other, oc := range clients {
			resp, err := oc.Get(ctx, key)
			if err != nil {
				t.Fatalf("%s: get: %v", other, err)
			}
			if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != name {
				t.Errorf("%s reading %s's write: got %v", other, name, resp.Kvs)
			}
		}
	}
}

func TestEmbeddedAcceptsLargeObjects(t *testing.T) {
	e := startTestEtcd(t)
	ctx := context.Background()
	c, err := NewClient(ctx, Config{Endpoints: e.Endpoints()})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer c.Close()
	// The apiserver accepts 3 MiB bodies; etcd's default limit (1.5 MiB) and
	// the client's default send limit (2 MiB) would both refuse this.
	big := strings.Repeat("x", 3*1024*1024)
	if _, err := c.Put(ctx, "/big", big); err != nil {
		t.Fatalf("put 3 MiB: %v", err)
	}
	tooBig := strings.Repeat("x", MaxRequestBytes+1)
	if _, err := c.Put(ctx, "/too-big", tooBig); err == nil {
		t.Fatalf("put over MaxRequestBytes succeeded, want an error")
	}
}

func TestEmbeddedRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := StartEmbedded(ctx, EmbeddedConfig{DataDir: dir})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	c := e.InProcessClient()
	if _, err := c.Put(ctx, "/k", "v"); err != nil {
		t.Fatalf("put: %v", err)
	}
	c.Close()
	e.Stop()

	e, err = StartEmbedded(ctx, EmbeddedConfig{DataDir: dir})
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer e.Stop()
	c = e.InProcessClient()
	defer c.Close()
	resp, err := c.Get(ctx, "/k")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Errorf("after restart got %v, want /k=v", resp.Kvs)
	}
}

func TestStartEmbeddedRequiresDataDir(t *testing.T) {
	if _, err := StartEmbedded(context.Background(), EmbeddedConfig{}); err == nil {
		t.Fatal("StartEmbedded without a data dir succeeded")
	}
}

func TestNewClientErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no endpoints", Config{}, "no endpoints"},
		{"missing CA", Config{Endpoints: []string{"https://127.0.0.1:1"}, CAFile: filepath.Join(dir, "nope")}, "read CA"},
		{"CA without certificates", Config{Endpoints: []string{"https://127.0.0.1:1"}, CAFile: notPEM}, "no certificates"},
		{"cert without key", Config{Endpoints: []string{"https://127.0.0.1:1"}, CertFile: notPEM}, "both a cert file and a key file"},
		{"nothing listening", Config{Endpoints: []string{"http://127.0.0.1:1"}, DialTimeout: 500 * time.Millisecond}, "reach"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(context.Background(), tt.cfg)
			if err == nil {
				c.Close()
				t.Fatalf("NewClient succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// syncBuffer is written by etcd's goroutines and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEmbeddedLogsThroughSlog(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := StartEmbedded(context.Background(), EmbeddedConfig{
		DataDir: t.TempDir(), Logger: log, LogLevel: "info", UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	started := buf.String()
	e.Stop()
	if !strings.Contains(started, "component=etcd") || !strings.Contains(started, "level=INFO") {
		t.Errorf("no etcd info logs through slog at start:\n%s", started)
	}
	if strings.Contains(buf.String(), "level=ERROR") {
		t.Errorf("a clean start and stop logged errors:\n%s", buf.String())
	}
}

func TestStartEmbeddedRejectsBadLogLevel(t *testing.T) {
	_, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: t.TempDir(), LogLevel: "loud"})
	if err == nil || !strings.Contains(err.Error(), "log level") {
		t.Fatalf("error %v, want a log level error", err)
	}
}

func TestEmbeddedFailedReportsAServerThatStopsOnItsOwn(t *testing.T) {
	e := startTestEtcd(t)
	failed := e.Failed()
	// What a fatal error inside etcd does: the server stops under us.
	e.etcd.Server.HardStop()
	select {
	case err := <-failed:
		if err == nil || !strings.Contains(err.Error(), "embedded etcd") {
			t.Fatalf("Failed sent %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Failed reported nothing after the server stopped")
	}
}

func TestEmbeddedFailedIsQuietOnStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := StartEmbedded(ctx, EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	failed := e.Failed()
	e.Stop()
	select {
	case err := <-failed:
		t.Fatalf("Failed sent %v after Stop", err)
	case <-time.After(time.Second):
	}
}
