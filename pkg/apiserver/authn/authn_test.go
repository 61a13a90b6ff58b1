package authn

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
	"github.com/kube-lite/kube-lite/pkg/pki"
)

func TestParseTokenCSV(t *testing.T) {
	tf, err := ParseTokenCSV(strings.NewReader(`# token,user,uid,groups
abc,alice,1,"dev,ops"
def, bob ,2

ghi,carl,3,
`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		token  string
		ok     bool
		name   string
		groups []string
	}{
		{"abc", true, "alice", []string{"dev", "ops"}},
		{"def", true, "bob", nil},
		{"ghi", true, "carl", nil},
		{"ab", false, "", nil},
		{"abcd", false, "", nil},
	}
	for _, tc := range cases {
		u, ok, err := tf.AuthenticateToken(context.Background(), tc.token)
		if err != nil || ok != tc.ok {
			t.Fatalf("%s: ok=%v err=%v", tc.token, ok, err)
		}
		if ok && (u.Name != tc.name || !slices.Equal(u.Groups, tc.groups)) {
			t.Errorf("%s: %+v", tc.token, u)
		}
	}
	for name, in := range map[string]string{
		"too few fields":  "abc,alice\n",
		"empty user":      "abc,,1\n",
		"duplicate token": "abc,a,1\nabc,b,2\n",
	} {
		if _, err := ParseTokenCSV(strings.NewReader(in)); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

type staticToken map[string]*request.User

func (s staticToken) AuthenticateToken(_ context.Context, tok string) (*request.User, bool, error) {
	if tok == "broken" {
		return nil, false, errors.New("cannot tell")
	}
	u, ok := s[tok]
	return u, ok, nil
}

func TestBearerAndUnion(t *testing.T) {
	u := Union{BearerToken{staticToken{"good": {Name: "g", Groups: []string{"x"}}}}}
	cases := []struct {
		header  string
		ok      bool
		wantErr bool
	}{
		{"", false, false},
		{"Basic YWxpY2U6cHc=", false, false},
		{"Bearer good", true, false},
		{"bearer   good", true, false},
		{"Bearer bad", false, true},
		{"Bearer broken", false, true},
		{"Bearer ", false, false},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		user, ok, err := u.AuthenticateRequest(r)
		if ok != tc.ok || (err != nil) != tc.wantErr {
			t.Errorf("%q: ok=%v err=%v", tc.header, ok, err)
			continue
		}
		if ok && !slices.Equal(user.Groups, []string{"x", AllAuthenticated}) {
			t.Errorf("%q: groups %v, want x and %s", tc.header, user.Groups, AllAuthenticated)
		}
	}
}

func TestX509(t *testing.T) {
	now := time.Now()
	ca, err := pki.EnsureCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.EnsureCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ca *pki.CA, spec pki.CertSpec) []*x509.Certificate {
		kp, err := pki.IssueCert(ca, spec)
		if err != nil {
			t.Fatal(err)
		}
		return []*x509.Certificate{kp.Cert}
	}
	client := pki.CertSpec{CommonName: "alice", Organizations: []string{"dev", "ops"}, Usages: []pki.Usage{pki.UsageClient}}
	clk := clocktesting.NewFakePassiveClock(now)
	a := &X509{Roots: ca.CertPool(), Clock: clk}
	late := &X509{Roots: ca.CertPool(), Clock: clocktesting.NewFakePassiveClock(now.Add(2 * pki.DefaultValidity))}
	cases := []struct {
		name    string
		a       *X509
		certs   []*x509.Certificate
		ok      bool
		wantErr bool
	}{
		{"no certificate", a, nil, false, false},
		{"client certificate", a, issue(ca, client), true, false},
		{"another CA", a, issue(other, client), false, true},
		{"serving-only certificate", a, issue(ca, pki.CertSpec{CommonName: "srv", Usages: []pki.Usage{pki.UsageServer}}), false, true},
		{"expired", late, issue(ca, client), false, true},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: tc.certs}
		u, ok, err := tc.a.AuthenticateRequest(r)
		if ok != tc.ok || (err != nil) != tc.wantErr {
			t.Errorf("%s: ok=%v err=%v", tc.name, ok, err)
			continue
		}
		if ok && (u.Name != "alice" || !slices.Equal(u.Groups, []string{"dev", "ops"})) {
			t.Errorf("%s: %+v", tc.name, u)
		}
	}

	// A remembered verification still ends when the certificate expires.
	certs := issue(ca, client)
	r := httptest.NewRequest(http.MethodGet, "/api", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: certs}
	for i, at := range []time.Time{now, now.Add(time.Hour), certs[0].NotAfter.Add(time.Second)} {
		clk.SetTime(at)
		_, ok, err := a.AuthenticateRequest(r)
		if want := i < 2; ok != want {
			t.Errorf("request %d at %s: ok=%v err=%v, want ok=%v", i, at, ok, err, want)
		}
	}
}

// objects is a fake store of bound objects: kind/ns/name -> uid.
type objects map[string]string

func (o objects) get(kind, ns, name string) (string, bool, error) {
	uid, ok := o[kind+"/"+ns+"/"+name]
	return uid, ok, nil
}
func (o objects) ServiceAccountUID(_ context.Context, ns, name string) (string, bool, error) {
	return o.get("sa", ns, name)
}
func (o objects) PodUID(_ context.Context, ns, name string) (string, bool, error) {
	return o.get("pod", ns, name)
}
func (o objects) SecretUID(_ context.Context, ns, name string) (string, bool, error) {
	return o.get("secret", ns, name)
}

func TestServiceAccountTokens(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	const iss = "https://kubernetes.default.svc"
	signer := &Signer{Key: key, Issuer: iss, Clock: clk}
	objs := objects{"sa/ns/bot": "sa-uid", "pod/ns/p": "pod-uid"}
	v := &ServiceAccountTokens{Keys: []*rsa.PublicKey{&key.PublicKey}, Issuers: []string{iss}, Audiences: []string{iss, "api"}, Objects: objs, Clock: clk}

	issue := func(req TokenRequest) string {
		tok, _, err := signer.Issue(req)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	sign := func(k *rsa.PrivateKey, mutate func(*Claims)) string {
		c := Claims{Issuer: iss, Subject: "system:serviceaccount:ns:bot", Audience: []string{iss}, Expiry: now.Add(time.Hour).Unix(),
			NotBefore: now.Unix(), IssuedAt: now.Unix(), Private: Private{Namespace: "ns", ServiceAccount: ObjectRef{Name: "bot", UID: "sa-uid"}}}
		mutate(&c)
		tok, err := SignJWT(k, c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	bot := ObjectRef{Name: "bot", UID: "sa-uid"}
	cases := []struct {
		name    string
		token   string
		ok      bool
		wantErr string
	}{
		{"issued token", issue(TokenRequest{Namespace: "ns", ServiceAccount: bot}), true, ""},
		{"other accepted audience", issue(TokenRequest{Namespace: "ns", ServiceAccount: bot, Audiences: []string{"api"}}), true, ""},
		{"bound to a live pod", issue(TokenRequest{Namespace: "ns", ServiceAccount: bot, Pod: &ObjectRef{Name: "p", UID: "pod-uid"}}), true, ""},
		{"not a JWT", "abc", false, ""},
		{"another issuer is not ours", sign(key, func(c *Claims) { c.Issuer = "https://other" }), false, ""},
		{"signed by another key", sign(otherKey, func(*Claims) {}), false, "signature"},
		{"expired", sign(key, func(c *Claims) { c.Expiry = now.Add(-2 * time.Minute).Unix() }), false, "expired"},
		{"within the leeway", sign(key, func(c *Claims) { c.Expiry = now.Add(-30 * time.Second).Unix() }), true, ""},
		{"not yet valid", sign(key, func(c *Claims) { c.NotBefore = now.Add(time.Hour).Unix() }), false, "not valid yet"},
		{"wrong audience", sign(key, func(c *Claims) { c.Audience = []string{"vault"} }), false, "audience"},
		{"subject mismatch", sign(key, func(c *Claims) { c.Subject = "system:serviceaccount:ns:admin" }), false, "subject"},
		{"deleted service account", sign(key, func(c *Claims) { c.Private.ServiceAccount.Name = "gone"; c.Subject = "system:serviceaccount:ns:gone" }), false, "deleted"},
		{"recreated service account", sign(key, func(c *Claims) { c.Private.ServiceAccount.UID = "old-uid" }), false, "recreated"},
		{"deleted pod", issue(TokenRequest{Namespace: "ns", ServiceAccount: bot, Pod: &ObjectRef{Name: "q", UID: "q-uid"}}), false, "deleted"},
		{"deleted secret", issue(TokenRequest{Namespace: "ns", ServiceAccount: bot, Secret: &ObjectRef{Name: "s", UID: "s-uid"}}), false, "deleted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, err := v.AuthenticateToken(context.Background(), tc.token)
			if ok != tc.ok {
				t.Fatalf("ok=%v err=%v, want ok=%v", ok, err, tc.ok)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err=%v, want one mentioning %q", err, tc.wantErr)
			}
			if ok {
				if u.Name != "system:serviceaccount:ns:bot" || u.UID != "sa-uid" || !slices.Equal(u.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:ns"}) {
					t.Fatalf("user %+v", u)
				}
			}
		})
	}
}
