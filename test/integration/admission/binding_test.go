package admission_test

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-lite/kube-lite/pkg/apiserver"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// bindingReviews records the AdmissionRequests a webhook saw for bindings.
type bindingReviews struct {
	mu   sync.Mutex
	seen []admissionv1.AdmissionRequest
}

func (b *bindingReviews) add(req *admissionv1.AdmissionRequest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen = append(b.seen, *req)
}

// last is the latest request for the binding of pod name.
func (b *bindingReviews) last(t *testing.T, name string) (admissionv1.AdmissionRequest, corev1.Binding) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.seen) - 1; i >= 0; i-- {
		if b.seen[i].Name == name {
			var binding corev1.Binding
			if err := json.Unmarshal(b.seen[i].Object.Raw, &binding); err != nil {
				t.Fatalf("decode the binding the webhook saw: %v", err)
			}
			return b.seen[i], binding
		}
	}
	t.Fatalf("the webhook saw no binding of %s", name)
	return admissionv1.AdmissionRequest{}, corev1.Binding{}
}

func bindingRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding", "bindings"}},
	}}
}

func bindTo(name, node string) *corev1.Binding {
	return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
}

// As upstream, a binding is a create on pods/binding (on bindings for the
// legacy collection) that mutating and validating webhooks see and may
// change or refuse.
func TestBindingRunsAdmissionWebhooks(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	var reviews bindingReviews
	srv, ca := webhookServer(t, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if req.Kind.Kind != "Binding" {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		reviews.add(req)
		var b corev1.Binding
		if err := json.Unmarshal(req.Object.Raw, &b); err == nil && b.Target.Name == "forbidden" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "no pods on node forbidden"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	var mutated atomic.Int32
	mutator, mca := webhookServer(t, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if req.Kind.Kind == "Binding" {
			mutated.Add(1)
		}
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt,
			Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"bound-by":"webhook"}}]`)}
	})
	url, murl := srv.URL, mutator.URL
	none := admissionregistrationv1.SideEffectClassNone
	if _, err := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "placement"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "placement.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: bindingRules(), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "label-bindings"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "label.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &murl, CABundle: mca},
			Rules: bindingRules(), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := s.Client.CoreV1().Pods("default")
	for _, name := range []string{"p1", "p2"} {
		if _, err := pods.Create(ctx, simplePod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The webhook configurations reach admission through two caches: dry-run
	// bindings, which webhooks without side effects see too, wait until
	// both are called, so that no real binding lands before.
	eventually(t, "both webhooks see bindings", func(ctx context.Context) error {
		return pods.Bind(ctx, bindTo("p1", "forbidden"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	}, func(err error) bool { return err != nil && mutated.Load() > 0 })
	err := pods.Bind(ctx, bindTo("p1", "forbidden"), metav1.CreateOptions{FieldManager: "binder"})
	wantStatus(t, err, 400, "", `admission webhook "placement.example.com" denied the request: no pods on node forbidden`)
	req, seen := reviews.last(t, "p1")
	wantKind := metav1.GroupVersionKind{Version: "v1", Kind: "Binding"}
	if req.Kind != wantKind || req.Resource != (metav1.GroupVersionResource{Version: "v1", Resource: "pods"}) ||
		req.SubResource != "binding" || req.Operation != admissionv1.Create || req.Namespace != "default" {
		t.Errorf("webhook saw kind %v resource %v subresource %q operation %s namespace %q; want v1 Binding on pods/binding, CREATE in default",
			req.Kind, req.Resource, req.SubResource, req.Operation, req.Namespace)
	}
	if seen.Kind != "Binding" || seen.Target.Name != "forbidden" || seen.Namespace != "default" {
		t.Errorf("webhook saw binding %+v", seen)
	}
	var opts metav1.CreateOptions
	if err := json.Unmarshal(req.Options.Raw, &opts); err != nil || opts.Kind != "CreateOptions" || opts.FieldManager != "binder" {
		t.Errorf("webhook saw options %s (%v); want CreateOptions with fieldManager binder", req.Options.Raw, err)
	}
	if p, err := pods.Get(ctx, "p1", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("refused binding: pod %v, error %v; want it unbound", p.Spec.NodeName, err)
	}

	if err := pods.Bind(ctx, bindTo("p1", "good"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("allowed binding: %v", err)
	}
	p, err := pods.Get(ctx, "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The mutating webhook's label reached the pod through the binding.
	if p.Spec.NodeName != "good" || p.Labels["bound-by"] != "webhook" {
		t.Errorf("pod bound to %q with labels %v; want node good and bound-by=webhook", p.Spec.NodeName, p.Labels)
	}

	// The legacy collection is a create on bindings.
	legacy := func(node string) error {
		return s.Client.CoreV1().RESTClient().Post().Namespace("default").Resource("bindings").
			Body(bindTo("p2", node)).Do(ctx).Error()
	}
	wantStatus(t, legacy("forbidden"), 400, "", `no pods on node forbidden`)
	req, _ = reviews.last(t, "p2")
	if req.Resource.Resource != "bindings" || req.SubResource != "" || req.Kind != wantKind {
		t.Errorf("webhook saw %v/%q of kind %v; want bindings of kind v1 Binding", req.Resource, req.SubResource, req.Kind)
	}
	if err := legacy("good"); err != nil {
		t.Fatalf("allowed legacy binding: %v", err)
	}
	if p, err := pods.Get(ctx, "p2", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "good" || p.Labels["bound-by"] != "webhook" {
		t.Fatalf("legacy binding: pod %+v, error %v", p, err)
	}
}

// A kubelet places no pods: upstream's authorizers refuse a node's
// binding, and NodeRestriction refuses it where they would not.
func TestNodeCannotBindPods(t *testing.T) {
	for _, tc := range []struct {
		name  string
		modes []string
		msg   string
	}{
		{"Node,RBAC", nil, `User "system:node:n1" cannot create resource "pods/binding"`},
		{"AlwaysAllow", []string{apiserver.ModeAlwaysAllow}, `pods "p" is forbidden: unexpected pod subresource "binding", only 'status' and 'eviction' are allowed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec := &framework.Security{}
			if tc.modes != nil {
				sec.Configure = func(o *apiserver.SecurityOptions) { o.AuthorizationModes = tc.modes }
			}
			s := framework.StartAPIServer(t, framework.WithSecurity(sec))
			ctx := ctxT(t)
			if _, err := s.Client.CoreV1().Pods("default").Create(ctx, simplePod("p"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			n1 := kubernetes.NewForConfigOrDie(sec.NodeConfigs["n1"])
			err := n1.CoreV1().Pods("default").Bind(ctx, bindTo("p", "n1"), metav1.CreateOptions{})
			wantStatus(t, err, 403, metav1.StatusReasonForbidden, tc.msg)
			if p, err := s.Client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
				t.Fatalf("pod after the node's binding: node %q, error %v; want unbound", p.Spec.NodeName, err)
			}
		})
	}
}

// NamespaceLifecycle refuses a binding in a namespace being deleted, as
// any create there, so the scheduler places no pod that is about to go.
func TestBindingInTerminatingNamespace(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	createNamespace(t, s.Client, "ending", nil)
	pods := s.Client.CoreV1().Pods("ending")
	if _, err := pods.Create(ctx, simplePod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Without a namespace controller the namespace stays Terminating.
	if err := s.Client.CoreV1().Namespaces().Delete(ctx, "ending", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := pods.Bind(ctx, bindTo("p", "n1"), metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "p" is forbidden: unable to create new content in namespace ending because it is being terminated`)
}

// PodTopologyLabels (upstream 1.35+) gives a pod its node's zone and region
// labels when it is bound, or when it is created already on the node.
func TestPodTopologyLabels(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "zoned", Labels: map[string]string{
		corev1.LabelTopologyZone: "z1", corev1.LabelTopologyRegion: "r1", corev1.LabelHostname: "zoned"}}}
	if _, err := s.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := s.Client.CoreV1().Pods("default")
	bound := simplePod("bound")
	bound.Labels = map[string]string{"app": "a", corev1.LabelTopologyZone: "wrong"}
	if _, err := pods.Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Bind(ctx, bindTo("bound", "zoned"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	placed := simplePod("placed")
	placed.Spec.NodeName = "zoned"
	if _, err := pods.Create(ctx, placed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{corev1.LabelTopologyZone: "z1", corev1.LabelTopologyRegion: "r1"}
	for name, extra := range map[string]map[string]string{"bound": {"app": "a"}, "placed": nil} {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w := maps.Clone(want)
		maps.Copy(w, extra)
		if !maps.Equal(p.Labels, w) {
			t.Errorf("pod %s labels %v, want %v", name, p.Labels, w)
		}
	}
}
