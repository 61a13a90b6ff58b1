package server

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

const sample = "2026-01-01T00:00:01.000000000Z stdout F one\n" +
	"2026-01-01T00:00:02.000000000Z stderr P tw\n" +
	"2026-01-01T00:00:02.100000000Z stderr F o\n" +
	"2026-01-01T00:00:03.000000000Z stdout F three\n"

func TestCopyLogFormats(t *testing.T) {
	tests := []struct {
		name string
		opts LogOptions
		want string
	}{
		{"all", LogOptions{TailLines: -1}, "one\ntwo\nthree\n"},
		{"tail 2 keeps a line split into partials whole", LogOptions{TailLines: 2}, "two\nthree\n"},
		{"tail 0", LogOptions{TailLines: 0}, ""},
		{"timestamps", LogOptions{TailLines: 1, Timestamps: true}, "2026-01-01T00:00:03.000000000Z three\n"},
		{"limitBytes", LogOptions{TailLines: -1, LimitBytes: 6}, "one\ntw"},
		{"since", LogOptions{TailLines: -1, Since: time.Date(2026, 1, 1, 0, 0, 2, 500000000, time.UTC)}, "three\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := CopyLog(context.Background(), &out, strings.NewReader(sample), tc.opts, nil, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Fatalf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}

// growing is a log file that a container is still writing.
type growing struct {
	mu   sync.Mutex
	data []byte
	off  int
}

func (g *growing) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.off >= len(g.data) {
		return 0, io.EOF
	}
	n := copy(p, g.data[g.off:])
	g.off += n
	return n, nil
}

func (g *growing) append(s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.data = append(g.data, s...)
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFollowStreamsUntilTheContainerStops(t *testing.T) {
	f := &growing{}
	f.append("2026-01-01T00:00:01Z stdout F first\n")
	var mu sync.Mutex
	alive := true
	running := func() bool { mu.Lock(); defer mu.Unlock(); return alive }
	out := &syncBuf{}
	done := make(chan error)
	go func() {
		done <- CopyLog(context.Background(), out, f, LogOptions{Follow: true, TailLines: -1}, running, time.Millisecond)
	}()
	for out.String() != "first\n" {
		time.Sleep(time.Millisecond)
	}
	f.append("2026-01-01T00:00:02Z stdout F second\n")
	for out.String() != "first\nsecond\n" {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	alive = false
	mu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
