// Package framework starts a real kube-lite apiserver in-process, on an
// embedded etcd in a temporary directory, for integration tests.
package framework

import (
	"context"
	"net/http/httptest"
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
}

// Option adjusts the server configuration.
type Option func(*settings)

type settings struct {
	cfg apiserver.Config
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

// StartAPIServer starts an apiserver and stops it when the test ends.
func StartAPIServer(t testing.TB, opts ...Option) *Server {
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
	st := settings{cfg: apiserver.Config{Etcd: client}}
	for _, o := range opts {
		o(&st)
	}
	cfg := st.cfg
	if st.security != nil {
		cfg.Security = st.security.prepare(t)
	}
	api, err := apiserver.New(ctx, cfg)
	if err != nil {
		cancel()
		e.Stop()
		t.Fatalf("assemble apiserver: %v", err)
	}
	if err := api.Bootstrap(ctx); err != nil {
		cancel()
		e.Stop()
		t.Fatalf("bootstrap apiserver: %v", err)
	}
	srv := httptest.NewUnstartedServer(api.Handler())
	srv.EnableHTTP2 = true
	if st.security != nil {
		srv.TLS = st.security.serverTLS(t)
	}
	srv.StartTLS()
	t.Cleanup(func() {
		cancel()
		srv.CloseClientConnections()
		srv.Close()
		_ = client.Close()
		e.Stop()
	})
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
	return &Server{Config: restCfg, Client: cs, Etcd: client, API: api, URL: srv.URL}
}
