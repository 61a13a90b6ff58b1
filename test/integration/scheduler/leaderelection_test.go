package scheduler

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/pkg/component/leaderelect"
	"github.com/kube-lite/kube-lite/pkg/scheduler"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// replica runs a scheduler behind leader election until its ctx is
// cancelled; the returned channel closes when it has stopped.
func replica(t *testing.T, ctx context.Context, c kubernetes.Interface, id string) <-chan struct{} {
	t.Helper()
	s, err := scheduler.New(scheduler.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	le := leaderelect.Options{Enabled: true, Namespace: "kube-system", Name: "kube-scheduler", Identity: id,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = le.Run(ctx, c, func(ctx context.Context) {
			if err := s.Run(ctx); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		})
	}()
	return done
}

func holder(t *testing.T, c kubernetes.Interface) string {
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-scheduler", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestLeaderFailover(t *testing.T) {
	srv := framework.StartAPIServer(t)
	c := srv.Client
	createNode(t, c, "n1", "4")

	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	doneA := replica(t, ctxA, c, "replica-a")
	waitFor(t, "replica-a to lead", func() (bool, error) { return holder(t, c) == "replica-a", nil })

	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	doneB := replica(t, ctxB, c, "replica-b")
	t.Cleanup(func() { cancelB(); <-doneB })

	createPod(t, c, newPod("before", "100m"))
	waitBound(t, c, "before")
	if h := holder(t, c); h != "replica-a" {
		t.Fatalf("lease held by %q while replica-a runs", h)
	}

	// The leader dies; the standby takes over and schedules.
	cancelA()
	<-doneA
	waitFor(t, "replica-b to lead", func() (bool, error) { return holder(t, c) == "replica-b", nil })
	createPod(t, c, newPod("after", "100m"))
	if node := waitBound(t, c, "after"); node != "n1" {
		t.Fatalf("after failover: bound to %q, want n1", node)
	}
}

// cutOff wraps a client config so that its requests fail once cut is set,
// as if the process hung or lost its network: it can neither renew nor
// release its Lease.
func cutOff(cfg *rest.Config, cut *atomic.Bool) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if cut.Load() {
				return nil, errors.New("injected: leader cut off")
			}
			return rt.RoundTrip(r)
		})
	})
	return c
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestLeaderCutOffIsReplacedAfterLeaseExpiry(t *testing.T) {
	srv := framework.StartAPIServer(t)
	c := srv.Client
	createNode(t, c, "n1", "4")

	var cut atomic.Bool
	clientA, err := kubernetes.NewForConfig(cutOff(srv.Config, &cut))
	if err != nil {
		t.Fatal(err)
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	doneA := replica(t, ctxA, clientA, "replica-a")
	t.Cleanup(func() { cancelA(); <-doneA })
	waitFor(t, "replica-a to lead", func() (bool, error) { return holder(t, c) == "replica-a", nil })

	ctxB, cancelB := context.WithCancel(context.Background())
	doneB := replica(t, ctxB, c, "replica-b")
	t.Cleanup(func() { cancelB(); <-doneB })

	cut.Store(true)
	waitFor(t, "replica-b to take over the unrenewed lease", func() (bool, error) { return holder(t, c) == "replica-b", nil })
	createPod(t, c, newPod("after-crash", "100m"))
	if node := waitBound(t, c, "after-crash"); node != "n1" {
		t.Fatalf("bound to %q, want n1", node)
	}
}
