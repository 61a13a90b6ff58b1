package controllers

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/component/leaderelect"
	"github.com/kube-lite/kube-lite/pkg/controller/manager"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// writeLog records, per controller-manager replica, when it wrote anything
// other than its leader Lease.
type writeLog struct {
	mu     sync.Mutex
	writes map[string][]time.Time
}

func (l *writeLog) wrap(id string, cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet && !strings.Contains(r.URL.Path, "/leases/") {
				l.mu.Lock()
				l.writes[id] = append(l.writes[id], time.Now())
				l.mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	}
	return cfg
}

func (l *writeLog) get(id string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.writes[id]...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTwoReplicasNeverBothAct(t *testing.T) {
	c := &cluster{t: t}
	srv := framework.StartAPIServer(t)
	c.cfg, c.client = srv.Config, srv.Client
	c.runScheduler()
	c.addNode("node-a")
	log := &writeLog{writes: map[string][]time.Time{}}
	run := func(id string) context.CancelFunc {
		o := testOptions()
		o.LeaderElection = leaderOptions(id)
		m, err := manager.New(o, log.wrap(id, c.cfg), prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		return c.goUntilCleanup(id, m.Run)
	}
	ctx := context.Background()
	stopFirst := run("first")
	c.waitLeader("first")
	run("second")

	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, newDeployment("web", 2, "busybox:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitAvailable("web", 2)
	if n := len(log.get("second")); n != 0 {
		t.Fatalf("the standby replica wrote %d times while the first led", n)
	}

	stopFirst()
	stopped := time.Now()
	c.waitLeader("second")
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := c.deployment("web")
		d.Spec.Replicas = ptr.To[int32](3)
		_, err := c.client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c.waitAvailable("web", 3)

	first, second := log.get("first"), log.get("second")
	if len(first) == 0 || len(second) == 0 {
		t.Fatalf("writes: first %d, second %d; both should have led in turn", len(first), len(second))
	}
	if last := first[len(first)-1]; last.After(stopped) {
		t.Errorf("the first replica wrote after it stopped")
	}
	if second[0].Before(stopped) {
		t.Errorf("the second replica wrote before the first stopped")
	}
}

func leaderOptions(id string) (o leaderelect.Options) {
	o = testOptions().LeaderElection
	o.Enabled = true
	o.Namespace = "kube-system"
	o.Name = "kube-controller-manager"
	o.Identity = id
	o.LeaseDuration = 3 * time.Second
	o.RenewDeadline = 2 * time.Second
	o.RetryPeriod = 200 * time.Millisecond
	return o
}

func (c *cluster) waitLeader(id string) {
	c.t.Helper()
	waitFor(c.t, id+" to lead", func() (bool, error) {
		l, err := c.client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == id, nil
	})
}
