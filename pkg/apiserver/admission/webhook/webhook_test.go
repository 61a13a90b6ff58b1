package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

type fakeNamespaces map[string]map[string]string

func (f fakeNamespaces) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	l, ok := f[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, nil
}

var podsRes = &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "pods", Kind: "Pod", Namespaced: true}

// server is a webhook answering with respond; it counts its calls and
// keeps the last request.
type server struct {
	*httptest.Server
	calls atomic.Int32
	last  atomic.Pointer[admissionv1.AdmissionRequest]
}

func newServer(t *testing.T, respond func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) *server {
	s := &server{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		s.last.Store(review.Request)
		resp := respond(review.Request)
		resp.UID = review.Request.UID
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) caBundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

func allow(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func sidecar(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt,
		Patch: []byte(`[{"op":"add","path":"/spec/containers/-","value":{"name":"sidecar","image":"proxy"}}]`)}
}

func podRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
}

func mutatingConfig(s *server, mutate func(w *admissionregistrationv1.MutatingWebhook)) *admissionregistrationv1.MutatingWebhookConfiguration {
	u := s.URL
	w := admissionregistrationv1.MutatingWebhook{Name: "inject.example.com", Rules: podRules(),
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: s.caBundle()}}
	if mutate != nil {
		mutate(&w)
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Webhooks: []admissionregistrationv1.MutatingWebhook{w}}
}

func newPod(labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
}

func podCreate(pod *corev1.Pod) *admission.Attributes {
	return &admission.Attributes{Operation: admission.Create, Resource: podsRes, Namespace: "ns", Name: "p", Object: pod,
		User: &request.User{Name: "alice", Groups: []string{"devs"}}}
}

func TestMutatingInjectsSidecar(t *testing.T) {
	s := newServer(t, sidecar)
	m := NewMutating(NewStaticCache(mutatingConfig(s, nil)), fakeNamespaces{"ns": nil})
	pod := newPod(nil)
	if err := m.Admit(context.Background(), podCreate(pod)); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[1].Name != "sidecar" || pod.Spec.Containers[1].Image != "proxy" {
		t.Fatalf("containers after the webhook: %+v", pod.Spec.Containers)
	}
	req := s.last.Load()
	if req.Kind.Kind != "Pod" || req.Resource.Resource != "pods" || req.Operation != admissionv1.Create ||
		req.Namespace != "ns" || req.Name != "p" || req.UserInfo.Username != "alice" {
		t.Errorf("review request %+v", req)
	}
	var sent corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &sent); err != nil || sent.Kind != "Pod" || sent.APIVersion != "v1" || sent.Spec.Containers[0].Name != "app" {
		t.Errorf("object sent %s (%v)", req.Object.Raw, err)
	}
}

func TestMatching(t *testing.T) {
	s := newServer(t, allow)
	namespaces := fakeNamespaces{"ns": {"inject": "yes"}}
	tests := []struct {
		name   string
		mutate func(w *admissionregistrationv1.MutatingWebhook)
		labels map[string]string
		want   int32
	}{
		{"rule matches", nil, nil, 1},
		{"other operation", func(w *admissionregistrationv1.MutatingWebhook) {
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
		}, nil, 0},
		{"other resource", func(w *admissionregistrationv1.MutatingWebhook) { w.Rules[0].Resources = []string{"configmaps"} }, nil, 0},
		{"wildcards", func(w *admissionregistrationv1.MutatingWebhook) {
			w.Rules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}
		}, nil, 1},
		{"subresources only", func(w *admissionregistrationv1.MutatingWebhook) { w.Rules[0].Resources = []string{"pods/status"} }, nil, 0},
		{"cluster scope only", func(w *admissionregistrationv1.MutatingWebhook) {
			sc := admissionregistrationv1.ClusterScope
			w.Rules[0].Scope = &sc
		}, nil, 0},
		{"namespace selector matches", func(w *admissionregistrationv1.MutatingWebhook) {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "yes"}}
		}, nil, 1},
		{"namespace selector misses", func(w *admissionregistrationv1.MutatingWebhook) {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "no"}}
		}, nil, 0},
		{"object selector matches", func(w *admissionregistrationv1.MutatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
		}, map[string]string{"app": "web"}, 1},
		{"object selector misses", func(w *admissionregistrationv1.MutatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
		}, map[string]string{"app": "db"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.calls.Load()
			m := NewMutating(NewStaticCache(mutatingConfig(s, tt.mutate)), namespaces)
			if err := m.Admit(context.Background(), podCreate(newPod(tt.labels))); err != nil {
				t.Fatal(err)
			}
			if got := s.calls.Load() - before; got != tt.want {
				t.Errorf("webhook called %d times, want %d", got, tt.want)
			}
		})
	}
}

func TestRefusalsAndFailures(t *testing.T) {
	deny := newServer(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden, Message: "no privileged pods"}}
	})
	bare := newServer(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false}
	})
	down := newServer(t, allow)
	down.Close()
	ignore := admissionregistrationv1.Ignore
	wrongCA := newServer(t, allow)

	validating := func(s *server, mutate func(w *admissionregistrationv1.ValidatingWebhook)) *Validating {
		u := s.URL
		w := admissionregistrationv1.ValidatingWebhook{Name: "check.example.com", Rules: podRules(),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: s.caBundle()}}
		if mutate != nil {
			mutate(&w)
		}
		return NewValidating(NewStaticCache(&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "v"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}), fakeNamespaces{"ns": nil})
	}
	tests := []struct {
		name     string
		plugin   *Validating
		wantCode int32
		wantMsg  string
	}{
		{"denied with status", validating(deny, nil), 403, `admission webhook "check.example.com" denied the request: no privileged pods`},
		{"denied without explanation", validating(bare, nil), 400, `admission webhook "check.example.com" denied the request without explanation`},
		{"down, Fail", validating(down, nil), 500, `failed calling webhook "check.example.com": failed to call webhook: Post`},
		{"down, Ignore", validating(down, func(w *admissionregistrationv1.ValidatingWebhook) { w.FailurePolicy = &ignore }), 0, ""},
		// Without caBundle only the system's roots are trusted, not the test server's.
		{"untrusted certificate", validating(wrongCA, func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.CABundle = nil }), 500, "certificate"},
		{"bad caBundle", validating(wrongCA, func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.CABundle = []byte("junk") }), 500, "caBundle holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.plugin.Validate(context.Background(), podCreate(newPod(nil)))
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var st apierrors.APIStatus
			if !asStatus(err, &st) || st.Status().Code != tt.wantCode || !strings.Contains(st.Status().Message, tt.wantMsg) {
				t.Fatalf("error %v, want code %d with %q", err, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func asStatus(err error, st *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	if ok {
		*st = s
	}
	return ok
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)
	s := &server{Server: slow}
	one := int32(1)
	m := NewMutating(NewStaticCache(mutatingConfig(s, func(w *admissionregistrationv1.MutatingWebhook) { w.TimeoutSeconds = &one })), fakeNamespaces{"ns": nil})
	err := m.Admit(context.Background(), podCreate(newPod(nil)))
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("error %v, want an internal error for the timeout", err)
	}
}

func TestServiceReference(t *testing.T) {
	s := newServer(t, sidecar)
	u, _ := url.Parse(s.URL)
	port, _ := strconv.Atoi(u.Port())
	p32, path := int32(port), "/inject"
	cfg := mutatingConfig(s, func(w *admissionregistrationv1.MutatingWebhook) {
		w.ClientConfig.URL = nil
		w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "system", Name: "injector", Port: &p32, Path: &path}
	})
	var asked string
	m := NewMutating(NewStaticCache(cfg), fakeNamespaces{"ns": nil}).WithResolver(func(_ context.Context, ns, name string) (string, error) {
		asked = ns + "/" + name
		return "127.0.0.1", nil
	})
	pod := newPod(nil)
	if err := m.Admit(context.Background(), podCreate(pod)); err != nil {
		t.Fatal(err)
	}
	if asked != "system/injector" || len(pod.Spec.Containers) != 2 {
		t.Fatalf("resolved %q, containers %d", asked, len(pod.Spec.Containers))
	}

	// Without a resolver that knows the name, the call fails as the policy says.
	m = NewMutating(NewStaticCache(cfg), fakeNamespaces{"ns": nil}).WithResolver(dnsResolver)
	if err := m.Admit(context.Background(), podCreate(newPod(nil))); !apierrors.IsInternalError(err) {
		t.Fatalf("unresolvable service: %v, want an internal error", err)
	}
}
