package admission_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// webhookServer answers AdmissionReviews over TLS with respond.
func webhookServer(t *testing.T, respond func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) (*httptest.Server, []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := respond(review.Request)
		resp.UID = review.Request.UID
		review.Request, review.Response = nil, resp
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func podCreateRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
}

// eventually retries create until check accepts its outcome: webhook
// configurations reach the apiserver's admission through a watch, a
// moment after they are written.
func eventually(t *testing.T, what string, create func(ctx context.Context) error, check func(err error) bool) error {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = create(ctx)
		return check(last), nil
	})
	if err != nil {
		t.Fatalf("%s: never happened; last outcome %v", what, last)
	}
	return last
}

func TestMutatingWebhookInjectsSidecar(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "mesh", map[string]string{"sidecar-injection": "enabled"})
	createNamespace(t, s.Client, "plain", nil)
	srv, ca := webhookServer(t, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt,
			Patch: []byte(`[{"op":"add","path":"/spec/containers/-","value":{"name":"proxy","image":"proxy:1","args":["--port=15001"]}}]`)}
	})
	url := srv.URL + "/inject"
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecar-injector"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "inject.mesh.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules:                   podCreateRules(),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"sidecar-injection": "enabled"}},
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := s.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var injected *corev1.Pod
	eventually(t, "dry-run create sees the sidecar", func(ctx context.Context) error {
		p, err := s.Client.CoreV1().Pods("mesh").Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		injected = p
		return err
	}, func(err error) bool { return err == nil && len(injected.Spec.Containers) == 2 })

	if _, err := s.Client.CoreV1().Pods("mesh").Create(ctx, simplePod("app"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored, err := s.Client.CoreV1().Pods("mesh").Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(stored.Spec.Containers); n != 2 || stored.Spec.Containers[1].Name != "proxy" || stored.Spec.Containers[1].Image != "proxy:1" {
		t.Fatalf("stored containers %+v, want app then proxy", stored.Spec.Containers)
	}
	// The injected container is defaulted like one the user wrote.
	if p := stored.Spec.Containers[1]; p.TerminationMessagePath == "" || p.ImagePullPolicy == "" {
		t.Errorf("injected container not defaulted: %+v", p)
	}

	// Outside the selected namespaces nothing is injected.
	if _, err := s.Client.CoreV1().Pods("plain").Create(ctx, simplePod("app"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	plain, err := s.Client.CoreV1().Pods("plain").Get(ctx, "app", metav1.GetOptions{})
	if err != nil || len(plain.Spec.Containers) != 1 {
		t.Fatalf("pod outside the selector: %v, %d containers", err, len(plain.Spec.Containers))
	}
}

func TestWebhookFailurePolicy(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	srv, ca := webhookServer(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	url := srv.URL
	srv.Close() // the webhook is down

	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "policy"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "policy.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules:                   podCreateRules(),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	vwcs := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := vwcs.Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(ctx context.Context) error {
		p := simplePod("")
		p.GenerateName = "p-"
		_, err := s.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		return err
	}
	err := eventually(t, "create refused while the webhook is down", create, func(err error) bool { return err != nil })
	wantStatus(t, err, 500, metav1.StatusReasonInternalError, `failed calling webhook "policy.example.com"`)

	cur, err := vwcs.Get(ctx, "policy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Webhooks[0].FailurePolicy = &ignore
	if _, err := vwcs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "create allowed with failurePolicy Ignore", create, func(err error) bool {
		var st apierrors.APIStatus
		if err != nil && !errors.As(err, &st) {
			t.Fatalf("unexpected error: %v", err)
		}
		return err == nil
	})
}
