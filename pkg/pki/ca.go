package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"math/big"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"
)

// File names of the cluster CA inside a PKI directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// CAValidity is how long a new cluster CA is valid: long enough that nobody
// has to rotate the root of trust of a small cluster.
const CAValidity = 10 * 365 * 24 * time.Hour

// clockSkew backdates NotBefore so that a node whose clock is a little behind
// the one that issued the certificate does not reject it as not yet valid.
const clockSkew = 5 * time.Minute

// CA is a certificate authority that can issue certificates.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte

	clock  clock.PassiveClock
	logger *slog.Logger
}

// Option tunes the package's functions; the defaults suit production.
type Option func(*settings)

type settings struct {
	clock  clock.PassiveClock
	logger *slog.Logger
}

// WithClock sets the time source used for validity periods and expiry checks.
func WithClock(c clock.PassiveClock) Option {
	return func(s *settings) { s.clock = c }
}

// WithLogger sets where created and reissued files are reported.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) { s.logger = l }
}

func newSettings(opts []Option) settings {
	s := settings{clock: clock.RealClock{}, logger: slog.Default()}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// EnsureCA loads the CA in dir (ca.crt, ca.key) or, when neither file exists,
// creates one valid for ten years. An existing CA is never replaced: every
// certificate and kubeconfig of the cluster trusts it.
func EnsureCA(dir string, opts ...Option) (*CA, error) {
	ca, _, err := ensureCA(dir, newSettings(opts))
	return ca, err
}

// LoadCA loads the CA in dir and fails when it is absent, broken or expired.
func LoadCA(dir string, opts ...Option) (*CA, error) {
	return loadCA(dir, newSettings(opts))
}

func ensureCA(dir string, s settings) (ca *CA, created bool, err error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	certExists, err := exists(certPath)
	if err != nil {
		return nil, false, fmt.Errorf("cluster CA: %w", err)
	}
	keyExists, err := exists(keyPath)
	if err != nil {
		return nil, false, fmt.Errorf("cluster CA: %w", err)
	}
	switch {
	case certExists && keyExists:
		ca, err := loadCA(dir, s)
		return ca, false, err
	case certExists != keyExists:
		// Half a CA is an operator mistake (a lost key, a partial copy);
		// minting a new root would silently break every existing credential.
		return nil, false, fmt.Errorf("cluster CA in %s is incomplete: %s and %s must both exist (remove both to create a new CA)", dir, CACertFile, CAKeyFile)
	}

	ca, err = newCA(s)
	if err != nil {
		return nil, false, err
	}
	keyPEM, err := EncodeKeyPEM(ca.Key)
	if err != nil {
		return nil, false, err
	}
	// Key first: a cert without its key is the unrecoverable half.
	if err := writeFileAtomic(keyPath, keyPEM, privateMode); err != nil {
		return nil, false, fmt.Errorf("cluster CA: %w", err)
	}
	if err := writeFileAtomic(certPath, ca.CertPEM, publicMode); err != nil {
		return nil, false, fmt.Errorf("cluster CA: %w", err)
	}
	s.logger.Info("created cluster CA", "cert", certPath, "notAfter", ca.Cert.NotAfter)
	return ca, true, nil
}

func newCA(s settings) (*CA, error) {
	key, err := newECDSAKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "kube-lite-ca"},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The CA signs leaf certificates only.
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: EncodeCertPEM(cert), clock: s.clock, logger: s.logger}, nil
}

func loadCA(dir string, s settings) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	cert, err := LoadCertFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	key, err := LoadKeyFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("cluster CA: %s is not a CA certificate", certPath)
	}
	if !publicKeyMatches(key, cert.PublicKey) {
		return nil, fmt.Errorf("cluster CA: %s does not belong to %s", keyPath, certPath)
	}
	if now := s.clock.Now(); now.After(cert.NotAfter) {
		return nil, fmt.Errorf("cluster CA: %s expired on %s (remove %s and %s to create a new CA, then redistribute every kubeconfig)",
			certPath, cert.NotAfter.UTC().Format(time.RFC3339), CACertFile, CAKeyFile)
	}
	return &CA{Cert: cert, Key: key, CertPEM: EncodeCertPEM(cert), clock: s.clock, logger: s.logger}, nil
}

// CertPool returns a pool that trusts only this CA.
func (ca *CA) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

func newSerial() (*big.Int, error) {
	// 128 random bits, as RFC 5280 recommends at least 64 and CAs use 128.
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil
}
