package authn

import (
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// X509 authenticates TLS client certificates signed by a CA: the subject's
// CommonName is the user, its Organizations the groups. The TLS server only
// requests certificates (tls.RequestClientCert) and verification happens
// here, so that a certificate from another CA gets an HTTP 401 Status
// rather than a failed handshake, as upstream.
type X509 struct {
	Roots *x509.CertPool
	Clock clock.PassiveClock

	// verified remembers chains that verified, until the earliest expiry in
	// the chain: verifying signatures on every request of a long-lived
	// connection would cost more than serving many requests.
	mu       sync.Mutex
	verified map[[32]byte]verifiedChain
}

type verifiedChain struct {
	user     *request.User
	notAfter time.Time
}

// maxVerified bounds the chain cache; it is emptied when full.
const maxVerified = 4096

// AuthenticateRequest implements Request.
func (a *X509) AuthenticateRequest(r *http.Request) (*request.User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	certs := r.TLS.PeerCertificates
	now := time.Now()
	if a.Clock != nil {
		now = a.Clock.Now()
	}
	h := sha256.New()
	for _, c := range certs {
		h.Write(c.Raw)
	}
	var key [32]byte
	h.Sum(key[:0])
	a.mu.Lock()
	if v, ok := a.verified[key]; ok && now.Before(v.notAfter) {
		a.mu.Unlock()
		u := *v.user
		return &u, true, nil
	}
	a.mu.Unlock()

	opts := x509.VerifyOptions{
		Roots:         a.Roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	opts.CurrentTime = now
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	chains, err := certs[0].Verify(opts)
	if err != nil {
		return nil, false, fmt.Errorf("verifying certificate %s: %w", describe(certs[0]), err)
	}
	cn := certs[0].Subject.CommonName
	if cn == "" {
		return nil, false, errors.New("client certificate has no common name")
	}
	u := &request.User{Name: cn, Groups: append([]string(nil), certs[0].Subject.Organization...)}
	notAfter := certs[0].NotAfter
	for _, c := range chains[0] {
		if c.NotAfter.Before(notAfter) {
			notAfter = c.NotAfter
		}
	}
	a.mu.Lock()
	if a.verified == nil || len(a.verified) >= maxVerified {
		a.verified = map[[32]byte]verifiedChain{}
	}
	a.verified[key] = verifiedChain{user: u, notAfter: notAfter}
	a.mu.Unlock()
	c := *u
	return &c, true, nil
}

func describe(c *x509.Certificate) string {
	return fmt.Sprintf("CN=%q issued by %q", c.Subject.CommonName, c.Issuer.CommonName)
}
