package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-lite/kube-lite/pkg/pki"
)

type noPods struct{}

func (noPods) Pods() []*v1.Pod { return nil }
func (noPods) ContainerLog(context.Context, string, string, string, bool) (string, func() bool, error) {
	return "", nil, ErrNotFound
}
func (noPods) Healthy() error { return nil }

// onlyAdmins allows users in system:masters.
type onlyAdmins struct{}

func (onlyAdmins) Authorize(_ context.Context, _ string, groups []string, _, _ string) (bool, string, error) {
	for _, g := range groups {
		if g == "system:masters" {
			return true, "", nil
		}
	}
	return false, "", nil
}

func TestAPIAuthenticatesAndAuthorizes(t *testing.T) {
	ca, err := pki.EnsureCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.EnsureCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ca *pki.CA, cn string, orgs ...string) *tls.Certificate {
		kp, err := pki.IssueCert(ca, pki.CertSpec{CommonName: cn, Organizations: orgs, Usages: []pki.Usage{pki.UsageClient}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srv := httptest.NewUnstartedServer((&Server{Provider: noPods{}, RequireClientCert: true, Authorizer: onlyAdmins{}}).Handler())
	srv.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()

	tests := []struct {
		name string
		cert *tls.Certificate
		path string
		want int
	}{
		{"healthz needs nothing", nil, "/healthz", http.StatusOK},
		{"anonymous", nil, "/pods", http.StatusUnauthorized},
		// The TLS handshake itself refuses it (want 0: no HTTP answer).
		{"certificate of another CA", issue(other, "admin", "system:masters"), "/pods", 0},
		{"user without rights", issue(ca, "jane"), "/pods", http.StatusForbidden},
		{"user without rights, metrics", issue(ca, "jane"), "/metrics", http.StatusForbidden},
		{"apiserver's kubelet client", issue(ca, "kube-apiserver-kubelet-client", "system:masters"), "/pods", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := srv.Client().Transport.(*http.Transport).Clone()
			if tc.cert != nil {
				tr.TLSClientConfig.Certificates = []tls.Certificate{*tc.cert}
			}
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(srv.URL + tc.path)
			if tc.want == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("GET %s: %d, want the handshake refused", tc.path, resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.want)
			}
		})
	}
}

func TestSARAuthorizerAsksOnceAndRemembers(t *testing.T) {
	cs := fake.NewClientset()
	var asked []authorizationv1.SubjectAccessReviewSpec
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		asked = append(asked, sar.Spec)
		sar.Status.Allowed = sar.Spec.User == "ops"
		return true, sar, nil
	})
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	z := &SARAuthorizer{Client: cs, Node: "n1", Clock: clk, AllowTTL: time.Minute, DenyTTL: 10 * time.Second}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if ok, _, err := z.Authorize(ctx, "ops", nil, "get", "proxy"); err != nil || !ok {
			t.Fatalf("ops: %v %v", ok, err)
		}
		if ok, _, err := z.Authorize(ctx, "jane", nil, "get", "proxy"); err != nil || ok {
			t.Fatalf("jane: %v %v", ok, err)
		}
	}
	if len(asked) != 2 {
		t.Fatalf("asked %d times, want 2 (answers remembered)", len(asked))
	}
	if ra := asked[0].ResourceAttributes; ra.Resource != "nodes" || ra.Subresource != "proxy" || ra.Name != "n1" || ra.Verb != "get" {
		t.Fatalf("asked about %+v", ra)
	}
	clk.SetTime(clk.Now().Add(11 * time.Second))
	_, _, _ = z.Authorize(ctx, "jane", nil, "get", "proxy")
	_, _, _ = z.Authorize(ctx, "ops", nil, "get", "proxy")
	if len(asked) != 3 {
		t.Fatalf("asked %d times, want 3: the denial expired, the allowance did not", len(asked))
	}
}

func TestSARAuthorizerForgetsExpiredAnswers(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = true
		return true, sar, nil
	})
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	z := &SARAuthorizer{Client: cs, Node: "n1", Clock: clk, AllowTTL: time.Minute, DenyTTL: 10 * time.Second}
	ctx := context.Background()
	// Every caller is another identity (a token per pod, say), each
	// remembered for a minute; over hours the kubelet must not keep them all.
	for i := range 5 * maxSARAnswers {
		if i%100 == 0 {
			clk.SetTime(clk.Now().Add(10 * time.Second))
		}
		if ok, _, err := z.Authorize(ctx, fmt.Sprintf("system:serviceaccount:ns:sa-%d", i), nil, "get", "proxy"); err != nil || !ok {
			t.Fatalf("caller %d: %v %v", i, ok, err)
		}
	}
	z.mu.Lock()
	n := len(z.cache)
	z.mu.Unlock()
	if n > maxSARAnswers {
		t.Fatalf("%d answers remembered, want at most %d", n, maxSARAnswers)
	}
}
