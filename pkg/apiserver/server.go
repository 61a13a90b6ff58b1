// Package apiserver assembles kube-lite's Kubernetes API server: storage on
// etcd, the generic REST handler over every registered resource, discovery,
// OpenAPI, health and metrics, behind one chi router.
package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	chimiddleware "github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/api"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/podsecurity"
	"github.com/kube-lite/kube-lite/pkg/apiserver/fieldmanager"
	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
	"github.com/kube-lite/kube-lite/pkg/apiserver/openapi"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/servicealloc"
	"github.com/kube-lite/kube-lite/pkg/storage/cacher"
	"github.com/kube-lite/kube-lite/pkg/storage/etcd3"
)

// Config is a complete server configuration.
type Config struct {
	Etcd *clientv3.Client
	// EtcdCacheWatch, if set, carries the watch caches' watches (one per
	// resource, open for the server's life) instead of Etcd.
	EtcdCacheWatch *clientv3.Client
	EtcdPrefix     string
	Clock          clock.Clock
	// Resources defaults to Resources(clock).
	Resources []*registry.Resource
	// Admission defaults to the built-in chain.
	Admission *admission.Chain
	// Logs streams pods/log from kubelets; nil answers 503.
	Logs handler.LogStreamer
	// Profiling serves /debug/pprof (to users allowed that path).
	Profiling bool
	// BookmarkInterval overrides how often idle watches get bookmarks.
	BookmarkInterval time.Duration
	// Security configures authentication and authorization; nil serves
	// everyone with full rights (tests that do not exercise security).
	Security *SecurityOptions
	// PodSecurity is the PodSecurity plugin's configuration
	// (--admission-control-config-file); nil checks namespaces by their
	// labels alone, with nothing exempt.
	PodSecurity *podsecurity.Config
	// ServiceClusterIPRange and ServiceNodePortRange are what Services'
	// cluster IPs and node ports are allocated from; empty means upstream's
	// defaults.
	ServiceClusterIPRange string
	ServiceNodePortRange  string
	// AdvertiseAddress and AdvertisePort are where the `kubernetes`
	// Service's endpoints send clients to this server; no address leaves
	// the Service without this server's endpoint.
	AdvertiseAddress string
	AdvertisePort    int32
}

// Server is an assembled apiserver. Serve its Handler over TLS.
type Server struct {
	handler  http.Handler
	rest     *handler.Handler
	openapi  *openapi.Builder
	scheme   *api.Scheme
	etcd     *clientv3.Client
	registry *prometheus.Registry
	stores   []*handler.Store
	security *security
	clock    clock.Clock
	metrics  *requestMetrics
	// podSecurity configures the built-in chain's PodSecurity plugin.
	podSecurity *podsecurity.Config
	// serviceAlloc allocates Services' cluster IPs and node ports from
	// serviceIPs and the node port range.
	serviceAlloc     *servicealloc.Services
	serviceIPs       *servicealloc.IPRange
	etcdPrefix       string
	advertiseAddress string
	advertisePort    int32
}

// New assembles the server.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Etcd == nil {
		return nil, fmt.Errorf("apiserver: an etcd client is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.EtcdPrefix == "" {
		cfg.EtcdPrefix = "/registry"
	}
	if cfg.Resources == nil {
		cfg.Resources = Resources(cfg.Clock)
	}
	if cfg.AdvertisePort == 0 {
		cfg.AdvertisePort = 6443
	}
	svcAlloc, svcIPs, err := newServiceAllocators(&cfg)
	if err != nil {
		return nil, err
	}
	scheme := api.NewScheme()
	opts := []etcd3.Option{etcd3.SharedBookmarks(cfg.Etcd, cfg.BookmarkInterval)}
	var cacheSourceOpts []etcd3.Option
	if cfg.EtcdCacheWatch != nil {
		cacheSourceOpts = []etcd3.Option{etcd3.SharedBookmarks(cfg.EtcdCacheWatch, cfg.BookmarkInterval)}
	}
	reg := prometheus.NewRegistry()
	cacheMetrics := cacher.NewMetrics(reg)
	stores := make([]*handler.Store, 0, len(cfg.Resources))
	for _, res := range cfg.Resources {
		codec := etcd3.NewStorageCodec(scheme, res.GroupVersion)
		st := &handler.Store{Resource: res, Prefix: storagePrefix(res)}
		etcdStore := etcd3.New(cfg.Etcd, codec, cfg.EtcdPrefix, res.New, opts...)
		if !watchCached(res) {
			st.Storage = etcdStore
			stores = append(stores, st)
			continue
		}
		source := etcdStore
		if cfg.EtcdCacheWatch != nil {
			source = etcd3.New(cfg.EtcdCacheWatch, codec, cfg.EtcdPrefix, res.New, cacheSourceOpts...)
		}
		// Watches are served from one etcd watch per resource, as
		// upstream's watch cache does; everything else goes to etcd.
		c := cacher.New(cacher.Config{
			Storage:          etcdStore,
			Source:           source,
			Prefix:           st.Prefix,
			Decode:           etcd3.NewDecoder(codec, res.New),
			NewFunc:          res.New,
			NewListFunc:      res.NewList,
			GroupVersionKind: res.GroupVersionKind(),
			BookmarkInterval: cfg.BookmarkInterval,
			// The slow-watcher bound runs on real time even when API
			// timestamps come from a test clock.
			Clock:   clock.RealClock{},
			Metrics: cacheMetrics,
		})
		go c.Run(ctx)
		st.Storage = c
		stores = append(stores, st)
	}
	s := &Server{scheme: scheme, etcd: cfg.Etcd, registry: reg, stores: stores, clock: cfg.Clock, podSecurity: cfg.PodSecurity,
		serviceAlloc: svcAlloc, serviceIPs: svcIPs, etcdPrefix: cfg.EtcdPrefix, advertiseAddress: cfg.AdvertiseAddress, advertisePort: cfg.AdvertisePort}
	chain := cfg.Admission
	if chain == nil {
		if chain, err = s.defaultAdmission(ctx); err != nil {
			return nil, err
		}
	}
	s.openapi = openapi.NewBuilder(cfg.Resources, scheme)
	fields := newFieldManagers(s.openapi, cfg.Resources)
	// Built beside the start of the server: the first write waits for
	// it only if it comes sooner.
	go func() {
		if err := fields.Warm(); err != nil {
			slog.ErrorContext(ctx, "managedFields and server-side apply are off", "err", err)
		}
	}()
	s.rest = handler.New(handler.Config{Scheme: scheme, Clock: cfg.Clock, Stores: stores, Admission: chain, Logs: cfg.Logs, Fields: fields})
	if cfg.Security != nil {
		var err error
		if s.security, err = newSecurity(ctx, s, cfg.Security, cfg.Clock); err != nil {
			return nil, err
		}
		chain.Validators = append(chain.Validators, s.security.validators()...)
	}
	s.handler = s.router(ctx, cfg.Resources, cfg.Profiling)
	return s, nil
}

// watchCached says whether a resource's watches are served from a watch
// cache. Events get none, as upstream's: they are written far more often
// than watched, and a cache would decode and hold every one of them.
func watchCached(res *registry.Resource) bool {
	return res.GroupVersion.Group != "" || res.Name != "events"
}

// storagePrefix keeps upstream's etcd layout: /registry/<resource>/..., with
// the group in the path only where core and another group share a name.
func storagePrefix(res *registry.Resource) string {
	return "/" + res.Name + "/"
}

// Handler serves the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// Store returns the store of a group and resource (for admission plugins and tests).
func (s *Server) Store(gr schema.GroupResource) (*handler.Store, bool) { return s.rest.Store(gr) }

func (s *Server) router(ctx context.Context, resources []*registry.Resource, profiling bool) http.Handler {
	m := newRequestMetrics(s.registry)
	s.metrics = m
	disc := newDiscovery(resources)
	oa := s.openapi

	r := chi.NewRouter()
	r.Use(recoverPanics, withRequestInfo, newStackPool(ctx, defaultStackWorkers).middleware, m.middleware, s.authenticate, s.impersonate, s.authorize)
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		handler.WriteError(w, req, handler.NotFound(req))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		handler.WriteError(w, req, handler.MethodNotAllowed(req))
	})
	r.Get("/version", serveVersion())
	if profiling {
		r.Mount("/debug", chimiddleware.Profiler())
	}
	r.Get("/livez", s.health(false))
	r.Get("/livez/*", s.health(false))
	r.Get("/healthz", s.health(true))
	r.Get("/readyz", s.health(true))
	r.Get("/readyz/*", s.health(true))
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	r.Get("/api", disc.serveAPIVersions)
	r.Get("/apis", disc.serveGroups)
	r.Get("/apis/{group}", disc.serveGroup)
	r.Get("/api/{version}", disc.serveResources)
	r.Get("/apis/{group}/{version}", disc.serveResources)
	r.Get("/openapi/v2", oa.ServeV2)
	r.Get("/openapi/v3", oa.ServeV3Discovery)
	r.Get("/openapi/v3/*", oa.ServeV3)
	s.mountSecurityRoutes(r)
	r.Handle("/api/{version}/*", s.rest)
	r.Handle("/apis/{group}/{version}/*", s.rest)
	return r
}

// newFieldManagers keeps the managedFields of every served kind, over the
// schemas the OpenAPI documents publish.
func newFieldManagers(oa *openapi.Builder, resources []*registry.Resource) *fieldmanager.Managers {
	kinds := make([]fieldmanager.Kind, 0, len(resources))
	for _, res := range resources {
		kinds = append(kinds, fieldmanager.Kind{
			GVK:       res.GroupVersionKind(),
			New:       res.New,
			Default:   res.Strategy.Default,
			HasStatus: res.Status != nil,
			HasScale:  res.Scale != nil,
		})
	}
	return fieldmanager.New(oa.Models, kinds)
}
