package etcd3

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	etcdversion "go.etcd.io/etcd/api/v3/version"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-lite/kube-lite/pkg/storage"
)

func TestClusterAnswersProgress(t *testing.T) {
	for _, tc := range []struct {
		versions []string
		want     bool
	}{
		{[]string{"3.4.23"}, false}, // Debian's: etcd-io/etcd#15220
		{[]string{"3.4.25"}, false}, // #15220 fixed, #17507 not
		{[]string{"3.4.30"}, false},
		{[]string{"3.4.31"}, true},
		{[]string{"3.4.37"}, true},
		{[]string{"3.5.7"}, false},
		{[]string{"3.5.8"}, false},
		{[]string{"3.5.12"}, false},
		{[]string{"3.5.13"}, true},
		{[]string{"3.5.21"}, true},
		{[]string{"3.6.0"}, true},
		{[]string{"3.6.8"}, true},
		{[]string{"3.3.27"}, false},
		{[]string{"3.6.8", "3.6.8", "3.6.8"}, true},
		{[]string{"3.6.8", "3.4.23", "3.6.8"}, false}, // one old member is enough
		{[]string{"3.5.13", "3.4.31"}, true},
		{[]string{"not-a-version"}, false},
		{nil, false},
	} {
		t.Run(fmt.Sprint(tc.versions), func(t *testing.T) {
			if got := clusterAnswersProgress(tc.versions); got != tc.want {
				t.Fatalf("clusterAnswersProgress(%v) = %v, want %v", tc.versions, got, tc.want)
			}
		})
	}
}

type fakeStatus struct {
	endpoints []string
	versions  map[string]string
	err       error
}

func (f *fakeStatus) Endpoints() []string { return f.endpoints }

func (f *fakeStatus) Status(_ context.Context, ep string) (*clientv3.StatusResponse, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &clientv3.StatusResponse{Version: f.versions[ep]}, nil
}

func TestMemberVersions(t *testing.T) {
	t.Run("every endpoint", func(t *testing.T) {
		f := &fakeStatus{endpoints: []string{"a", "b"}, versions: map[string]string{"a": "3.6.8", "b": "3.4.23"}}
		got, err := memberVersions(context.Background(), f)
		if err != nil || fmt.Sprint(got) != "[3.6.8 3.4.23]" {
			t.Fatalf("got %v, %v; want [3.6.8 3.4.23]", got, err)
		}
	})
	t.Run("in-process client: the embedded etcd", func(t *testing.T) {
		got, err := memberVersions(context.Background(), &fakeStatus{})
		if err != nil || len(got) != 1 || got[0] != etcdversion.Version {
			t.Fatalf("got %v, %v; want [%s]", got, err, etcdversion.Version)
		}
		if !clusterAnswersProgress(got) {
			t.Fatalf("the embedded etcd %s must answer progress", etcdversion.Version)
		}
	})
	t.Run("unreachable member", func(t *testing.T) {
		f := &fakeStatus{endpoints: []string{"a"}, err: errors.New("connection refused")}
		if _, err := memberVersions(context.Background(), f); err == nil {
			t.Fatal("no error for an unreachable member")
		}
	})
}

// scriptedWatcher is an etcd watch stream whose responses a test sends.
type scriptedWatcher struct {
	ch       chan clientv3.WatchResponse
	requests atomic.Int32
}

func (s *scriptedWatcher) Watch(context.Context, string, ...clientv3.OpOption) clientv3.WatchChan {
	return s.ch
}

func (s *scriptedWatcher) RequestProgress(context.Context) error {
	s.requests.Add(1)
	return nil
}

func (s *scriptedWatcher) Close() error { return nil }

func progressNotify(rev int64) clientv3.WatchResponse {
	return clientv3.WatchResponse{Header: etcdserverpb.ResponseHeader{Revision: rev}}
}

// TestProgressNotificationsFromAnOldEtcdAreIgnored: etcd before 3.4.25
// may answer a progress request with its current revision before a watch
// that is catching up has its events. On such an etcd the store sends no
// progress request, and a notification its watch gets anyway neither
// becomes a bookmark nor hides the events that follow it. On a fixed etcd
// a notification is a bookmark.
func TestProgressNotificationsFromAnOldEtcdAreIgnored(t *testing.T) {
	for _, tc := range []struct {
		version string
		on      bool
	}{
		{"3.4.23", false},
		{"3.6.8", true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			fw := &scriptedWatcher{ch: make(chan clientv3.WatchResponse, 10)}
			c := clientv3.NewCtxClient(testCtx(t))
			c.Watcher = fw
			s := newConfigMapStore(t, c)
			s.(*store).progress.versions = func(context.Context) ([]string, error) { return []string{tc.version}, nil }
			ctx := testCtx(t)

			p := s.(interface {
				progressRequesting
				SupportsWatchProgress(context.Context) bool
			})
			if got := p.SupportsWatchProgress(ctx); got != tc.on {
				t.Fatalf("SupportsWatchProgress = %v, want %v", got, tc.on)
			}
			w := startWatch(t, s, "/configmaps", storage.ListOptions{ResourceVersion: "5", Recursive: true, AllowWatchBookmarks: true})
			err := p.RequestWatchProgress(ctx)
			if !tc.on && (!errors.Is(err, ErrWatchProgressUnsupported) || fw.requests.Load() != 0) {
				t.Fatalf("request progress of %s: %v, %d requests sent; want ErrWatchProgressUnsupported and none",
					tc.version, err, fw.requests.Load())
			}

			put := func(name string, rev int64) clientv3.WatchResponse {
				data, err := s.(*store).encode(configMap("ns", name, nil, nil))
				if err != nil {
					t.Fatal(err)
				}
				kv := &mvccpb.KeyValue{Key: []byte(storePrefix(s) + cmKey("ns", name)), Value: data,
					CreateRevision: rev, ModRevision: rev, Version: 1}
				return clientv3.WatchResponse{Header: etcdserverpb.ResponseHeader{Revision: rev},
					Events: []*clientv3.Event{{Type: mvccpb.PUT, Kv: kv}}}
			}
			var want []string
			if tc.on {
				// A fixed etcd: events, then progress at a later revision.
				fw.ch <- put("a", 6)
				fw.ch <- put("b", 7)
				fw.ch <- progressNotify(10)
				fw.ch <- put("d", 11)
				want = []string{"ADDED a 6", "ADDED b 7", "BOOKMARK 10", "ADDED d 11"}
			} else {
				// etcd-io/etcd#15220: the current revision first, then the
				// events the watch was catching up on.
				fw.ch <- progressNotify(8)
				fw.ch <- put("a", 6)
				fw.ch <- put("b", 7)
				fw.ch <- put("c", 8)
				fw.ch <- put("d", 9)
				want = []string{"ADDED a 6", "ADDED b 7", "ADDED c 8", "ADDED d 9"}
			}
			for i, wantEv := range want {
				ev := nextEvent(t, w)
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					t.Fatalf("event %d: %s %T, want %s", i, ev.Type, ev.Object, wantEv)
				}
				got := fmt.Sprintf("%s %s %s", ev.Type, cm.Name, cm.ResourceVersion)
				if ev.Type == watch.Bookmark {
					got = fmt.Sprintf("%s %s", ev.Type, cm.ResourceVersion)
				}
				if got != wantEv {
					t.Fatalf("event %d: %s, want %s (all: %v)", i, got, wantEv, want)
				}
			}
		})
	}
}
