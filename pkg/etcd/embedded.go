// Package etcd starts an embedded single-node etcd and builds clients for an
// embedded or external etcd cluster.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap/zapcore"
)

const (
	// MaxRequestBytes bounds one etcd request. The apiserver refuses bodies
	// over 3 MiB; the stored (protobuf) form of an accepted object is no
	// larger than its JSON body, and the transaction around it (key, compare,
	// gRPC framing) needs a little more, so 3 MiB plus 512 KiB of headroom
	// lets every accepted object be stored while still bounding memory.
	MaxRequestBytes = 3*1024*1024 + 512*1024

	// defaultSnapshotCount is lower than etcd's 10,000: a single-node dev
	// cluster has no slow followers to catch up, and raft entries kept in
	// memory between snapshots are a large part of idle RSS.
	defaultSnapshotCount = 5000
	// defaultCatchUpEntries is how many raft entries survive a snapshot.
	defaultCatchUpEntries = 1000

	defaultReadyTimeout = 30 * time.Second
)

// EmbeddedConfig configures an embedded etcd.
type EmbeddedConfig struct {
	// DataDir holds the WAL and the backend database. Required.
	DataDir string
	// Name is the member name (default "default").
	Name string
	// ClientPort is the loopback port clients use; 0 picks a free one.
	ClientPort int
	// PeerPort is the loopback raft peer port; 0 picks a free one. A single
	// node talks to no peers, but etcd insists on listening.
	PeerPort int
	// ReadyTimeout bounds the wait for the server to serve (default 30s).
	ReadyTimeout time.Duration
	// Logger receives etcd's logs (default slog.Default()).
	Logger *slog.Logger
	// LogLevel is the least severe level passed on: debug, info, warn, error
	// (default error; etcd is chatty).
	LogLevel string
	// AutoCompactionRetention enables etcd's own periodic compaction ("5m").
	// Empty leaves it off: the apiserver runs its own compactor.
	AutoCompactionRetention string
	// SnapshotCount overrides the number of raft entries between snapshots.
	SnapshotCount uint64
	// ServerCertFile and ServerKeyFile, when set, make the client URL
	// https; with ClientCAFile, clients must present a certificate signed
	// by it. The embedded default is plain http on loopback.
	ServerCertFile, ServerKeyFile, ClientCAFile string
	// UnsafeNoFsync disables fsync: for tests and benchmarks only, a crash
	// loses acknowledged writes.
	UnsafeNoFsync bool
}

// Embedded is a running embedded etcd.
type Embedded struct {
	etcd      *embed.Etcd
	endpoints []string
	stopping  *atomic.Bool
}

// StartEmbedded starts an etcd server serving on loopback and waits until it
// is ready to serve clients.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("etcd: a data dir is required")
	}
	// A port picked free can be taken by someone else before etcd binds it;
	// picking again is cheaper than failing the caller.
	attempts := 1
	if cfg.ClientPort == 0 || cfg.PeerPort == 0 {
		attempts = 5
	}
	var lastErr error
	for range attempts {
		e, err := startOnce(ctx, cfg)
		if err == nil {
			return e, nil
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, lastErr
}

func startOnce(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	clientPort, peerPort := cfg.ClientPort, cfg.PeerPort
	var err error
	if clientPort == 0 {
		if clientPort, err = freePort(); err != nil {
			return nil, err
		}
	}
	if peerPort == 0 {
		if peerPort, err = freePort(); err != nil {
			return nil, err
		}
	}
	scheme := "http"
	if cfg.ServerCertFile != "" {
		scheme = "https"
	}
	clientURL := url.URL{Scheme: scheme, Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))}

	ec := embed.NewConfig()
	ec.Dir = cfg.DataDir
	if cfg.Name != "" {
		ec.Name = cfg.Name
	}
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	ec.ListenPeerUrls = []url.URL{peerURL}
	ec.AdvertisePeerUrls = []url.URL{peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	level := zapcore.ErrorLevel
	if cfg.LogLevel != "" {
		if err := level.Set(cfg.LogLevel); err != nil {
			return nil, fmt.Errorf("etcd: log level: %w", err)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	stopping := new(atomic.Bool)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newSlogLogger(log, level, stopping))
	ec.MaxRequestBytes = MaxRequestBytes
	ec.SnapshotCount = defaultSnapshotCount
	if cfg.SnapshotCount != 0 {
		ec.SnapshotCount = cfg.SnapshotCount
	}
	ec.SnapshotCatchUpEntries = defaultCatchUpEntries
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = "0"
	if cfg.AutoCompactionRetention != "" {
		ec.AutoCompactionRetention = cfg.AutoCompactionRetention
	}
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	if cfg.ServerCertFile != "" {
		ec.ClientTLSInfo = transport.TLSInfo{
			CertFile:       cfg.ServerCertFile,
			KeyFile:        cfg.ServerKeyFile,
			TrustedCAFile:  cfg.ClientCAFile,
			ClientCertAuth: cfg.ClientCAFile != "",
		}
	}
	// The gRPC gateway (JSON over HTTP) is for curl users; nothing here needs it.
	ec.EnableGRPCGateway = false

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("etcd: start: %w", err)
	}
	fail := func() { stopping.Store(true); e.Close() }
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = defaultReadyTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		fail()
		return nil, fmt.Errorf("etcd: serve: %w", err)
	case <-timer.C:
		fail()
		return nil, fmt.Errorf("etcd: not ready after %v", timeout)
	case <-ctx.Done():
		fail()
		return nil, fmt.Errorf("etcd: waiting until ready: %w", ctx.Err())
	}
	return &Embedded{etcd: e, endpoints: []string{clientURL.String()}, stopping: stopping}, nil
}

// Endpoints returns the client URLs, for clients in other processes or for
// NewClient.
func (e *Embedded) Endpoints() []string { return append([]string(nil), e.endpoints...) }

// InProcessClient returns a client that calls the server directly, without
// gRPC or sockets: the fastest path for an apiserver embedding etcd. Closing
// it does not stop the server.
func (e *Embedded) InProcessClient() *clientv3.Client { return v3client.New(e.etcd.Server) }

// Failed returns a channel that receives one error if the server stops
// serving on its own after start (a fatal error, a listener that fails);
// Stop does not count. An apiserver on a dead embedded etcd cannot serve,
// so it should exit and let its supervisor start it again.
func (e *Embedded) Failed() <-chan error {
	failed := make(chan error, 1)
	go func() {
		var err error
		select {
		case err = <-e.etcd.Err():
		case <-e.etcd.Server.StopNotify():
		}
		if e.stopping.Load() {
			return
		}
		if err == nil {
			err = errors.New("etcd server stopped")
		}
		failed <- fmt.Errorf("embedded etcd: %w", err)
	}()
	return failed
}

// Stop shuts the server down gracefully and waits for it.
func (e *Embedded) Stop() {
	e.stopping.Store(true)
	e.etcd.Close()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("etcd: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
