package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/knftables"
)

// Labels that take a Service or its slices away from this proxy, as upstream
// kube-proxy honours them.
const (
	labelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	labelHeadless         = "service.kubernetes.io/headless"
)

// nftables is the part of knftables.Interface a sync uses.
type nftables interface {
	NewTransaction() *knftables.Transaction
	Run(ctx context.Context, tx *knftables.Transaction) error
	ListAll(ctx context.Context) (map[string][]string, error)
}

// ProxierConfig is what New needs.
type ProxierConfig struct {
	// Services and Slices list and watch the whole cluster's (see Sources);
	// the proxier narrows them to what it proxies.
	Services, Slices cache.ListerWatcher
	NFT              nftables
	// Table names NFT's table in logs and errors.
	Table    string
	Rules    Config
	NodeIPs  func() ([]netip.Addr, error)
	Clock    clock.WithTicker
	Registry prometheus.Registerer
	// MinSyncPeriod coalesces bursts of changes into one sync;
	// SyncPeriod is how soon a failed sync is tried again (upstream
	// nftables mode's meaning: unprompted, the table is rewritten hourly).
	MinSyncPeriod, SyncPeriod time.Duration
}

// Proxier keeps the node's table equal to what the Services and
// EndpointSlices ask for.
type Proxier struct {
	cfg       ProxierConfig
	informers []cache.SharedIndexInformer
	services  corelisters.ServiceLister
	slices    discoverylisters.EndpointSliceLister
	synced    []cache.InformerSynced
	metrics   *metrics
	health    *health

	dirty chan struct{}

	mu sync.Mutex
	// triggers holds, per slice, when the change not yet in the kernel was
	// made (the endpoints controller's last-change-trigger-time).
	triggers map[string]time.Time
	// prev is what the last successful sync wrote, which the next one
	// changes where needed; nil means the table must be listed from the
	// kernel and rewritten whole.
	prev     *Ruleset
	lastFull time.Time
}

// fullSyncPeriod is how often the table is rewritten whole, unprompted or
// in place of a partial sync, in case something else touched it (upstream's
// figure).
const fullSyncPeriod = time.Hour

// NewProxier wires informers on Services and EndpointSlices to the sync loop.
func NewProxier(cfg ProxierConfig) (*Proxier, error) {
	notProxied := labels.NewSelector()
	for _, l := range []string{labelServiceProxyName, labelHeadless} {
		r, err := labels.NewRequirement(l, "!", nil)
		if err != nil {
			return nil, fmt.Errorf("label selector: %w", err)
		}
		notProxied = notProxied.Add(*r)
	}
	newInformer := func(lw cache.ListerWatcher, example runtime.Object) (cache.SharedIndexInformer, error) {
		inf := cache.NewSharedIndexInformer(selected(lw, notProxied.String()), example, 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if err := inf.SetTransform(slim); err != nil {
			return nil, fmt.Errorf("informer transform: %w", err)
		}
		return inf, nil
	}
	svcInformer, err := newInformer(cfg.Services, &v1.Service{})
	if err != nil {
		return nil, err
	}
	sliceInformer, err := newInformer(cfg.Slices, &discoveryv1.EndpointSlice{})
	if err != nil {
		return nil, err
	}
	p := &Proxier{
		cfg:       cfg,
		informers: []cache.SharedIndexInformer{svcInformer, sliceInformer},
		services:  corelisters.NewServiceLister(svcInformer.GetIndexer()),
		slices:    discoverylisters.NewEndpointSliceLister(sliceInformer.GetIndexer()),
		metrics:   newMetrics(cfg.Registry),
		health:    newHealth(cfg.Clock, 2*cfg.SyncPeriod),
		dirty:     make(chan struct{}, 1),
		triggers:  map[string]time.Time{},
	}
	p.synced = []cache.InformerSynced{svcInformer.HasSynced, sliceInformer.HasSynced}
	changed := func(any) { p.queue() }
	if _, err := svcInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: changed, UpdateFunc: func(_, n any) { changed(n) }, DeleteFunc: changed,
	}); err != nil {
		return nil, fmt.Errorf("service handler: %w", err)
	}
	if _, err := sliceInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.sliceChanged,
		UpdateFunc: func(_, n any) { p.sliceChanged(n) },
		DeleteFunc: changed,
	}); err != nil {
		return nil, fmt.Errorf("endpointslice handler: %w", err)
	}
	return p, nil
}

func (p *Proxier) sliceChanged(obj any) {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
		if t, err := time.Parse(time.RFC3339Nano, s.Annotations[v1.EndpointsLastChangeTriggerTime]); err == nil {
			p.mu.Lock()
			// The oldest pending change is the one the next sync answers late.
			if old, ok := p.triggers[s.Namespace+"/"+s.Name]; !ok || t.Before(old) {
				p.triggers[s.Namespace+"/"+s.Name] = t
			}
			p.mu.Unlock()
		}
	}
	p.queue()
}

// queue asks for a sync; any number of changes before it runs make one.
func (p *Proxier) queue() {
	p.health.queued()
	select {
	case p.dirty <- struct{}{}:
	default:
	}
}

// Run syncs until ctx ends. The table stays when it ends: connections keep
// working while the proxy restarts, as with upstream kube-proxy.
//
// A sync follows a change; unprompted, the loop only rewrites the table
// hourly, as upstream's nftables mode, and retries a failed sync after
// SyncPeriod. Only a sync that wrote some Services' changes holds the next
// one back by MinSyncPeriod, to gather a burst: a change arriving right
// after the first sync, an hourly rewrite, a retry or a sync that found
// nothing to write is not kept waiting for a burst that is not coming.
func (p *Proxier) Run(ctx context.Context) error {
	if err := p.start(ctx); err != nil {
		return err
	}
	slog.Info("caches synced; programming nftables", "table", p.cfg.Table)
	rewrite := p.cfg.Clock.NewTicker(fullSyncPeriod)
	defer rewrite.Stop()
	var retry <-chan time.Time
	p.queue()
	for {
		full := false
		select {
		case <-ctx.Done():
			return nil
		case <-p.dirty:
		case <-retry:
		case <-rewrite.C():
			full = true
		}
		wrote, err := p.sync(ctx, full)
		if err != nil {
			slog.Error("sync failed; retrying", "err", err, "in", p.cfg.SyncPeriod)
			retry = p.cfg.Clock.After(p.cfg.SyncPeriod)
			continue
		}
		retry = nil
		if !wrote {
			continue
		}
		// Coalesce: changes arriving meanwhile wait for one sync after it.
		select {
		case <-ctx.Done():
			return nil
		case <-p.cfg.Clock.After(p.cfg.MinSyncPeriod):
		}
	}
}

// start runs the informers until ctx ends and waits for their first list.
func (p *Proxier) start(ctx context.Context) error {
	for _, inf := range p.informers {
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return fmt.Errorf("caches not synced: %w", ctx.Err())
	}
	return nil
}

// Sync writes the table once from the informers' current state: only the
// Services that changed, unless the table must be rewritten whole.
func (p *Proxier) Sync(ctx context.Context) error {
	_, err := p.sync(ctx, false)
	return err
}

// sync is Sync; full rewrites the whole table even when nothing changed.
// It reports whether it wrote some Services' changes (a partial sync with
// something to write).
func (p *Proxier) sync(ctx context.Context, full bool) (wrote bool, err error) {
	start := p.cfg.Clock.Now()
	p.mu.Lock()
	triggers := p.triggers
	p.triggers = map[string]time.Time{}
	p.mu.Unlock()
	defer func() {
		if err != nil {
			p.requeueTriggers(triggers)
		}
	}()

	svcs, err := p.services.List(labels.Everything())
	if err != nil {
		return false, fmt.Errorf("list services: %w", err)
	}
	eps, err := p.slices.List(labels.Everything())
	if err != nil {
		return false, fmt.Errorf("list endpointslices: %w", err)
	}
	st := State{Services: svcs, Slices: eps}
	if len(p.cfg.Rules.NodePortCIDRs) > 0 {
		if st.NodeIPs, err = p.cfg.NodeIPs(); err != nil {
			return false, fmt.Errorf("node addresses: %w", err)
		}
	}
	rs := Render(p.cfg.Rules, st)
	tx := p.cfg.NFT.NewTransaction()
	full = full || p.prev == nil || start.Sub(p.lastFull) >= fullSyncPeriod || !rs.Update(tx, p.prev)
	if full {
		var existing map[string][]string
		if p.prev != nil {
			existing = p.prev.names()
		} else if existing, err = p.cfg.NFT.ListAll(ctx); err != nil && !knftables.IsNotFound(err) {
			return false, fmt.Errorf("list table %s: %w", p.cfg.Table, err)
		}
		tx = p.cfg.NFT.NewTransaction()
		rs.Transaction(tx, existing)
	}
	// With nothing changed there is nothing to tell the kernel.
	if tx.NumOperations() > 0 {
		if err := p.cfg.NFT.Run(ctx, tx); err != nil {
			// The kernel refused: list it again next time.
			p.prev = nil
			return false, fmt.Errorf("write table %s (%d operations): %w", p.cfg.Table, tx.NumOperations(), err)
		}
	}
	p.prev = rs
	if full {
		p.lastFull = start
	}
	now := p.cfg.Clock.Now()
	p.metrics.syncDuration.Observe(now.Sub(start).Seconds())
	if full {
		p.metrics.fullSyncDuration.Observe(now.Sub(start).Seconds())
	} else {
		p.metrics.partialSyncDuration.Observe(now.Sub(start).Seconds())
	}
	p.metrics.lastSync.Set(float64(now.Unix()))
	for _, t := range triggers {
		p.metrics.programming.Observe(now.Sub(t).Seconds())
	}
	p.health.synced(now)
	slog.Debug("synced", "full", full, "services", len(svcs), "endpointslices", len(eps), "operations", tx.NumOperations(), "took", now.Sub(start))
	return !full && tx.NumOperations() > 0, nil
}

// selected asks lw only for the objects matching the label selector; it
// streams the initial list (watch-list) when lw can.
func selected(lw cache.ListerWatcher, selector string) cache.ListerWatcher {
	inner := cache.ToListerWatcherWithContext(lw)
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return inner.ListWithContext(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return inner.WatchWithContext(ctx, o)
		},
	}, lw)
}

// requeueTriggers keeps the change times of a failed sync for the next.
func (p *Proxier) requeueTriggers(triggers map[string]time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, t := range triggers {
		if old, ok := p.triggers[k]; !ok || t.Before(old) {
			p.triggers[k] = t
		}
	}
}

// names lists r's objects in knftables' ListAll shape.
func (r *Ruleset) names() map[string][]string {
	out := map[string][]string{}
	for _, f := range r.fragments() {
		for _, c := range f.chains {
			out["chain"] = append(out["chain"], c.Name)
		}
		for _, s := range f.sets {
			out["set"] = append(out["set"], s.Name)
		}
		for _, m := range f.maps {
			out["map"] = append(out["map"], m.Name)
		}
	}
	return out
}
