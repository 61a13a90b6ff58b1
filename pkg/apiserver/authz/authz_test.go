package authz

import (
	"context"
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

func fixed(d Decision, reason string, err error) Authorizer {
	return Func(func(context.Context, Attributes) (Decision, string, error) { return d, reason, err })
}

func TestUnion(t *testing.T) {
	user := &request.User{Name: "u"}
	admin := &request.User{Name: "root", Groups: []string{SystemMasters}}
	cases := []struct {
		name       string
		u          Union
		user       *request.User
		want       Decision
		wantReason string
	}{
		{"first decision wins: allow", Union{fixed(NoOpinion, "", nil), fixed(Allow, "", nil), fixed(Deny, "no", nil)}, user, Allow, ""},
		{"first decision wins: deny", Union{fixed(Deny, "no", nil), fixed(Allow, "", nil)}, user, Deny, "no"},
		{"nobody decides", Union{fixed(NoOpinion, "a", nil), fixed(NoOpinion, "b", nil)}, user, NoOpinion, "a, b"},
		{"a failing authorizer does not decide", Union{fixed(Allow, "", errors.New("down")), fixed(NoOpinion, "", nil)}, user, Allow, ""},
		{"system:masters passes even AlwaysDeny", Union{AlwaysDeny{}}, admin, Allow, ""},
		{"empty union", Union{}, user, NoOpinion, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, _ := tc.u.Authorize(context.Background(), Attributes{User: tc.user})
			if d != tc.want || reason != tc.wantReason {
				t.Fatalf("got %s %q, want %s %q", d, reason, tc.want, tc.wantReason)
			}
		})
	}
}

func TestForbiddenMessage(t *testing.T) {
	u := &request.User{Name: "x"}
	cases := []struct {
		a    Attributes
		want string
	}{
		{Attributes{User: u, ResourceRequest: true, Verb: "list", Resource: "pods", Namespace: "default"},
			`User "x" cannot list resource "pods" in API group "" in the namespace "default"`},
		{Attributes{User: u, ResourceRequest: true, Verb: "patch", Resource: "nodes", Subresource: "status", Name: "n"},
			`User "x" cannot patch resource "nodes/status" in API group "" at the cluster scope`},
		{Attributes{User: u, ResourceRequest: true, Verb: "create", APIGroup: "apps", Resource: "deployments", Namespace: "a"},
			`User "x" cannot create resource "deployments" in API group "apps" in the namespace "a"`},
		{Attributes{User: u, Verb: "get", Path: "/metrics"}, `User "x" cannot get path "/metrics"`},
	}
	for _, tc := range cases {
		if got := ForbiddenMessage(tc.a); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// fakeStore lists what it holds and hands out watches the test drives.
type fakeStore struct {
	mu      sync.Mutex
	items   []corev1.Pod
	rv      string
	watches chan *watch.FakeWatcher
}

func (f *fakeStore) List(_ context.Context, _ string, _ storage.ListOptions, out runtime.Object) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := out.(*corev1.PodList)
	l.Items = append([]corev1.Pod(nil), f.items...)
	l.ResourceVersion = f.rv
	return nil
}

func (f *fakeStore) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	w := watch.NewFake()
	f.watches <- w
	return w, nil
}

// recorder is a Sink that reports each call.
type recorder struct{ calls chan string }

func (r recorder) Replace(objs []runtime.Object) { r.calls <- "replace " + names(objs) }
func (r recorder) Upsert(o runtime.Object)       { r.calls <- "upsert " + o.(*corev1.Pod).Name }
func (r recorder) Delete(o runtime.Object)       { r.calls <- "delete " + o.(*corev1.Pod).Name }

func names(objs []runtime.Object) string {
	s := ""
	for _, o := range objs {
		s += o.(*corev1.Pod).Name + ","
	}
	return s
}

func TestFollowListsWatchesAndRelists(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &fakeStore{items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}, rv: "5", watches: make(chan *watch.FakeWatcher, 1)}
	rec := recorder{calls: make(chan string, 10)}
	synced := make(chan struct{})
	go Follow(ctx, clocktesting.NewFakeClock(metav1.Now().Time), Source{Store: store, Prefix: "/pods/", NewList: func() runtime.Object { return &corev1.PodList{} }}, rec, synced)

	expect := func(want string) {
		t.Helper()
		if got := <-rec.calls; got != want {
			t.Fatalf("sink got %q, want %q", got, want)
		}
	}
	expect("replace a,")
	<-synced
	w := <-store.watches
	w.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}})
	expect("upsert b")
	w.Modify(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	expect("upsert a")
	w.Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	expect("delete a")

	// A broken watch (e.g. its revision was compacted) makes it list again.
	store.mu.Lock()
	store.items = []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, {ObjectMeta: metav1.ObjectMeta{Name: "c"}}}
	store.mu.Unlock()
	w.Error(&metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired})
	expect("replace b,c,")
	<-store.watches
}
