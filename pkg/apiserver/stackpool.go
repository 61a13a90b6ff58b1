package apiserver

import (
	"context"
	"net/http"
	"runtime/debug"
	"sync"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// defaultStackWorkers bounds the goroutines kept to serve short requests.
// A busy apiserver has about as many requests in flight as its clients have
// concurrent calls (each waits on an etcd commit); requests beyond this run
// on their own goroutine as before.
const defaultStackWorkers = 128

// stackPool runs short requests on long-lived goroutines.
//
// net/http starts every HTTP/2 request on a fresh goroutine with a small
// stack. A create goes deep (middleware, admission, the storage codec, the
// in-process etcd client down to the raft proposal) and its stack is grown
// and copied twice on every request, which a CPU profile of the apiserver
// under load shows as 5–10 % of its time (runtime.newstack/copystack).
// A worker keeps its grown stack from one request to the next. This is
// what grpc-go's NumStreamWorkers does for the same reason.
type stackPool struct {
	// done stops idle workers (the server's context).
	done <-chan struct{}
	work chan *stackJob
	// spawn holds one token per worker that may still be started; workers
	// start on demand so that an idle apiserver keeps none.
	spawn chan struct{}
	jobs  sync.Pool
}

type stackJob struct {
	h    http.Handler
	w    http.ResponseWriter
	r    *http.Request
	done chan struct{}
	// panicked carries a handler panic back to the request's goroutine,
	// where net/http and recoverPanics expect it.
	panicked any
}

// workerPanic is a panic raised on a worker, with the worker's stack (the
// one that says where it happened).
type workerPanic struct {
	value any
	stack []byte
}

func newStackPool(ctx context.Context, workers int) *stackPool {
	p := &stackPool{done: ctx.Done(), work: make(chan *stackJob), spawn: make(chan struct{}, workers)}
	for range workers {
		p.spawn <- struct{}{}
	}
	p.jobs.New = func() any { return &stackJob{done: make(chan struct{}, 1)} }
	return p
}

// middleware serves short requests on a worker. Watches and pod logs may
// stream for hours and would hold a worker, so they keep their own goroutine.
// It needs the request info, so it goes after withRequestInfo.
func (p *stackPool) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := request.InfoFrom(r.Context())
		if !ok || !info.IsResourceRequest || info.Verb == "watch" || info.Subresource == "log" {
			next.ServeHTTP(w, r)
			return
		}
		p.serve(next, w, r)
	})
}

func (p *stackPool) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	j := p.jobs.Get().(*stackJob)
	j.h, j.w, j.r = h, w, r
	select {
	case p.work <- j:
	default:
		select {
		case <-p.spawn:
			go p.worker(j)
		default:
			// Every worker is busy and no more may start.
			j.h, j.w, j.r = nil, nil, nil
			p.jobs.Put(j)
			h.ServeHTTP(w, r)
			return
		}
	}
	<-j.done
	v := j.panicked
	j.h, j.w, j.r, j.panicked = nil, nil, nil, nil
	p.jobs.Put(j)
	if v != nil {
		panic(v)
	}
}

func (p *stackPool) worker(j *stackJob) {
	for {
		p.run(j)
		select {
		case j = <-p.work:
		case <-p.done:
			return
		}
	}
}

func (p *stackPool) run(j *stackJob) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler { //nolint:errorlint // net/http compares the value itself
				v = &workerPanic{value: v, stack: debug.Stack()}
			}
			j.panicked = v
		}
		j.done <- struct{}{}
	}()
	j.h.ServeHTTP(j.w, j.r)
}
