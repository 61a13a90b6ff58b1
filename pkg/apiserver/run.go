package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission/podsecurity"
	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/priorityclass"
	"github.com/kube-lite/kube-lite/pkg/etcd"
	"github.com/kube-lite/kube-lite/pkg/pki"
	"github.com/kube-lite/kube-lite/pkg/storage"
	"github.com/kube-lite/kube-lite/pkg/storage/etcd3"
)

// Run starts etcd (embedded unless --etcd-servers), the API server on
// HTTPS, and serves until ctx ends. ready, if not nil, is closed once the
// server accepts connections.
func Run(ctx context.Context, o *Options, ready chan<- struct{}) error {
	if err := o.Validate(); err != nil {
		return err
	}
	var podSecurity *podsecurity.Config
	if o.AdmissionControlConfigFile != "" {
		var err error
		if podSecurity, err = podsecurity.LoadConfig(o.AdmissionControlConfigFile); err != nil {
			return err
		}
	}
	conn, err := connectEtcd(ctx, o)
	if err != nil {
		return err
	}
	defer conn.close()
	client, etcdFailed := conn.client, conn.failed
	// A dead embedded etcd takes the server down with it (an external one
	// may come back: /readyz reports it meanwhile, as upstream).
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	etcdDied := make(chan error, 1)
	go func() {
		select {
		case err := <-etcdFailed:
			slog.Error("shutting down: the embedded etcd stopped", "err", err)
			etcdDied <- err
			stop()
		case <-ctx.Done():
		}
	}()
	if o.EtcdCompactionInterval > 0 {
		etcd3.StartCompactor(ctx, client, o.EtcdCompactionInterval)
	}

	certFile, keyFile := o.TLSCertFile, o.TLSKeyFile
	if certFile == "" {
		if certFile, keyFile, err = pki.SelfSignedServing(o.CertDir, []string{o.BindAddress}); err != nil {
			return fmt.Errorf("self-signed serving certificate: %w", err)
		}
		slog.Info("generated a self-signed serving certificate", "cert", certFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("load serving certificate: %w", err)
	}

	cfg := Config{Etcd: client, EtcdCacheWatch: conn.cacheWatch, EtcdPrefix: o.EtcdPrefix, Clock: clock.RealClock{}, Profiling: o.Profiling, Security: &o.Security, PodSecurity: podSecurity,
		ServiceClusterIPRange: o.ServiceClusterIPRange, ServiceNodePortRange: o.ServiceNodePortRange,
		AdvertiseAddress: o.advertiseAddress(), AdvertisePort: int32(o.SecurePort)}
	clientCAs, err := clientCertPool(&o.Security)
	if err != nil {
		return err
	}
	logs, err := NewKubeletLogs(o.KubeletClientCertificate, o.KubeletClientKey, o.KubeletCertificateAuth)
	if err != nil {
		return err
	}
	cfg.Logs = logs
	srv, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	if err := srv.Bootstrap(ctx); err != nil {
		return err
	}
	logs.nodes = srv
	_ = startGCTuner(ctx, srv.metrics.served.Load, o.GCPercentUnderLoad, os.Getenv("GOGC"))

	addr := net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// As upstream: a keep-alive connection idle this long is closed
		// (client-go's transport drops its own after 90 s as well), so
		// clients that vanished do not hold connections for ever.
		IdleTimeout:    90 * time.Second,
		MaxHeaderBytes: 1 << 20,
		TLSConfig:      &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}},
	}
	if clientCAs != nil {
		// Request, not require nor verify: the x509 authenticator verifies,
		// so that a certificate from another CA is a 401 Status rather than
		// a failed handshake, and token clients need no certificate.
		hs.TLSConfig.ClientAuth = tls.RequestClientCert
		hs.TLSConfig.ClientCAs = clientCAs
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	slog.Info("serving the Kubernetes API", "addr", ln.Addr().String())
	if ready != nil {
		close(ready)
	}
	if err := hs.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	select {
	case err := <-etcdDied:
		return err
	default:
		return nil
	}
}

// etcdConn is how the server reaches etcd.
type etcdConn struct {
	client *clientv3.Client
	// cacheWatch carries the watch caches' few long-lived watches: the
	// embedded etcd's in-process client; nil for an external etcd.
	cacheWatch *clientv3.Client
	// failed reports the embedded etcd's failure (nil for an external one).
	failed <-chan error
	close  func()
}

// connectEtcd connects to the configured etcd, starting the embedded one
// unless --etcd-servers is set.
func connectEtcd(ctx context.Context, o *Options) (*etcdConn, error) {
	if len(o.EtcdServers) > 0 {
		c, err := etcd.NewClient(ctx, etcd.Config{Endpoints: o.EtcdServers, CAFile: o.EtcdCAFile, CertFile: o.EtcdCert, KeyFile: o.EtcdKey})
		if err != nil {
			return nil, fmt.Errorf("connect to etcd %v: %w", o.EtcdServers, err)
		}
		return &etcdConn{client: c, close: func() { _ = c.Close() }}, nil
	}
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: o.DataDir})
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd in %s: %w", o.DataDir, err)
	}
	slog.Info("embedded etcd ready", "dataDir", o.DataDir, "endpoints", e.Endpoints())
	// Client watches go over loopback gRPC: etcd's in-process adapter can
	// deadlock when many watches stop while events flow (etcd-io/etcd#18879),
	// and clients start and stop watches all the time. Reads and writes take
	// the in-process path, which skips gRPC, HTTP/2 and protobuf framing on
	// every request, and so do the watch caches' watches: one per resource,
	// open for the server's life, they cannot make that storm, and each write
	// then reaches its cache without a trip through the loopback socket.
	c, err := etcd.NewClient(ctx, etcd.Config{Endpoints: e.Endpoints()})
	if err != nil {
		e.Stop()
		return nil, fmt.Errorf("connect to the embedded etcd: %w", err)
	}
	local := e.InProcessClient()
	c.KV = local.KV
	return &etcdConn{client: c, cacheWatch: local, failed: e.Failed(), close: func() { _ = c.Close(); _ = local.Close(); e.Stop() }}, nil
}

// systemNamespaces exist in every cluster.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// Bootstrap creates what every cluster has: the system namespaces, the
// built-in priority classes and, with RBAC, the bootstrap roles; it then fills the authorizers' indexes.
func (s *Server) Bootstrap(ctx context.Context) error {
	st, ok := s.Store(schema.GroupResource{Resource: "namespaces"})
	if !ok {
		return nil
	}
	sas, _ := s.Store(schema.GroupResource{Resource: "serviceaccounts"})
	for _, name := range systemNamespaces {
		if err := s.createIfAbsent(ctx, st, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return err
		}
		if sas == nil {
			continue
		}
		if err := s.createIfAbsent(ctx, sas, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}); err != nil {
			return err
		}
	}
	if pcs, ok := s.Store(priorityClassesGR); ok {
		for _, pc := range priorityclass.SystemClasses() {
			if err := s.createIfAbsent(ctx, pcs, pc); err != nil {
				return err
			}
		}
	}
	if err := s.startServices(ctx); err != nil {
		return err
	}
	return s.startSecurity(ctx)
}

// serverObject is an object the server writes straight to storage.
type serverObject interface {
	runtime.Object
	metav1.Object
}

// prepareCreated gives obj, about to be stored by the server itself, a UID,
// a creation time and the resource's defaults.
func (s *Server) prepareCreated(ctx context.Context, st *handler.Store, obj serverObject) {
	obj.SetUID(uuid.NewUUID())
	obj.SetCreationTimestamp(metav1.NewTime(s.clock.Now()))
	st.Strategy.Default(obj)
	st.Strategy.PrepareForCreate(ctx, obj)
}

// createIfAbsent stores obj, prepared as prepareCreated does, unless it
// exists.
func (s *Server) createIfAbsent(ctx context.Context, st *handler.Store, obj serverObject) error {
	s.prepareCreated(ctx, st, obj)
	namespace, name := obj.GetNamespace(), obj.GetName()
	err := st.Storage.Create(ctx, st.Key(namespace, name), obj, st.New())
	if err != nil && !errors.Is(err, storage.ErrKeyExists) {
		return fmt.Errorf("create %s %s/%s: %w", st.Name, namespace, name, err)
	}
	return nil
}
