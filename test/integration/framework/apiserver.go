// Package framework starts a real kube-lite apiserver in-process, on an
// embedded etcd in a temporary directory, for integration tests.
package framework

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/podsecurity"
	"github.com/kube-lite/kube-lite/pkg/etcd"
)

// Server is a running test apiserver.
type Server struct {
	// Config reaches the server with full rights.
	Config *rest.Config
	// Client is a typed client on Config.
	Client kubernetes.Interface
	// Etcd is a client of the server's etcd, for tests that inspect or
	// compact storage directly.
	Etcd *clientv3.Client
	// API is the assembled server.
	API *apiserver.Server
	// URL is the HTTPS base URL.
	URL string

	stop func()
}

// Stop stops the server before the test ends, as a crash or a shutdown
// would; its etcd keeps running for the servers that share it.
func (s *Server) Stop() { s.stop() }

// Option adjusts the server configuration.
type Option func(*settings)

type settings struct {
	cfg apiserver.Config
	// etcd, when set, is shared with other servers (WithEtcd).
	etcd *clientv3.Client
	// security, when set, turns on authentication and authorization (WithSecurity).
	security *Security
}

// WithBookmarkInterval makes idle watches get bookmarks sooner.
func WithBookmarkInterval(d time.Duration) Option {
	return func(s *settings) { s.cfg.BookmarkInterval = d }
}

// WithPodSecurity configures the PodSecurity plugin as an
// --admission-control-config-file would.
func WithPodSecurity(c *podsecurity.Config) Option {
	return func(s *settings) { s.cfg.PodSecurity = c }
}

// WithEtcd runs the server on c (from StartEtcd) instead of an etcd of its
// own: several servers on one etcd, or one started again on the same data.
func WithEtcd(c *clientv3.Client) Option {
	return func(s *settings) { s.etcd = c }
}

// WithConfig lets a test set any part of the server's configuration.
func WithConfig(f func(*apiserver.Config)) Option {
	return func(s *settings) { f(&s.cfg) }
}

// StartEtcd starts an embedded etcd that stops when the test ends, and
// returns a client of it.
func StartEtcd(t testing.TB) *clientv3.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		cancel()
		t.Fatalf("start etcd: %v", err)
	}
	client, err := etcd.NewClient(ctx, etcd.Config{Endpoints: e.Endpoints()})
	if err != nil {
		cancel()
		e.Stop()
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = client.Close(); e.Stop(); cancel() })
	return client
}

// StartAPIServer starts an apiserver and stops it when the test ends.
func StartAPIServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var st settings
	for _, o := range opts {
		o(&st)
	}
	client := st.etcd
	if client == nil {
		client = StartEtcd(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := st.cfg
	cfg.Etcd = client
	if st.security != nil {
		cfg.Security = st.security.prepare(t)
	}
	api, err := apiserver.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("assemble apiserver: %v", err)
	}
	if err := api.Bootstrap(ctx); err != nil {
		cancel()
		t.Fatalf("bootstrap apiserver: %v", err)
	}
	srv := httptest.NewUnstartedServer(api.Handler())
	srv.EnableHTTP2 = true
	if st.security != nil {
		srv.TLS = st.security.serverTLS(t)
	}
	srv.StartTLS()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			srv.CloseClientConnections()
			srv.Close()
		})
	}
	t.Cleanup(stop)
	restCfg := &rest.Config{
		Host:            srv.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: certPEM(srv)},
		QPS:             1000,
		Burst:           2000,
	}
	if st.security != nil {
		restCfg = st.security.finish(t, srv.URL)
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return &Server{Config: restCfg, Client: cs, Etcd: client, API: api, URL: srv.URL, stop: stop}
}
