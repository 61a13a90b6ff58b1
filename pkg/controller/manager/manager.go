package manager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/component"
	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// controllerContext is what every controller's constructor may use.
type controllerContext struct {
	opts      *Options
	config    *rest.Config
	client    kubernetes.Interface
	informers informers.SharedInformerFactory
	metrics   *controllerutil.QueueMetrics
	clock     clock.Clock
	events    record.EventBroadcaster

	// One discovery cache and REST mapper serve every controller that maps
	// kinds to resources, as upstream's controller-manager shares one.
	discoveryOnce sync.Once
	discovery     discovery.DiscoveryInterface
	mapper        *restmapper.DeferredDiscoveryRESTMapper
	discoveryErr  error
}

// restMapper returns the shared discovery client and REST mapper.
func (cc *controllerContext) restMapper() (discovery.DiscoveryInterface, *restmapper.DeferredDiscoveryRESTMapper, error) {
	cc.discoveryOnce.Do(func() {
		disc, err := discovery.NewDiscoveryClientForConfig(cc.config)
		if err != nil {
			cc.discoveryErr = fmt.Errorf("discovery client: %w", err)
			return
		}
		cc.discovery = disc
		cc.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	})
	return cc.discovery, cc.mapper, cc.discoveryErr
}

// recorder returns an event recorder reporting as component (upstream's
// per-controller source names, e.g. "deployment-controller").
func (cc *controllerContext) recorder(component string) record.EventRecorder {
	return cc.events.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: component})
}

// runFunc runs one controller until ctx ends.
type runFunc func(ctx context.Context)

// initFunc builds a controller; a nil runFunc means "nothing to do" (e.g.
// node IPAM without --allocate-node-cidrs).
type initFunc func(ctx context.Context, cc *controllerContext) (runFunc, error)

// Run serves health and metrics on --bind-address and runs the enabled
// controllers against the apiserver in --kubeconfig once this process leads.
func (o *Options) Run(ctx context.Context) error {
	cfg, err := component.RESTConfig(o.Kubeconfig, "kube-lite-controller-manager")
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := New(o, cfg, reg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serveErr := make(chan error, 1)
	go func() {
		serveErr <- component.Serve(ctx, o.BindAddress, m.Ready, reg)
		cancel() // without health endpoints the process must not pretend to run
	}()
	runErr := m.Run(ctx)
	cancel()
	if err := <-serveErr; err != nil {
		return err
	}
	return runErr
}

// Manager runs the enabled controllers. Tests build one with New on an
// in-process apiserver's rest.Config.
type Manager struct {
	opts    *Options
	config  *rest.Config
	client  kubernetes.Interface
	metrics *controllerutil.QueueMetrics
	clock   clock.Clock
	ready   atomic.Bool
}

// New validates o and prepares a manager; reg receives the workqueue metrics.
func New(o *Options, cfg *rest.Config, reg prometheus.Registerer) (*Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &Manager{opts: o, config: cfg, client: client, metrics: controllerutil.NewQueueMetrics(reg), clock: clock.RealClock{}}, nil
}

// Ready reports nil once this replica's controllers are running (or it
// stands by for the leader Lease, which is healthy too).
func (m *Manager) Ready() error {
	if !m.ready.Load() {
		return fmt.Errorf("controllers not started")
	}
	return nil
}

// Run blocks until ctx ends or leadership is lost.
func (m *Manager) Run(ctx context.Context) error {
	if m.opts.LeaderElection.Enabled {
		m.ready.Store(true)
	}
	return m.opts.LeaderElection.Run(ctx, m.client, m.runControllers)
}

func (m *Manager) runControllers(ctx context.Context) {
	enabled, _ := EnabledControllers(m.opts.Controllers) // validated in New
	factory := informers.NewSharedInformerFactory(m.client, resyncPeriod)
	// Not tied to ctx: controllers still finishing a sync after ctx ends
	// may record; the deferred Shutdown flushes once they returned.
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.client.CoreV1().Events("")})
	defer events.Shutdown()
	cc := &controllerContext{opts: m.opts, config: m.config, client: m.client, informers: factory, metrics: m.metrics, clock: m.clock, events: events}
	var runs []runFunc
	var names []string
	for _, name := range KnownControllers() {
		if !enabled[name] {
			continue
		}
		run, err := initializers()[name](ctx, cc)
		if err != nil {
			// One broken controller must not take the others down; upstream
			// exits instead, but a restart loop would stop them all.
			slog.Error("controller failed to start", "controller", name, "err", err)
			continue
		}
		if run == nil {
			continue
		}
		runs = append(runs, run)
		names = append(names, name)
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(ctx)
		}()
	}
	slog.Info("controllers started", "controllers", names)
	m.ready.Store(true)
	wg.Wait()
	factory.Shutdown()
}

// resyncPeriod is how often the informers replay their caches: a safety net
// for a missed edge, cheap because it touches only the local cache.
const resyncPeriod = 12 * time.Hour
