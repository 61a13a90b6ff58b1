package etcd3

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

const (
	// resultBuffer lets a watcher run ahead of a slow consumer by this many
	// events before it waits.
	resultBuffer = 100
	// initialPage bounds one read of the initial state of an rv="0" watch.
	initialPage = 1000
)

// Watch implements storage.Interface.
func (s *store) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	var fromRev int64
	initial := opts.ResourceVersion == "" || opts.ResourceVersion == "0"
	if !initial {
		rv, err := parseRV(opts.ResourceVersion)
		if err != nil {
			return nil, err
		}
		fromRev = rv
		initial = rv == 0
	}
	if !opts.Predicate.Empty() && opts.Predicate.GetAttrs == nil {
		return nil, errors.New("etcd3: watch: a selector needs GetAttrs")
	}
	if opts.Encoded && !opts.Predicate.Empty() {
		return nil, errors.New("etcd3: watch: an encoded watch takes no selector")
	}
	k := s.fullKey(key)
	if opts.Recursive {
		k = s.dirKey(key)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &watcher{
		store:      s,
		key:        k,
		recursive:  opts.Recursive,
		initial:    initial,
		fromRev:    fromRev,
		pred:       opts.Predicate,
		filter:     !opts.Predicate.Empty(),
		bookmarks:  opts.AllowWatchBookmarks,
		initialEnd: initial && opts.InitialEventsEndBookmark,
		encoded:    opts.Encoded,
		cancel:     cancel,
		result:     make(chan watch.Event, resultBuffer),
		done:       make(chan struct{}),
	}
	go w.run(wctx)
	return w, nil
}

type watcher struct {
	store     *store
	key       string
	recursive bool
	initial   bool
	fromRev   int64
	pred      storage.SelectionPredicate
	filter    bool
	bookmarks bool
	// initialEnd: mark the end of the initial events with a bookmark.
	initialEnd bool
	// encoded: send *storage.Encoded values, no previous ones.
	encoded bool

	cancel context.CancelFunc
	result chan watch.Event
	done   chan struct{}
}

// Stop ends the watch and waits until ResultChan is closed.
func (w *watcher) Stop() {
	w.cancel()
	<-w.done
}

func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

func (w *watcher) run(ctx context.Context) {
	defer close(w.done)
	defer close(w.result)
	defer w.cancel()

	lastRev := w.fromRev
	var lastBookmark int64
	if w.initial {
		rev, err := w.sendInitial(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.sendError(ctx, err)
			}
			return
		}
		lastRev = rev
	}

	// Leader-required watches are cancelled when the member loses its
	// leader instead of silently stalling; the progress requester uses the
	// same metadata so that it reaches this watch's gRPC stream. The etcd
	// watch ends only after this watch has left the progress requester (the
	// deferred calls run in reverse), so that the requester never finds the
	// stream without watches.
	ectx, ecancel := context.WithCancel(context.WithoutCancel(ctx))
	defer ecancel()
	ectx = clientv3.WithRequireLeader(ectx)
	// The etcd watch starts at lastRev, not after it, and skips what it
	// already sent: etcd answers progress requests on a stream only while
	// every watch on it starts at or before the store's revision, so a
	// watch waiting for the next revision would hold back every bookmark of
	// an idle cluster until its next write.
	early := lastRev > 0
	wch := w.store.client.Watch(ectx, w.key, w.etcdOpts(lastRev, early)...)
	if w.bookmarks {
		defer w.store.progress.register()()
	}
	// The end of the initial events comes only now that the etcd watch is
	// open and counted: a client may ask for progress as soon as it has it
	// (a watch cache waiting to be fresh does), and a request with no watch
	// to reach would fail.
	if w.initial && w.initialEnd {
		if !w.sendInitialEnd(ctx, lastRev) {
			return
		}
		lastBookmark = lastRev
	}

	for {
		var wres clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return
		case wres, ok = <-wch:
		}
		if !ok {
			if ctx.Err() == nil {
				w.sendError(ctx, errors.New("etcd watch channel closed"))
			}
			return
		}
		if wres.CompactRevision != 0 {
			if early && wres.CompactRevision == lastRev+1 {
				// Only the revision already sent is compacted: start after it.
				early = false
				wch = w.store.client.Watch(ectx, w.key, w.etcdOpts(lastRev, false)...)
				continue
			}
			w.sendStatus(ctx, expired(w.fromRev, wres.CompactRevision))
			return
		}
		if err := wres.Err(); err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				w.sendStatus(ctx, expired(w.fromRev, wres.CompactRevision))
			} else if ctx.Err() == nil {
				w.sendError(ctx, err)
			}
			return
		}
		if wres.IsProgressNotify() {
			if !w.store.progress.answered() {
				// Not asked for, or from an etcd whose answer may come
				// before events this watch has not received yet
				// (progress_support.go): moving lastRev would skip them.
				continue
			}
			// Every change up to the notified revision has been delivered;
			// a bookmark says so once per revision.
			if rev := wres.Header.Revision; w.bookmarks && rev >= lastRev && rev > lastBookmark {
				lastRev, lastBookmark = rev, rev
				if !w.sendBookmark(ctx, rev) {
					return
				}
			}
			continue
		}
		for _, ev := range wres.Events {
			if ev.Kv.ModRevision <= lastRev {
				continue // sent already (the watch started early)
			}
			out, ok, err := w.convert(ev)
			if err != nil {
				w.sendError(ctx, err)
				return
			}
			lastRev = ev.Kv.ModRevision
			if !ok {
				continue
			}
			if !w.send(ctx, out) {
				return
			}
		}
	}
}

// etcdOpts are the options of the etcd watch following revision rev; early
// starts it at rev itself.
func (w *watcher) etcdOpts(rev int64, early bool) []clientv3.OpOption {
	start := rev + 1
	if early {
		start = rev
	}
	opts := []clientv3.OpOption{clientv3.WithRev(start)}
	if !w.encoded {
		// etcd reads each previous value at its revision for this: an
		// encoded watch's consumer has it already.
		opts = append(opts, clientv3.WithPrevKV())
	}
	if w.recursive {
		opts = append(opts, clientv3.WithPrefix())
	}
	return opts
}

// sendInitial sends the current state as ADDED events and returns the
// revision it was read at. Later pages are read at the first page's revision
// so that the watch that follows starts exactly after what was sent.
func (w *watcher) sendInitial(ctx context.Context) (int64, error) {
	start, end := w.key, ""
	if w.recursive {
		end = clientv3.GetPrefixRangeEnd(w.key)
	}
	var rev int64
	for {
		ops := []clientv3.OpOption{}
		if w.recursive {
			ops = append(ops, clientv3.WithRange(end), clientv3.WithLimit(initialPage))
		}
		if rev > 0 {
			ops = append(ops, clientv3.WithRev(rev))
		}
		resp, err := w.store.client.Get(ctx, start, ops...)
		if err != nil {
			return 0, w.store.etcdError(start, "watch: list", err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if w.encoded {
				if !w.send(ctx, watch.Event{Type: watch.Added, Object: w.store.encoded(kv.Key, kv.Value, kv.ModRevision)}) {
					return 0, ctx.Err()
				}
				continue
			}
			obj, err := w.store.decodeNew(kv.Value, kv.ModRevision)
			if err != nil {
				return 0, err
			}
			match, err := w.matches(obj)
			if err != nil {
				return 0, err
			}
			if match && !w.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
				return 0, ctx.Err()
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

func (w *watcher) matches(obj runtime.Object) (bool, error) {
	if !w.filter {
		return true, nil
	}
	ok, err := w.pred.Matches(obj)
	if err != nil {
		return false, fmt.Errorf("etcd3: watch: match: %w", err)
	}
	return ok, nil
}

// convert turns an etcd event into the watch event a client of the
// predicate's selection sees: an update moving an object into the selection
// is ADDED, one moving it out is DELETED (of the old state), and one outside
// it before and after is nothing (ok false). Old states carry the revision
// of the event, as a deletion does.
func (w *watcher) convert(ev *clientv3.Event) (watch.Event, bool, error) {
	rev := ev.Kv.ModRevision
	if w.encoded {
		switch {
		case ev.Type == mvccpb.DELETE:
			return watch.Event{Type: watch.Deleted, Object: w.store.encoded(ev.Kv.Key, nil, rev)}, true, nil
		case ev.IsCreate():
			return watch.Event{Type: watch.Added, Object: w.store.encoded(ev.Kv.Key, ev.Kv.Value, rev)}, true, nil
		}
		return watch.Event{Type: watch.Modified, Object: w.store.encoded(ev.Kv.Key, ev.Kv.Value, rev)}, true, nil
	}
	if ev.Type == mvccpb.DELETE {
		if ev.PrevKv == nil {
			return watch.Event{}, false, fmt.Errorf("etcd3: watch: delete of %s at %d without its previous value", ev.Kv.Key, rev)
		}
		old, err := w.store.decodeNew(ev.PrevKv.Value, rev)
		if err != nil {
			return watch.Event{}, false, err
		}
		match, err := w.matches(old)
		if err != nil || !match {
			return watch.Event{}, false, err
		}
		return watch.Event{Type: watch.Deleted, Object: old}, true, nil
	}

	cur, err := w.store.decodeNew(ev.Kv.Value, rev)
	if err != nil {
		return watch.Event{}, false, err
	}
	curMatch, err := w.matches(cur)
	if err != nil {
		return watch.Event{}, false, err
	}
	if ev.IsCreate() {
		return watch.Event{Type: watch.Added, Object: cur}, curMatch, nil
	}
	if !w.filter {
		return watch.Event{Type: watch.Modified, Object: cur}, true, nil
	}
	oldMatch := false
	var old runtime.Object
	if ev.PrevKv != nil {
		if old, err = w.store.decodeNew(ev.PrevKv.Value, rev); err != nil {
			return watch.Event{}, false, err
		}
		if oldMatch, err = w.matches(old); err != nil {
			return watch.Event{}, false, err
		}
	}
	switch typ, ok := storage.SelectionChange(oldMatch, curMatch); {
	case !ok:
		return watch.Event{}, false, nil
	case typ == watch.Deleted:
		return watch.Event{Type: typ, Object: old}, true, nil
	default:
		return watch.Event{Type: typ, Object: cur}, true, nil
	}
}

func (w *watcher) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *watcher) sendBookmark(ctx context.Context, rev int64) bool {
	obj := w.store.newFunc()
	if err := setResourceVersion(obj, rev); err != nil {
		return true // a type without metadata cannot carry a bookmark; skip it
	}
	return w.send(ctx, watch.Event{Type: watch.Bookmark, Object: obj})
}

// sendInitialEnd tells a sendInitialEvents client that its initial state is
// complete, as of rev.
func (w *watcher) sendInitialEnd(ctx context.Context, rev int64) bool {
	obj := w.store.newFunc()
	m, err := meta.Accessor(obj)
	if err != nil {
		return true
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	return w.send(ctx, watch.Event{Type: watch.Bookmark, Object: obj})
}

func (w *watcher) sendError(ctx context.Context, err error) {
	if errors.Is(err, storage.ErrResourceVersionGone) {
		w.sendStatus(ctx, &apierrors.NewResourceExpired(err.Error()).ErrStatus)
		return
	}
	w.sendStatus(ctx, &apierrors.NewInternalError(err).ErrStatus)
}

func (w *watcher) sendStatus(ctx context.Context, st *metav1.Status) {
	w.send(ctx, watch.Event{Type: watch.Error, Object: st})
}

func expired(requested, compacted int64) *metav1.Status {
	msg := "too old resource version: " + strconv.FormatInt(requested, 10)
	if compacted > 0 {
		msg += " (" + strconv.FormatInt(compacted, 10) + ")"
	}
	return &apierrors.NewResourceExpired(msg).ErrStatus
}

// progressRequester asks etcd, while any watch wants bookmarks, for a
// progress notification on the shared watch stream every interval. One
// request serves every watch on the stream: etcd answers with the revision
// up to which all of them have received their events, which is a revision a
// bookmark may safely carry.
//
// It asks only an etcd cluster that answers correctly: it learns the
// members' versions before its first request (progress_support.go).
type progressRequester struct {
	client   *clientv3.Client
	clock    clock.WithTicker
	interval time.Duration
	// versions returns the etcd members' versions (memberVersions).
	versions func(ctx context.Context) ([]string, error)

	// support is progressUnknown until the versions were read, then
	// progressOn or progressOff for good.
	support atomic.Int32
	checkMu sync.Mutex

	mu      sync.Mutex
	waiters int
	stop    chan struct{}
}

const (
	progressUnknown int32 = iota
	progressOn
	progressOff
)

func newProgressRequester(c *clientv3.Client, clk clock.WithTicker, interval time.Duration) *progressRequester {
	return &progressRequester{client: c, clock: clk, interval: interval,
		versions: func(ctx context.Context) ([]string, error) { return memberVersions(ctx, c) }}
}

// enabled says whether progress may be requested, reading the members'
// versions the first time. A failed read answers no, and the next call
// reads again.
func (p *progressRequester) enabled(ctx context.Context) bool {
	if s := p.support.Load(); s != progressUnknown {
		return s == progressOn
	}
	p.checkMu.Lock()
	defer p.checkMu.Unlock()
	if s := p.support.Load(); s != progressUnknown {
		return s == progressOn
	}
	versions, err := p.versions(ctx)
	if err != nil {
		slog.Warn("etcd: cannot tell whether watch progress may be requested; not requesting it yet", "err", err)
		return false
	}
	ok := clusterAnswersProgress(versions)
	logProgressDecision(versions, ok)
	if ok {
		p.support.Store(progressOn)
	} else {
		p.support.Store(progressOff)
	}
	return ok
}

// answered says whether a progress notification is one this store asked
// of an etcd that answers correctly. Nothing is requested before the
// versions are known, so an unknown support means the notification was
// not asked for.
func (p *progressRequester) answered() bool { return p.support.Load() == progressOn }

// register counts a watch that wants bookmarks; the returned func undoes it.
func (p *progressRequester) register() func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiters++
	if p.waiters == 1 {
		p.stop = make(chan struct{})
		go p.loop(p.stop)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.waiters--
			if p.waiters == 0 {
				close(p.stop)
				p.stop = nil
			}
		})
	}
}

func (p *progressRequester) loop(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = clientv3.WithRequireLeader(ctx)
	t := p.clock.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
			if p.enabled(ctx) {
				p.request(ctx)
			}
		}
	}
}

// request asks for progress while holding the lock, so that at least one
// registered watch still has its etcd watch open: a request on a stream
// without watches would make the client open a new stream that nothing ever
// closes.
func (p *progressRequester) request(ctx context.Context) {
	// A failed request only delays a bookmark; the next tick retries.
	_ = p.requestNow(ctx)
}

// errNoBookmarkWatch: no watch that wants bookmarks is open, so a progress
// request would reach nobody.
var errNoBookmarkWatch = errors.New("etcd3: no watch with bookmarks to request progress for")

func (p *progressRequester) requestNow(ctx context.Context) error {
	if !p.enabled(ctx) {
		return ErrWatchProgressUnsupported
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiters == 0 {
		return errNoBookmarkWatch
	}
	if err := p.client.RequestProgress(ctx); err != nil {
		return fmt.Errorf("etcd3: request watch progress: %w", err)
	}
	return nil
}

// RequestWatchProgress asks etcd, now, for a progress notification on the
// watch stream of this store's bookmark-wanting watches: each of them then
// gets a bookmark at the revision up to which it has every event. etcd
// does not answer while a watch of the stream is still catching up, so a
// caller that waits for the answer asks again until it comes. A watch
// cache that must reach a revision its resource has not been written at
// uses it instead of waiting for the next periodic request. It answers
// ErrWatchProgressUnsupported, and asks nothing, when an etcd member runs a
// version whose answer cannot be trusted.
func (s *store) RequestWatchProgress(ctx context.Context) error {
	// The same metadata as the watches', so that the request reaches their
	// gRPC stream.
	return s.progress.requestNow(clientv3.WithRequireLeader(ctx))
}

// SupportsWatchProgress says whether RequestWatchProgress can be answered:
// false when an etcd member runs a version whose answers cannot be trusted
// (ErrWatchProgressUnsupported), so that a caller waiting for progress
// does not wait for nothing.
func (s *store) SupportsWatchProgress(ctx context.Context) bool {
	return s.progress.enabled(ctx)
}

// encoded is a value etcd holds under key, as an encoded watch sends it.
func (s *store) encoded(key, data []byte, rev int64) *storage.Encoded {
	return &storage.Encoded{Key: strings.TrimPrefix(string(key), s.prefix), Data: data, Rev: rev}
}
