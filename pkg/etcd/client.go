package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// grpcOverheadBytes is what a request adds around the largest value etcd
// accepts (MaxRequestBytes); the client must be allowed to send it so that
// an oversize object is refused by the server with a clear error.
const grpcOverheadBytes = 512 * 1024

// Config says how to reach an etcd cluster.
type Config struct {
	Endpoints []string
	// CAFile verifies the server; CertFile and KeyFile authenticate the
	// client. Any of them set turns TLS on.
	CAFile, CertFile, KeyFile string
	// DialTimeout bounds the wait for the first connection (default 5s).
	DialTimeout time.Duration
}

// NewClient connects to etcd and checks that the cluster answers.
func NewClient(ctx context.Context, cfg Config) (*clientv3.Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd: no endpoints")
	}
	dialTimeout := cfg.DialTimeout
	if dialTimeout <= 0 {
		dialTimeout = 5 * time.Second
	}
	cc := clientv3.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
		MaxCallSendMsgSize:   MaxRequestBytes + grpcOverheadBytes,
		MaxCallRecvMsgSize:   0, // unlimited: a list may be large
		Logger:               quietLogger(),
		// Retrying every unary call a few times hides a leader change from
		// writers.
		MaxUnaryRetries: 3,
	}
	if cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" {
		tc, err := tlsConfig(cfg)
		if err != nil {
			return nil, err
		}
		cc.TLS = tc
	}
	c, err := clientv3.New(cc)
	if err != nil {
		return nil, fmt.Errorf("etcd: connect to %v: %w", cfg.Endpoints, err)
	}
	// clientv3.New does not wait for a connection; a first request does, so
	// that a wrong address or certificate is reported here and not on the
	// first write.
	pctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if _, err := c.Get(pctx, "health", clientv3.WithCountOnly(), clientv3.WithSerializable()); err != nil {
		c.Close()
		return nil, fmt.Errorf("etcd: reach %v: %w", cfg.Endpoints, err)
	}
	return c, nil
}

func tlsConfig(cfg Config) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcd: read CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd: no certificates in %s", cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("etcd: a client certificate needs both a cert file and a key file")
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd: load client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// quietLogger logs only errors: the client's info-level chatter (balancer
// and retry notes) drowns the components' own logs.
func quietLogger() *zap.Logger {
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	zc.Sampling = nil
	lg, err := zc.Build()
	if err != nil {
		return zap.NewNop()
	}
	return lg
}
