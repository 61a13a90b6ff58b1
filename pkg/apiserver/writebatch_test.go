package apiserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection, the server end
// accepted through batchListener.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := batchListener{ln}.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

func TestBatchConnDeliversEveryWriteInOrder(t *testing.T) {
	server, client := tcpPair(t)
	const writers, each = 8, 500
	var want [writers]bytes.Buffer
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				line := fmt.Sprintf("%d:%d\n", w, i)
				want[w].WriteString(line)
				if _, err := server.Write([]byte(line)); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		}()
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(client)
		got <- b
	}()
	wg.Wait()
	if err := server.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	// Each writer's lines arrive whole and in its order; Close sent
	// everything before closing.
	var per [writers]bytes.Buffer
	for line := range bytes.Lines(<-got) {
		var w, i int
		if _, err := fmt.Sscanf(string(line), "%d:%d\n", &w, &i); err != nil || w < 0 || w >= writers {
			t.Fatalf("torn line %q", line)
		}
		per[w].Write(line)
	}
	for w := range writers {
		if per[w].String() != want[w].String() {
			t.Fatalf("writer %d: got %d bytes, want %d, or out of order", w, per[w].Len(), want[w].Len())
		}
	}
}

func TestBatchConnWritesWaitForASlowReader(t *testing.T) {
	end, peer := net.Pipe() // a write returns only once the peer has read it
	b := newBatchConn(end)
	defer b.Close()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	wrote := make(chan int, 1)
	go func() {
		n := 0
		for n < 2*maxPendingWrite+len(chunk) {
			if _, err := b.Write(chunk); err != nil {
				break
			}
			n += len(chunk)
		}
		wrote <- n
	}()
	select {
	case n := <-wrote:
		t.Fatalf("%d bytes written with nobody reading; want at most %d buffered", n, maxPendingWrite+len(chunk))
	case <-time.After(200 * time.Millisecond):
	}
	// Reading everything lets the writer finish.
	go func() { _, _ = io.Copy(io.Discard, peer) }()
	select {
	case <-wrote:
	case <-time.After(5 * time.Second):
		t.Fatal("writer still blocked after the reader caught up")
	}
}

func TestBatchConnReportsAWriteErrorOnTheNextWrite(t *testing.T) {
	end, peer := net.Pipe()
	b := newBatchConn(end)
	defer b.Close()
	peer.Close()
	if _, err := b.Write([]byte("lost")); err != nil {
		t.Fatalf("first write: %v (it is only buffered)", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := b.Write([]byte("more"))
		if errors.Is(err, io.ErrClosedPipe) {
			return
		}
		if err != nil {
			t.Fatalf("write error %v, want the socket's error", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("writes to a closed peer keep succeeding")
		}
		time.Sleep(time.Millisecond)
	}
}
