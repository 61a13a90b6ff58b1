package authn

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

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
}

// AuthenticateRequest implements Request.
func (a *X509) AuthenticateRequest(r *http.Request) (*request.User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	certs := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{
		Roots:         a.Roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if a.Clock != nil {
		opts.CurrentTime = a.Clock.Now()
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying certificate %s: %w", describe(certs[0]), err)
	}
	cn := certs[0].Subject.CommonName
	if cn == "" {
		return nil, false, errors.New("client certificate has no common name")
	}
	return &request.User{Name: cn, Groups: append([]string(nil), certs[0].Subject.Organization...)}, true, nil
}

func describe(c *x509.Certificate) string {
	return fmt.Sprintf("CN=%q issued by %q", c.Subject.CommonName, c.Issuer.CommonName)
}
