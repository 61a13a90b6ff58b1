package security_test

import (
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authn"
	"github.com/kube-lite/kube-lite/pkg/pki"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func saToken(t *testing.T, sec *framework.Security, mutate func(c *authn.Claims)) string {
	t.Helper()
	now := time.Now()
	c := authn.Claims{
		Issuer: sec.Issuer, Subject: "system:serviceaccount:default:robot", Audience: []string{sec.Issuer},
		Expiry: now.Add(time.Hour).Unix(), NotBefore: now.Unix(), IssuedAt: now.Unix(),
		Private: authn.Private{Namespace: "default", ServiceAccount: authn.ObjectRef{Name: "robot"}},
	}
	if mutate != nil {
		mutate(&c)
	}
	tok, err := authn.SignJWT(sec.ServiceAccountKey, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestAuthentication(t *testing.T) {
	s, sec := startSecure(t, nil)
	ctx := ctxT(t)
	if _, err := s.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	foreignCA, err := pki.EnsureCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := pki.IssueCert(foreignCA, pki.CertSpec{CommonName: "kubernetes-admin", Organizations: []string{"system:masters"}, Usages: []pki.Usage{pki.UsageClient}})
	if err != nil {
		t.Fatal(err)
	}
	foreignCert := sec.TokenConfig("")
	foreignCert.CertData, foreignCert.KeyData = foreign.CertPEM, foreign.KeyPEM

	cases := []struct {
		name   string
		cfg    *rest.Config
		code   int32
		reason metav1.StatusReason
	}{
		{"no credentials", sec.Anonymous, 401, metav1.StatusReasonUnauthorized},
		{"certificate from another CA", foreignCert, 401, metav1.StatusReasonUnauthorized},
		{"unknown static token", sec.TokenConfig("nope"), 401, metav1.StatusReasonUnauthorized},
		{"expired service account token", sec.TokenConfig(saToken(t, sec, func(c *authn.Claims) {
			c.Expiry, c.NotBefore, c.IssuedAt = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-3*time.Hour).Unix(), time.Now().Add(-3*time.Hour).Unix()
		})), 401, metav1.StatusReasonUnauthorized},
		{"foreign issuer token", sec.TokenConfig(saToken(t, sec, func(c *authn.Claims) { c.Issuer = "https://issuer.example" })), 401, metav1.StatusReasonUnauthorized},
		{"wrong audience token", sec.TokenConfig(saToken(t, sec, func(c *authn.Claims) { c.Audience = []string{"vault"} })), 401, metav1.StatusReasonUnauthorized},
		{"tampered token", sec.TokenConfig(saToken(t, sec, nil) + "x"), 401, metav1.StatusReasonUnauthorized},
		// Authenticated but without rights: authentication passed.
		{"valid service account token", sec.TokenConfig(saToken(t, sec, nil)), 403, metav1.StatusReasonForbidden},
		{"cluster CA certificate", sec.Admin, 200, ""},
		{"static token", sec.Viewer, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client(t, tc.cfg).CoreV1().Pods("default").List(ctxT(t), metav1.ListOptions{})
			st := wantStatus(t, "list pods", err, tc.code, tc.reason)
			if tc.code == 401 && st.Message != "Unauthorized" {
				t.Fatalf("401 message %q, want Unauthorized", st.Message)
			}
		})
	}
}

func TestHealthWithoutCredentials(t *testing.T) {
	_, sec := startSecure(t, nil)
	hc, err := rest.HTTPClientFor(sec.Anonymous)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/livez": 200, "/readyz": 200, "/healthz": 200, "/version": 200, "/api": 401, "/metrics": 401} {
		resp, err := hc.Get(sec.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without credentials: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestServiceAccountTokenDiesWithItsServiceAccount(t *testing.T) {
	s, sec := startSecure(t, nil)
	ctx := ctxT(t)
	sa, err := s.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A token from TokenRequest, as a kubelet would get one for a pod.
	tr, err := s.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	robot := client(t, sec.TokenConfig(tr.Status.Token))
	who, err := robot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	u := who.Status.UserInfo
	if u.Username != "system:serviceaccount:default:robot" || u.UID != string(sa.UID) {
		t.Fatalf("whoami: %+v", u)
	}
	for _, g := range []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"} {
		if !contains(u.Groups, g) {
			t.Fatalf("groups %v lack %s", u.Groups, g)
		}
	}

	if err := s.Client.CoreV1().ServiceAccounts("default").Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = robot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	wantStatus(t, "whoami after the service account is deleted", err, 401, metav1.StatusReasonUnauthorized)

	// A new account of the same name is another identity: the old token stays dead.
	if _, err := s.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = robot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	wantStatus(t, "whoami after the service account is recreated", err, 401, metav1.StatusReasonUnauthorized)
}

func TestBoundTokenDiesWithItsPod(t *testing.T) {
	s, sec := startSecure(t, nil)
	ctx := ctxT(t)
	ensureServiceAccount(t, s.Client, "default")
	pod, err := s.Client.CoreV1().Pods("default").Create(ctx, boundPod("p", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: pod.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	c := client(t, sec.TokenConfig(tr.Status.Token))
	who, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := who.Status.UserInfo.Extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != "p" {
		t.Fatalf("pod-name extra: %v", who.Status.UserInfo.Extra)
	}
	// An unscheduled pod goes at once.
	if err := s.Client.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	wantStatus(t, "whoami after the pod is deleted", err, 401, metav1.StatusReasonUnauthorized)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestAnonymousRequests(t *testing.T) {
	_, sec := startSecure(t, func(sec *framework.Security) {
		sec.Configure = func(o *apiserver.SecurityOptions) { o.AnonymousAuth = true }
	})
	ctx := ctxT(t)
	anon := client(t, sec.Anonymous)
	_, err := anon.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	st := wantStatus(t, "anonymous lists pods", err, 403, metav1.StatusReasonForbidden)
	if want := `pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "default"`; st.Message != want {
		t.Fatalf("message\n got %s\nwant %s", st.Message, want)
	}
	// Bad credentials are still refused, not treated as anonymous.
	_, err = client(t, sec.TokenConfig("nope")).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	wantStatus(t, "unknown token with anonymous requests on", err, 401, metav1.StatusReasonUnauthorized)
	_, err = anon.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	wantStatus(t, "anonymous whoami (system:basic-user is for authenticated users)", err, 403, metav1.StatusReasonForbidden)
}

func TestTokenReview(t *testing.T) {
	s, _ := startSecure(t, nil)
	ctx := ctxT(t)
	cases := []struct {
		token string
		user  string
	}{
		{framework.ViewerToken, "viewer"},
		{"nope", ""},
	}
	for _, tc := range cases {
		r, err := s.Client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: tc.token}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("review %q: %v", tc.token, err)
		}
		if r.Status.Authenticated != (tc.user != "") || r.Status.User.Username != tc.user {
			t.Fatalf("review %q: %+v", tc.token, r.Status)
		}
		if tc.user != "" && !contains(r.Status.User.Groups, "system:authenticated") {
			t.Fatalf("review %q: groups %v", tc.token, r.Status.User.Groups)
		}
	}
}

func TestImpersonation(t *testing.T) {
	_, sec := startSecure(t, nil)
	ctx := ctxT(t)
	as := func(base *rest.Config, user string, groups ...string) *rest.Config {
		c := rest.CopyConfig(base)
		c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
		return c
	}
	adminAsViewer := client(t, as(sec.Admin, "viewer"))
	who, err := adminAsViewer.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || who.Status.UserInfo.Username != "viewer" || !contains(who.Status.UserInfo.Groups, "system:authenticated") {
		t.Fatalf("whoami as viewer: %v %+v", err, who)
	}
	_, err = adminAsViewer.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	wantStatus(t, "admin as viewer lists pods", err, 200, "")
	_, err = adminAsViewer.CoreV1().Pods("default").Create(ctx, boundPod("p", ""), metav1.CreateOptions{})
	st := wantStatus(t, "admin as viewer creates a pod", err, 403, metav1.StatusReasonForbidden)
	if !strings.Contains(st.Message, `User "viewer" cannot create`) {
		t.Fatalf("message: %s", st.Message)
	}
	_, err = client(t, as(sec.Viewer, "kubernetes-admin", "system:masters")).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	st = wantStatus(t, "viewer impersonates an admin", err, 403, metav1.StatusReasonForbidden)
	if want := `users "kubernetes-admin" is forbidden: User "viewer" cannot impersonate resource "users" in API group "" at the cluster scope`; st.Message != want {
		t.Fatalf("message\n got %s\nwant %s", st.Message, want)
	}
	whoSA, err := client(t, as(sec.Admin, "system:serviceaccount:default:bot")).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || !contains(whoSA.Status.UserInfo.Groups, "system:serviceaccounts:default") {
		t.Fatalf("whoami as a service account: %v %+v", err, whoSA)
	}
}
