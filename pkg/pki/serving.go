package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
)

// File names of the self-signed serving certificate in an apiserver --cert-dir.
const (
	SelfSignedCertFile = "apiserver.crt"
	SelfSignedKeyFile  = "apiserver.key"
)

// SelfSignedServing makes sure certDir holds a serving certificate for the
// apiserver when no --tls-cert-file was given, and returns its paths. The
// certificate is self-signed and names localhost, 127.0.0.1, ::1, this
// machine's hostname and hosts. A pair that is present and still valid is
// reused; a self-signed one whose names differ is replaced; a CA-signed one
// (put there on purpose, e.g. by WriteClusterPKI) is never overwritten
// unless it has expired or is broken.
func SelfSignedServing(certDir string, hosts []string, opts ...Option) (certPath, keyPath string, err error) {
	s := newSettings(opts)
	certPath, keyPath = filepath.Join(certDir, SelfSignedCertFile), filepath.Join(certDir, SelfSignedKeyFile)

	all := append([]string{"localhost", "127.0.0.1", "::1"}, hosts...)
	if name, err := os.Hostname(); err == nil {
		all = append(all, name)
	}
	dns, ips := splitHosts(all)

	reason, err := servingReuseProblem(certPath, keyPath, dns, ips, s)
	if err != nil {
		return "", "", err
	}
	if reason == "" {
		return certPath, keyPath, nil
	}

	kp, err := newSelfSigned(dns, ips, s)
	if err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(keyPath, kp.KeyPEM, privateMode); err != nil {
		return "", "", fmt.Errorf("self-signed serving certificate: %w", err)
	}
	if err := writeFileAtomic(certPath, kp.CertPEM, publicMode); err != nil {
		return "", "", fmt.Errorf("self-signed serving certificate: %w", err)
	}
	s.logger.Info("wrote self-signed serving certificate", "cert", certPath, "reason", reason, "dnsNames", dns, "ips", ips)
	return certPath, keyPath, nil
}

// servingReuseProblem returns "" when the pair on disk can be served as is.
func servingReuseProblem(certPath, keyPath string, dns []string, ips []net.IP, s settings) (string, error) {
	certData, certErr := os.ReadFile(certPath)
	keyData, keyErr := os.ReadFile(keyPath)
	if errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist) {
		return "absent", nil
	}
	if certErr != nil && !errors.Is(certErr, os.ErrNotExist) {
		return "", fmt.Errorf("self-signed serving certificate: %w", certErr)
	}
	if keyErr != nil && !errors.Is(keyErr, os.ErrNotExist) {
		return "", fmt.Errorf("self-signed serving certificate: %w", keyErr)
	}
	if certErr != nil || keyErr != nil {
		return "certificate or key missing", nil
	}
	cert, err := ParseCertPEM(certData)
	if err != nil {
		return "unreadable certificate", nil
	}
	key, err := ParseKeyPEM(keyData)
	if err != nil {
		return "unreadable key", nil
	}
	if !publicKeyMatches(key, cert.PublicKey) {
		return "key does not match certificate", nil
	}
	if reason := renewalDue(cert, s.clock.Now()); reason != "" {
		return reason, nil
	}
	if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) && len(cert.ExtKeyUsage) > 0 {
		return "not a serving certificate", nil
	}
	// CheckSignatureFrom would insist that the parent be a CA; a self-signed
	// leaf is recognised by its own key verifying its signature.
	selfSigned := bytes.Equal(cert.RawIssuer, cert.RawSubject) &&
		cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature) == nil
	if selfSigned && (!sameSet(cert.DNSNames, dns) || !sameIPs(cert.IPAddresses, ips)) {
		return "subject alternative names changed", nil
	}
	return "", nil
}

func newSelfSigned(dns []string, ips []net.IP, s settings) (*KeyPair, error) {
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
		Subject:               pkix.Name{CommonName: "kube-lite-apiserver@" + now.UTC().Format("20060102T150405Z")},
		DNSNames:              dns,
		IPAddresses:           ips,
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(DefaultValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create self-signed serving certificate: %w", err)
	}
	return newKeyPair(der, key)
}
