package cri

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// While the runtime is down the client keeps trying to reconnect every few
// seconds at most, as upstream's CRI client, so a runtime that comes back is
// seen soon: gRPC's default back-off grows to two minutes, and a containerd
// restarted after a minute-long outage went unseen for another 40s.
// A socket that hangs up on every connection counts the attempts.
func TestClientRetriesAnUnreachableRuntimeOften(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var attempts atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			attempts.Add(1)
			_ = c.Close()
		}
	}()
	r, err := Dial("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The kubelet keeps asking, as its status loop and PLEG do.
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := r.Status(ctx)
		cancel()
		if err == nil {
			t.Fatal("Status answered with no runtime behind the socket")
		}
	}
	// Upstream's back-off (100ms doubling-ish to 3s) makes about 9 attempts
	// in 8s; gRPC's default (1s growing by 1.6) makes 4 or 5.
	if n := attempts.Load(); n < 7 {
		t.Fatalf("%d connection attempts in 8s, want at least 7", n)
	} else {
		t.Logf("%d connection attempts in 8s", n)
	}
}
