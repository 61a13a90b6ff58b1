package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/knftables"
)

func histogram(t *testing.T, reg *prometheus.Registry, name string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if l := m.GetLabel(); len(l) != 1 || l[0].GetValue() != "IPv4" {
				t.Errorf("%s labels %v, want ip_family=IPv4", name, l)
			}
			return m.GetHistogram()
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// servicesOf and slicesOf list and watch through a (fake) clientset, as
// Sources does through the REST clients; the fake cannot stream a list.
func servicesOf(c kubernetes.Interface) cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Services(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Services(metav1.NamespaceAll).Watch(ctx, o)
		},
	}, c)
}

func slicesOf(c kubernetes.Interface) cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).Watch(ctx, o)
		},
	}, c)
}

// waitFor consumes the proxier's sync requests until the informers show
// what done looks for; every informer event asks for a sync after its
// store is updated, so no change is missed.
func waitFor(ctx context.Context, t *testing.T, p *Proxier, done func() bool) {
	t.Helper()
	for !done() {
		select {
		case <-p.dirty:
		case <-ctx.Done():
			t.Fatal("informers never showed the change")
		}
	}
}

func TestProxierFollowsTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)

	svc := service("web", "10.96.0.20", func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP })
	eps := slice("web", "web-abc", nil, readyEP("10.244.0.5", testNode), readyEP("10.244.1.3", "node-2"))
	eps.Annotations = map[string]string{v1.EndpointsLastChangeTriggerTime: now.Add(-1500 * time.Millisecond).Format(time.RFC3339Nano)}
	// Another proxy's Service is not ours to program.
	other := service("other", "10.96.0.30", func(s *v1.Service) { s.Labels = map[string]string{labelServiceProxyName: "someone-else"} })
	client := fake.NewClientset(svc, eps, other)
	nft := knftables.NewFake(knftables.IPv4Family, TableName)
	reg := prometheus.NewRegistry()
	p, err := NewProxier(ProxierConfig{Services: servicesOf(client), Slices: slicesOf(client), NFT: nft, Rules: testConfig(), Clock: clk, Registry: reg,
		SyncPeriod: 30 * time.Second, MinSyncPeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := healthz(t, p.health).Code; got != http.StatusServiceUnavailable {
		t.Errorf("healthz before the first sync: %d, want 503", got)
	}
	if err := p.start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	dump := nft.Dump()
	for _, want := range []string{
		"add element ip kube-lite service-ips { 10.96.0.20 . tcp . 80 : goto service-ns/web/tcp/http }",
		"add chain ip kube-lite endpoint-ns/web/tcp/http__10.244.1.3/8080",
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("after the first sync the table lacks %q:\n%s", want, dump)
		}
	}
	if strings.Contains(dump, "10.96.0.30") {
		t.Errorf("a Service labelled for another proxy got rules:\n%s", dump)
	}
	if h := histogram(t, reg, "kubeproxy_network_programming_duration_seconds"); h.GetSampleCount() != 1 || h.GetSampleSum() != 1.5 {
		t.Errorf("network programming: %d samples summing %v s, want 1 of 1.5 s", h.GetSampleCount(), h.GetSampleSum())
	}
	if h := histogram(t, reg, "kubeproxy_sync_proxy_rules_duration_seconds"); h.GetSampleCount() != 1 {
		t.Errorf("sync durations observed: %d, want 1", h.GetSampleCount())
	}
	if got := healthz(t, p.health).Code; got != http.StatusOK {
		t.Errorf("healthz after a sync: %d, want 200", got)
	}

	// The kernel remembers a client of the endpoint that stays.
	kept := "affinity-ns/web/tcp/http__10.244.0.5/8080-10800s"
	tx := nft.NewTransaction()
	tx.Add(&knftables.Element{Set: kept, Key: []string{"10.244.7.7"}})
	if err := nft.Run(ctx, tx); err != nil {
		t.Fatal(err)
	}

	eps = eps.DeepCopy()
	eps.Endpoints = eps.Endpoints[:1]
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, eps, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, p, func() bool {
		s, err := p.slices.EndpointSlices("ns").Get("web-abc")
		return err == nil && len(s.Endpoints) == 1
	})
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	dump = nft.Dump()
	if strings.Contains(dump, "10.244.1.3") {
		t.Errorf("the removed endpoint's chain or affinity set is still there:\n%s", dump)
	}
	if s := nft.Table.Sets[kept]; s == nil || s.FindElement("10.244.7.7") == nil {
		t.Errorf("a sync forgot the client of the endpoint that stayed:\n%s", dump)
	}

	if err := client.CoreV1().Services("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, p, func() bool {
		_, err := p.services.Services("ns").Get("web")
		return err != nil
	})
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if dump := nft.Dump(); strings.Contains(dump, "ns/web") || strings.Contains(dump, "10.96.0.20") {
		t.Errorf("a deleted Service left rules:\n%s", dump)
	}
}

func healthz(t *testing.T, h *health) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	return rec
}

func TestHealthz(t *testing.T) {
	start := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	h := newHealth(clk, time.Minute)
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"before any sync", func() {}, http.StatusServiceUnavailable},
		{"after a sync", func() { h.synced(clk.Now()) }, http.StatusOK},
		{"a change waiting less than the timeout", func() { h.queued(); clk.Step(59 * time.Second) }, http.StatusOK},
		{"a change waiting longer", func() { clk.Step(2 * time.Second) }, http.StatusServiceUnavailable},
		{"synced again", func() { h.synced(clk.Now()) }, http.StatusOK},
	}
	for _, s := range steps {
		s.do()
		rec := healthz(t, h)
		if rec.Code != s.want {
			t.Errorf("%s: %d, want %d", s.name, rec.Code, s.want)
		}
		var body struct {
			LastUpdated time.Time `json:"lastUpdated"`
			CurrentTime time.Time `json:"currentTime"`
			Healthy     *bool     `json:"healthy"`
			Status      map[string]struct {
				Healthy bool `json:"healthy"`
			} `json:"status"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: body %q: %v", s.name, rec.Body, err)
		}
		healthy := s.want == http.StatusOK
		if body.Healthy == nil || *body.Healthy != healthy || body.Status["IPv4"].Healthy != healthy || !body.CurrentTime.Equal(clk.Now()) {
			t.Errorf("%s: body %s, want healthy %v at %s", s.name, rec.Body, healthy, clk.Now())
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		change  func(o *Options)
		wantErr string
	}{
		{name: "defaults", change: func(o *Options) {}},
		{name: "all flags", change: func(o *Options) {
			o.ClusterCIDR, o.NodePortAddresses, o.HostnameOverride = "10.244.0.0/16", []string{"192.168.0.0/16"}, "Node-1"
		}},
		{name: "service range not a CIDR", change: func(o *Options) { o.ServiceCIDR = "10.96.0.0" }, wantErr: "--service-cluster-ip-range"},
		{name: "IPv6 service range", change: func(o *Options) { o.ServiceCIDR = "fd00::/108" }, wantErr: "IPv4 CIDR"},
		{name: "bad cluster CIDR", change: func(o *Options) { o.ClusterCIDR = "pods" }, wantErr: "--cluster-cidr"},
		{name: "bad nodeport address", change: func(o *Options) { o.NodePortAddresses = []string{"primary"} }, wantErr: "--nodeport-addresses"},
		{name: "bad healthz address", change: func(o *Options) { o.HealthzBindAddress = "10256" }, wantErr: "--healthz-bind-address"},
		{name: "no sync period", change: func(o *Options) { o.SyncPeriod = 0 }, wantErr: "--sync-period"},
		{name: "cleanup needs no servers", change: func(o *Options) { o.Cleanup, o.MetricsBindAddress = true, "nowhere" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.change(o)
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one naming %q", err, tc.wantErr)
			}
		})
	}
	o := NewOptions()
	o.HostnameOverride = "Node-1"
	if err := o.Validate(); err != nil || o.nodeName != "node-1" {
		t.Errorf("node name %q (%v), want the override lower-cased as upstream", o.nodeName, err)
	}
}

// Changes that arrive while the loop waits out the minimum period after a
// sync that wrote a change are written together by one sync; with no
// change, the table is still rewritten hourly, and neither the first sync
// nor that rewrite holds the next change back by the minimum period.
func TestRunCoalescesAndResyncs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC))
	eps := slice("web", "web-abc", nil, readyEP("10.244.0.5", testNode))
	client := fake.NewClientset(service("web", "10.96.0.20", nil), eps)
	nft := knftables.NewFake(knftables.IPv4Family, TableName)
	reg := prometheus.NewRegistry()
	const minSync = time.Second
	p, err := NewProxier(ProxierConfig{Services: servicesOf(client), Slices: slicesOf(client), NFT: nft, Rules: testConfig(), Clock: clk, Registry: reg,
		SyncPeriod: 30 * time.Second, MinSyncPeriod: minSync})
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	syncs := func() uint64 {
		return histogram(t, reg, "kubeproxy_sync_proxy_rules_duration_seconds").GetSampleCount()
	}
	// await waits, with the fake clock standing still, until the table
	// holds want.
	await := func(want, why string) {
		t.Helper()
		for !strings.Contains(nft.Dump(), want) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: the table never held %q:\n%s", why, want, nft.Dump())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	update := func(ips ...string) {
		t.Helper()
		eps = eps.DeepCopy()
		eps.Endpoints = slice("web", "x", nil, readyEP("10.244.0.5", testNode)).Endpoints
		for _, ip := range ips {
			eps.Endpoints = append(eps.Endpoints, slice("web", "x", nil, readyEP(ip, testNode)).Endpoints...)
		}
		if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, eps, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	await("10.96.0.20", "first sync")

	// The first sync holds nothing back: the change after it is written
	// with the clock standing still.
	update("10.244.0.6")
	await("numgen random mod 2", "a change after the first sync")
	// That sync wrote a change: the next two wait out the minimum period,
	// and one sync writes both.
	for _, ips := range [][]string{{"10.244.0.6", "10.244.0.7"}, {"10.244.0.6", "10.244.0.7", "10.244.0.8"}} {
		update(ips...)
		n := len(eps.Endpoints)
		waitFor(ctx, t, p, func() bool {
			s, err := p.slices.EndpointSlices("ns").Get("web-abc")
			return err == nil && len(s.Endpoints) == n
		})
		p.queue() // waitFor took the loop's request; give it back
	}
	if dump := nft.Dump(); !strings.Contains(dump, "numgen random mod 2") {
		t.Fatalf("a change was written before the minimum period passed:\n%s", dump)
	}
	before := syncs()
	// Stepped until written: the loop may not be waiting on the clock yet.
	for !strings.Contains(nft.Dump(), "numgen random mod 4") {
		select {
		case <-ctx.Done():
			t.Fatalf("changes after the minimum period never written:\n%s", nft.Dump())
		case <-time.After(10 * time.Millisecond):
			clk.Step(minSync)
		}
	}
	if got := syncs(); got != before+1 {
		t.Errorf("%d syncs for two changes after the minimum period, want 1", got-before)
	}

	// Nothing changed for the 30 s sync period: no sync (upstream's
	// nftables mode syncs unprompted only hourly).
	before = syncs()
	clk.Step(30 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if got := syncs(); got != before {
		t.Fatalf("%d syncs in 30 s without a change, want none", got-before)
	}
	fullSyncs := func() uint64 {
		return histogram(t, reg, "kubeproxy_sync_full_proxy_rules_duration_seconds").GetSampleCount()
	}
	for fullSyncs() < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("no hourly rewrite")
		case <-time.After(10 * time.Millisecond):
			clk.Step(10 * time.Minute)
		}
	}

	// The hourly rewrite holds nothing back either.
	update()
	await("numgen random mod 1", "a change after the hourly rewrite")

	cancel()
	if err := <-runErr; err != nil {
		t.Errorf("Run: %v", err)
	}
	if !strings.Contains(nft.Dump(), "10.96.0.20") {
		t.Error("the table is gone after Run ended; upstream leaves it for the next start")
	}
}

// failingNFT refuses transactions while fail is set, as the kernel
// refuses a bad one.
type failingNFT struct {
	*knftables.Fake
	fail bool
}

func (f *failingNFT) Run(ctx context.Context, tx *knftables.Transaction) error {
	if f.fail {
		return errors.New("nft: refused")
	}
	return f.Fake.Run(ctx, tx)
}

// A sync the kernel refuses changes nothing, and the next one writes the
// whole table and still reports how late the change that waited is.
func TestSyncAfterRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	eps := slice("web", "web-abc", nil, readyEP("10.244.0.5", testNode))
	eps.Annotations = map[string]string{v1.EndpointsLastChangeTriggerTime: now.Add(-time.Second).Format(time.RFC3339Nano)}
	nft := &failingNFT{Fake: knftables.NewFake(knftables.IPv4Family, TableName), fail: true}
	reg := prometheus.NewRegistry()
	client := fake.NewClientset(service("web", "10.96.0.20", nil), eps)
	p, err := NewProxier(ProxierConfig{Services: servicesOf(client), Slices: slicesOf(client), NFT: nft,
		Rules: testConfig(), Clock: clk, Registry: reg, SyncPeriod: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, p, func() bool {
		_, err := p.slices.EndpointSlices("ns").Get("web-abc")
		return err == nil
	})
	p.sliceChanged(eps) // the informer's own call may come later still
	if err := p.Sync(ctx); err == nil {
		t.Fatal("a refused transaction reported no error")
	}
	if nft.Dump() != "" {
		t.Errorf("a refused sync left:\n%s", nft.Dump())
	}
	nft.fail = false
	clk.Step(2 * time.Second)
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(nft.Dump(), "10.96.0.20 . tcp . 80 : goto service-ns/web/tcp/http") {
		t.Errorf("the sync after a refusal did not write the Service:\n%s", nft.Dump())
	}
	if h := histogram(t, reg, "kubeproxy_network_programming_duration_seconds"); h.GetSampleCount() != 1 || h.GetSampleSum() != 3 {
		t.Errorf("network programming: %d samples summing %v s, want 1 of 3 s", h.GetSampleCount(), h.GetSampleSum())
	}
}
