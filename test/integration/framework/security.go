package framework

import (
	"context"
	"crypto/rsa"
	"crypto/tls"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authn"
	"github.com/kube-lite/kube-lite/pkg/pki"
)

// ViewerToken is the static token of user "viewer", bound to the view
// ClusterRole by WithSecurity.
const ViewerToken = "viewer-token"

// Security turns on client-certificate, token and service-account
// authentication and Node,RBAC authorization, on a PKI written by
// pki.WriteClusterPKI. Set Configure and Nodes before starting the server;
// StartAPIServer fills in the rest.
type Security struct {
	// Configure adjusts the options before the server starts (more modes,
	// webhooks, an ABAC file).
	Configure func(o *apiserver.SecurityOptions)
	// Nodes get kubeconfigs (system:node:<name>); default n1 and n2.
	Nodes []string

	// Dir holds the PKI; Layout names its files.
	Dir    string
	Layout pki.Layout
	CA     *pki.CA
	// URL is the server's base URL.
	URL string
	// Admin is in system:masters; Viewer (token ViewerToken) has the view
	// ClusterRole; Anonymous carries no credentials.
	Admin, Viewer, Anonymous *rest.Config
	// NodeConfigs has one config per node in Nodes.
	NodeConfigs map[string]*rest.Config
	// Scheduler and ControllerManager are the components' identities
	// (system:kube-scheduler, system:kube-controller-manager).
	Scheduler, ControllerManager *rest.Config
	// ServiceAccountKey signs service-account tokens the server accepts,
	// with issuer Issuer and audience Issuer.
	ServiceAccountKey *rsa.PrivateKey
	Issuer            string
	// Options are the options the server runs with.
	Options apiserver.SecurityOptions
}

// WithSecurity turns on authentication and authorization; sec receives the
// credentials. Server.Config is then the admin's.
func WithSecurity(sec *Security) Option {
	return func(s *settings) { s.security = sec }
}

func (sec *Security) prepare(t testing.TB) *apiserver.SecurityOptions {
	t.Helper()
	if len(sec.Nodes) == 0 {
		sec.Nodes = []string{"n1", "n2"}
	}
	sec.Dir = t.TempDir()
	sec.Layout = pki.Layout(sec.Dir)
	if _, err := pki.WriteClusterPKI(context.Background(), sec.Dir, pki.Options{APIServerURL: "https://127.0.0.1:6443", Nodes: sec.Nodes},
		pki.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))); err != nil {
		t.Fatalf("write PKI: %v", err)
	}
	ca, err := pki.LoadCA(sec.Dir, pki.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatalf("load CA: %v", err)
	}
	sec.CA = ca
	tokens := filepath.Join(sec.Dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(ViewerToken+",viewer,viewer-uid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if sec.ServiceAccountKey, err = authn.LoadSigningKey(sec.Layout.ServiceAccountKey()); err != nil {
		t.Fatal(err)
	}
	o := apiserver.NewSecurityOptions()
	o.ClientCAFile = sec.Layout.CACert()
	o.TokenAuthFile = tokens
	o.ServiceAccountKeyFiles = []string{sec.Layout.ServiceAccountPublicKey()}
	o.ServiceAccountSigningKeyFile = sec.Layout.ServiceAccountKey()
	if sec.Configure != nil {
		sec.Configure(&o)
	}
	sec.Issuer = o.ServiceAccountIssuers[0]
	sec.Options = o
	return &sec.Options
}

func (sec *Security) serverTLS(t testing.TB) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(sec.Layout.APIServerCert(), sec.Layout.APIServerKey())
	if err != nil {
		t.Fatalf("serving certificate: %v", err)
	}
	// As the real server: request a certificate, let the authenticator verify it.
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, ClientCAs: sec.CA.CertPool()}
}

func (sec *Security) finish(t testing.TB, url string) *rest.Config {
	t.Helper()
	sec.URL = url
	sec.Admin = sec.kubeconfig(t, sec.Layout.AdminKubeconfig())
	sec.NodeConfigs = map[string]*rest.Config{}
	for _, n := range sec.Nodes {
		sec.NodeConfigs[n] = sec.kubeconfig(t, sec.Layout.NodeKubeconfig(n))
	}
	sec.Scheduler = sec.kubeconfig(t, sec.Layout.SchedulerKubeconfig())
	sec.ControllerManager = sec.kubeconfig(t, sec.Layout.ControllerManagerKubeconfig())
	sec.Anonymous = sec.base()
	sec.Viewer = sec.TokenConfig(ViewerToken)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(sec.Admin)
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind viewer: %v", err)
	}
	// RBAC follows bindings through a watch: wait until it has this one.
	WaitAllowed(t, sec.Viewer, &authzv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "default"})
	return sec.Admin
}

func (sec *Security) base() *rest.Config {
	return &rest.Config{Host: sec.URL, TLSClientConfig: rest.TLSClientConfig{CAData: sec.CA.CertPEM}, QPS: 1000, Burst: 2000}
}

func (sec *Security) kubeconfig(t testing.TB, path string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", path, err)
	}
	cfg.Host, cfg.QPS, cfg.Burst = sec.URL, 1000, 2000
	return cfg
}

// TokenConfig reaches the server with a bearer token.
func (sec *Security) TokenConfig(token string) *rest.Config {
	c := sec.base()
	c.BearerToken = token
	return c
}

// CertConfig reaches the server with a new client certificate for user in groups.
func (sec *Security) CertConfig(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()
	kp, err := pki.IssueCert(sec.CA, pki.CertSpec{CommonName: user, Organizations: groups, Usages: []pki.Usage{pki.UsageClient}})
	if err != nil {
		t.Fatal(err)
	}
	c := sec.base()
	c.CertData, c.KeyData = kp.CertPEM, kp.KeyPEM
	return c
}

// WaitAllowed waits until the user of cfg may do what ra describes, as its
// SelfSubjectAccessReview answers: policy changes reach the authorizers
// through watches, a moment after the write.
func WaitAllowed(t testing.TB, cfg *rest.Config, ra *authzv1.ResourceAttributes) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra}}, metav1.CreateOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		return r.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("never allowed to %+v: %v (last error %v)", ra, err, last)
	}
}
