package security_test

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// webhookKubeconfig writes a kubeconfig naming srv's URL + path, trusting
// its certificate, as --*-webhook-config-file expects.
func webhookKubeconfig(t *testing.T, srv *httptest.Server, path string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["webhook"] = &clientcmdapi.Cluster{Server: srv.URL + path,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	cfg.AuthInfos["apiserver"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "webhook", AuthInfo: "apiserver"}
	cfg.CurrentContext = "webhook"
	file := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestABACPolicyDecides(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.jsonl")
	lines := `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"default","resource":"configmaps","apiGroup":"*","readonly":true}}
# alice may also read any path
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice","nonResourcePath":"*","readonly":true}}
`
	if err := os.WriteFile(policy, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	_, sec := startSecure(t, func(sec *framework.Security) {
		sec.Configure = func(o *apiserver.SecurityOptions) {
			o.AuthorizationModes = []string{apiserver.ModeNode, apiserver.ModeRBAC, apiserver.ModeABAC}
			o.AuthorizationPolicyFile = policy
		}
	})
	ctx := ctxT(t)
	alice := client(t, sec.CertConfig(t, "alice"))
	_, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	wantStatus(t, "alice lists configmaps in default", err, 200, "")
	_, err = alice.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
	wantStatus(t, "alice lists configmaps in kube-system", err, 403, metav1.StatusReasonForbidden)
	_, err = alice.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	st := wantStatus(t, "alice creates a configmap (readonly policy)", err, 403, metav1.StatusReasonForbidden)
	if want := `configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "default": No policy matched.`; st.Message != want {
		t.Fatalf("message\n got %s\nwant %s", st.Message, want)
	}
	bob := client(t, sec.CertConfig(t, "bob"))
	_, err = bob.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	wantStatus(t, "bob lists configmaps", err, 403, metav1.StatusReasonForbidden)
}

// sarServer answers SubjectAccessReviews: bob may get configmaps, mallory
// may not touch pods, anything else gets no opinion.
func sarServer(t *testing.T, calls *atomic.Int32) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var sar authzv1.SubjectAccessReview
		if r.URL.Path != "/authorize" || json.NewDecoder(r.Body).Decode(&sar) != nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		ra := sar.Spec.ResourceAttributes
		switch {
		case sar.Spec.User == "mallory" && ra != nil && ra.Resource == "pods":
			sar.Status = authzv1.SubjectAccessReviewStatus{Denied: true, Reason: "mallory is banned"}
		case sar.Spec.User == "bob" && ra != nil && ra.Verb == "get" && ra.Resource == "configmaps":
			sar.Status = authzv1.SubjectAccessReviewStatus{Allowed: true}
		}
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWebhookAuthorizerDecides(t *testing.T) {
	var calls atomic.Int32
	hook := sarServer(t, &calls)
	kc := webhookKubeconfig(t, hook, "/authorize")
	s, sec := startSecure(t, func(sec *framework.Security) {
		sec.Configure = func(o *apiserver.SecurityOptions) {
			// The webhook before RBAC: its Deny wins over RBAC's grant.
			o.AuthorizationModes = []string{apiserver.ModeNode, apiserver.ModeWebhook, apiserver.ModeRBAC}
			o.AuthorizationWebhookConfigFile = kc
		}
	})
	ctx := ctxT(t)
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mallory-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}},
	}
	if _, err := s.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC (view) lets mallory read configmaps, on which the webhook has no opinion.
	malloryCfg := sec.CertConfig(t, "mallory")
	framework.WaitAllowed(t, malloryCfg, &authzv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "default"})

	bob := client(t, sec.CertConfig(t, "bob"))
	_, err := bob.CoreV1().ConfigMaps("default").Get(ctx, "c", metav1.GetOptions{})
	wantStatus(t, "webhook allows bob to get a configmap", err, 200, "")
	err = bob.CoreV1().ConfigMaps("default").Delete(ctx, "c", metav1.DeleteOptions{})
	wantStatus(t, "no opinion from the webhook or RBAC for bob's delete", err, 403, metav1.StatusReasonForbidden)

	mallory := client(t, malloryCfg)
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: "mallory",
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "default"}}}
	r, err := s.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil || r.Status.Allowed || !r.Status.Denied {
		t.Fatalf("review of mallory: %v %+v", err, r)
	}
	_, err = mallory.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	st := wantStatus(t, "webhook denies mallory what RBAC grants", err, 403, metav1.StatusReasonForbidden)
	if want := `pods is forbidden: User "mallory" cannot list resource "pods" in API group "" in the namespace "default": mallory is banned`; st.Message != want {
		t.Fatalf("message\n got %s\nwant %s", st.Message, want)
	}
	if calls.Load() == 0 {
		t.Fatal("the webhook was never called")
	}
}

func TestWebhookTokenAuthentication(t *testing.T) {
	var calls atomic.Int32
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var tr authnv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		if tr.Spec.Token == "sso-token" {
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true,
				User: authnv1.UserInfo{Username: "dana@example.com", UID: "42", Groups: []string{"sso:admins"}}}
		}
		_ = json.NewEncoder(w).Encode(&tr)
	}))
	t.Cleanup(hook.Close)
	kc := webhookKubeconfig(t, hook, "/tokenreview")
	_, sec := startSecure(t, func(sec *framework.Security) {
		sec.Configure = func(o *apiserver.SecurityOptions) { o.TokenWebhookConfigFile = kc }
	})
	ctx := ctxT(t)
	dana := client(t, sec.TokenConfig("sso-token"))
	for i := 0; i < 2; i++ {
		who, err := dana.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("whoami: %v", err)
		}
		u := who.Status.UserInfo
		if u.Username != "dana@example.com" || u.UID != "42" || !contains(u.Groups, "sso:admins") || !contains(u.Groups, "system:authenticated") {
			t.Fatalf("whoami: %+v", u)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("webhook called %d times for two requests with one token, want 1 (cached)", n)
	}
	_, err := client(t, sec.TokenConfig("stolen")).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	wantStatus(t, "a token the webhook rejects", err, 401, metav1.StatusReasonUnauthorized)
}
