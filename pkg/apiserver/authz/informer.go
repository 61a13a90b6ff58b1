package authz

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

// ListWatcher is the part of storage.Interface an in-memory index reads.
type ListWatcher interface {
	List(ctx context.Context, prefix string, opts storage.ListOptions, listOut runtime.Object) error
	Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error)
}

// Source is one stored collection to follow: where it lives and how to
// make an empty list of it.
type Source struct {
	Store   ListWatcher
	Prefix  string
	NewList func() runtime.Object
}

// Sink receives a collection's state: Replace after every (re)list, then
// each change.
type Sink interface {
	Replace(objs []runtime.Object)
	Upsert(obj runtime.Object)
	Delete(obj runtime.Object)
}

// Follow keeps sink in step with src until ctx ends: list, then watch from
// the list's revision, and list again whenever the watch breaks (e.g. its
// revision was compacted). synced is closed after the first list.
// Authorizers read memory, not etcd, on every request: this is what feeds it.
func Follow(ctx context.Context, clk clock.Clock, src Source, sink Sink, synced chan<- struct{}) {
	first := true
	for ctx.Err() == nil {
		rv, err := relist(ctx, src, sink)
		if err != nil {
			if ctx.Err() == nil {
				slog.WarnContext(ctx, "authorization index: list failed", "prefix", src.Prefix, "err", err)
				wait(ctx, clk, time.Second)
			}
			continue
		}
		if first {
			first = false
			close(synced)
		}
		if err := watchFrom(ctx, src, sink, rv); err != nil && ctx.Err() == nil {
			slog.DebugContext(ctx, "authorization index: watch ended, relisting", "prefix", src.Prefix, "err", err)
		}
	}
}

func wait(ctx context.Context, clk clock.Clock, d time.Duration) {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

func relist(ctx context.Context, src Source, sink Sink) (string, error) {
	list := src.NewList()
	if err := src.Store.List(ctx, src.Prefix, storage.ListOptions{}, list); err != nil {
		return "", err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return "", fmt.Errorf("extract %T: %w", list, err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", fmt.Errorf("list meta of %T: %w", list, err)
	}
	sink.Replace(objs)
	return lm.GetResourceVersion(), nil
}

func watchFrom(ctx context.Context, src Source, sink Sink, rv string) error {
	w, err := src.Store.Watch(ctx, src.Prefix, storage.ListOptions{ResourceVersion: rv, Recursive: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("watch closed")
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				sink.Upsert(ev.Object)
			case watch.Deleted:
				sink.Delete(ev.Object)
			case watch.Error:
				return fmt.Errorf("watch error: %v", ev.Object)
			}
		}
	}
}
