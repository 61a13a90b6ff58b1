package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
)

// Usage is what a certificate is for in TLS.
type Usage string

const (
	// UsageServer marks a serving certificate (ExtKeyUsageServerAuth).
	UsageServer Usage = "server"
	// UsageClient marks a client certificate (ExtKeyUsageClientAuth).
	UsageClient Usage = "client"
)

// DefaultValidity is the lifetime of an issued certificate unless the spec
// says otherwise; re-running WriteClusterPKI renews certificates before the end.
const DefaultValidity = 365 * 24 * time.Hour

// CertSpec describes a certificate to issue. Kubernetes authenticates a client
// certificate as user CommonName in groups Organizations.
type CertSpec struct {
	CommonName    string
	Organizations []string
	DNSNames      []string
	IPs           []net.IP
	Usages        []Usage
	// Validity is the lifetime; zero means DefaultValidity. It is capped at
	// the CA's own expiry.
	Validity time.Duration
}

// KeyPair is a certificate and its private key, parsed and as PEM.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// IssueCert creates a new ECDSA P-256 key and a certificate for it signed by ca.
func IssueCert(ca *CA, spec CertSpec) (*KeyPair, error) {
	if spec.CommonName == "" {
		return nil, fmt.Errorf("issue certificate: empty common name")
	}
	extUsages, err := extKeyUsages(spec.Usages)
	if err != nil {
		return nil, fmt.Errorf("issue certificate %q: %w", spec.CommonName, err)
	}
	key, err := newECDSAKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	validity := spec.Validity
	if validity <= 0 {
		validity = DefaultValidity
	}
	now := ca.clock.Now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		// A leaf outliving its CA would fail verification anyway.
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.CommonName, Organization: spec.Organizations},
		DNSNames:              spec.DNSNames,
		IPAddresses:           spec.IPs,
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           extUsages,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("issue certificate %q: %w", spec.CommonName, err)
	}
	return newKeyPair(der, key)
}

func newKeyPair(der []byte, key crypto.Signer) (*KeyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse issued certificate: %w", err)
	}
	keyPEM, err := EncodeKeyPEM(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: key, CertPEM: EncodeCertPEM(cert), KeyPEM: keyPEM}, nil
}

func extKeyUsages(usages []Usage) ([]x509.ExtKeyUsage, error) {
	if len(usages) == 0 {
		return nil, fmt.Errorf("no usages (want %q and/or %q)", UsageServer, UsageClient)
	}
	var out []x509.ExtKeyUsage
	for _, u := range usages {
		var eku x509.ExtKeyUsage
		switch u {
		case UsageServer:
			eku = x509.ExtKeyUsageServerAuth
		case UsageClient:
			eku = x509.ExtKeyUsageClientAuth
		default:
			return nil, fmt.Errorf("unknown usage %q (want %q or %q)", u, UsageServer, UsageClient)
		}
		if !slices.Contains(out, eku) {
			out = append(out, eku)
		}
	}
	return out, nil
}

// mismatch explains why an existing key pair cannot be kept for spec, or
// returns "" when it can: it is signed by ca, valid now and outside its
// renewal window, and names exactly the subject, SANs and usages asked for.
func mismatch(kp *KeyPair, ca *CA, spec CertSpec) string {
	cert := kp.Cert
	if !publicKeyMatches(kp.Key, cert.PublicKey) {
		return "key does not match certificate"
	}
	now := ca.clock.Now()
	if reason := renewalDue(cert, now); reason != "" {
		return reason
	}
	wantEKU, err := extKeyUsages(spec.Usages)
	if err != nil {
		return err.Error()
	}
	if _, err := cert.Verify(x509.VerifyOptions{
		Roots:       ca.CertPool(),
		CurrentTime: now,
		KeyUsages:   wantEKU,
	}); err != nil {
		return "not valid under the cluster CA: " + err.Error()
	}
	if !sameSet(cert.ExtKeyUsage, wantEKU) {
		return "usages changed"
	}
	if cert.Subject.CommonName != spec.CommonName || !sameSet(cert.Subject.Organization, spec.Organizations) {
		return "subject changed"
	}
	if !sameSet(cert.DNSNames, spec.DNSNames) || !sameIPs(cert.IPAddresses, spec.IPs) {
		return "subject alternative names changed"
	}
	return ""
}

// renewalDue reports a reason to replace cert at now: not yet valid, expired,
// or in the last tenth of its lifetime, so a periodic re-run renews in time.
func renewalDue(cert *x509.Certificate, now time.Time) string {
	if now.Before(cert.NotBefore) {
		return "not valid yet"
	}
	if !now.Before(cert.NotAfter) {
		return "expired"
	}
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	if cert.NotAfter.Sub(now) < lifetime/10 {
		return "expires soon"
	}
	return ""
}

func sameSet[T comparable](a, b []T) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

func sameIPs(a, b []net.IP) bool {
	key := func(ips []net.IP) []string {
		out := make([]string, 0, len(ips))
		for _, ip := range ips {
			out = append(out, ip.String())
		}
		return out
	}
	return sameSet(key(a), key(b))
}

// splitHosts sorts host names and addresses into certificate SANs, dropping
// duplicates and empty entries.
func splitHosts(hosts []string) (dns []string, ips []net.IP) {
	seen := map[string]bool{}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !seen[ip.String()] {
				seen[ip.String()] = true
				ips = append(ips, ip)
			}
			continue
		}
		h = strings.ToLower(h)
		if !seen[h] {
			seen[h] = true
			dns = append(dns, h)
		}
	}
	return dns, ips
}
