package apiserver

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"time"
)

// maxPendingWrite is how many bytes a connection buffers ahead of the
// socket before writers wait: enough for many responses, little enough
// that a client that stops reading holds no more than this.
const maxPendingWrite = 256 << 10

// drainOnClose bounds how long Close waits for buffered bytes to go out.
const drainOnClose = 5 * time.Second

// batchListener hands out connections whose writes are batched: see
// batchConn.
type batchListener struct{ net.Listener }

func (l batchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newBatchConn(c), nil
}

// batchConn sends what its writers write from a goroutine of its own, so
// that what several writers write while one system call is under way goes
// out in the next one.
//
// Go's HTTP/2 server flushes its buffered frames whenever it has no frame
// left to write, one write system call per response, and waits for that
// call before it writes the next frame. With many streams on one
// connection (a controller, or 32 benchmark clients sharing one client)
// most of those calls carry one small response; on loopback each costs the
// sender the receiver's TCP processing as well. Here a flush only copies
// the bytes, and the writer goroutine yields once before each system call,
// which lets the server queue the responses that are ready, as grpc-go's
// writer does.
//
// A write error is returned by the next Write (the HTTP/2 server then
// closes the connection, as it would have on the first one).
type batchConn struct {
	net.Conn

	mu      sync.Mutex
	drained *sync.Cond // signalled after each system call and on error
	pending []byte     // written, not yet handed to the socket
	writing bool       // the writer goroutine holds a batch
	err     error      // the first write error; later writes fail with it

	kick chan struct{} // pending became non-empty
	stop chan struct{} // closed by Close
	once sync.Once
}

func newBatchConn(c net.Conn) *batchConn {
	b := &batchConn{Conn: c, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	b.drained = sync.NewCond(&b.mu)
	go b.writeLoop()
	return b
}

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	for b.err == nil && len(b.pending) >= maxPendingWrite {
		b.drained.Wait()
	}
	if b.err != nil {
		err := b.err
		b.mu.Unlock()
		return 0, err
	}
	wake := len(b.pending) == 0
	b.pending = append(b.pending, p...)
	b.mu.Unlock()
	if wake {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (b *batchConn) writeLoop() {
	var spare []byte
	for {
		select {
		case <-b.kick:
		case <-b.stop:
			return
		}
		// Let the goroutines that are about to write (other streams'
		// responses) run first, so that this system call carries them too.
		runtime.Gosched()
		b.mu.Lock()
		batch := b.pending
		b.pending = spare[:0]
		b.writing = len(batch) > 0
		b.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		_, err := b.Conn.Write(batch)
		b.mu.Lock()
		b.writing = false
		if err != nil && b.err == nil {
			b.err = err
		}
		b.drained.Broadcast()
		b.mu.Unlock()
		if err != nil {
			return
		}
		// Keep the buffer for the next batch unless a large response grew
		// it: an idle connection should not hold on to it.
		spare = nil
		if cap(batch) <= 64<<10 {
			spare = batch[:0]
		}
	}
}

// flush waits until every byte written so far reached the socket, the
// connection failed, or the deadline passed.
func (b *batchConn) flush(deadline time.Time) error {
	timer := time.AfterFunc(time.Until(deadline), func() {
		b.mu.Lock()
		if b.err == nil {
			b.err = errDrainTimeout
		}
		b.drained.Broadcast()
		b.mu.Unlock()
	})
	defer timer.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.err == nil && (len(b.pending) > 0 || b.writing) {
		b.drained.Wait()
	}
	return b.err
}

var errDrainTimeout = errors.New("timed out sending buffered data before close")

// Close sends what is buffered (a TLS close_notify, an HTTP/2 GOAWAY) and
// then closes the connection.
func (b *batchConn) Close() error {
	_ = b.flush(time.Now().Add(drainOnClose))
	b.once.Do(func() { close(b.stop) })
	b.mu.Lock()
	if b.err == nil {
		b.err = net.ErrClosed
	}
	b.drained.Broadcast()
	b.mu.Unlock()
	return b.Conn.Close()
}

// CloseWrite sends what is buffered and then shuts the sending side, as
// net/http does before closing an HTTP/1.1 connection.
func (b *batchConn) CloseWrite() error {
	if err := b.flush(time.Now().Add(drainOnClose)); err != nil {
		return err
	}
	if cw, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
