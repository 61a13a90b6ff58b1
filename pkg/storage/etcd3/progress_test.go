package etcd3

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

type progressRequesting interface {
	RequestWatchProgress(ctx context.Context) error
}

// TestRequestWatchProgressBookmarksAnIdleWatch: a watch of a resource that
// another resource's write moved past gets a bookmark at that write's
// revision as soon as progress is requested, not at the next interval.
func TestRequestWatchProgressBookmarksAnIdleWatch(t *testing.T) {
	bothClients(t, func(t *testing.T, c *clientv3.Client) {
		// An interval no test run reaches: only the request can bring the
		// bookmark.
		s := newConfigMapStore(t, c, WithBookmarkInterval(time.Hour))
		p := s.(progressRequesting)
		if err := p.RequestWatchProgress(testCtx(t)); !errors.Is(err, errNoBookmarkWatch) {
			t.Fatalf("without a watch: got %v, want errNoBookmarkWatch", err)
		}
		a := mustCreate(t, s, configMap("ns", "a", nil, nil))
		w := startWatch(t, s, "/configmaps", storage.ListOptions{
			ResourceVersion: a.ResourceVersion, Recursive: true, AllowWatchBookmarks: true})
		o := mustCreate(t, newConfigMapStore(t, c), configMap("ns", "o", nil, nil))
		// etcd drops a request while any watch of the stream is still
		// catching up (this one is, right after o), so ask until the answer
		// comes; bookmarks only move forward until they reach o.
		got := make(chan watch.Event)
		go func() {
			defer close(got)
			for {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					got <- ev
					if cm, ok := ev.Object.(*corev1.ConfigMap); !ok || ev.Type != watch.Bookmark || cm.ResourceVersion == o.ResourceVersion {
						return
					}
				case <-time.After(liveness):
					return
				}
			}
		}()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for last := ""; last != o.ResourceVersion; {
			select {
			case ev, ok := <-got:
				if !ok {
					t.Fatalf("no bookmark at %s within %v", o.ResourceVersion, liveness)
				}
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if ev.Type != watch.Bookmark || !ok {
					t.Fatalf("got %s, want a BOOKMARK", ev.Type)
				}
				if last = cm.ResourceVersion; last != a.ResourceVersion && last != o.ResourceVersion {
					t.Fatalf("bookmark at %s, want %s (or %s first)", last, o.ResourceVersion, a.ResourceVersion)
				}
			case <-tick.C:
				// The watch registers for bookmarks once its etcd watch
				// is open: until then there is nobody to ask for.
				if err := p.RequestWatchProgress(testCtx(t)); err != nil && !errors.Is(err, errNoBookmarkWatch) {
					t.Fatalf("request progress: %v", err)
				}
			}
		}
	})
}

// TestProgressCanBeRequestedOnceTheInitialEventsEnd: a client that has the
// initial-events-end bookmark may ask for progress at once (a watch cache
// waiting to be fresh does) and reaches its watch, rather than finding no
// watch registered yet.
func TestProgressCanBeRequestedOnceTheInitialEventsEnd(t *testing.T) {
	bothClients(t, func(t *testing.T, c *clientv3.Client) {
		for i := range 20 {
			// A store of its own: no other watch is registered for it.
			s := newConfigMapStore(t, c, WithBookmarkInterval(time.Hour))
			mustCreate(t, s, configMap("ns", "a", nil, nil))
			w := startWatch(t, s, "/configmaps", storage.ListOptions{
				Recursive: true, AllowWatchBookmarks: true, InitialEventsEndBookmark: true})
			for done := false; !done; {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatal("watch closed during the initial events")
					}
					done = ev.Type == watch.Bookmark && storage.IsInitialEventsEnd(ev.Object)
				case <-time.After(liveness):
					t.Fatal("no initial-events-end bookmark")
				}
			}
			if err := s.(progressRequesting).RequestWatchProgress(testCtx(t)); err != nil {
				t.Fatalf("round %d: request progress right after the initial events: %v", i, err)
			}
			w.Stop()
		}
	})
}
