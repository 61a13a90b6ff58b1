package admission_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func evictionOf(name string) *policyv1.Eviction {
	return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
}

// As upstream, an eviction is a create of pods/eviction that webhooks see
// (a policy/v1 Eviction) and may refuse.
func TestEvictionRunsAdmissionWebhooks(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	var (
		mu   sync.Mutex
		seen *admissionv1.AdmissionRequest
	)
	srv, ca := webhookServer(t, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if req.Name != "protected" {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		mu.Lock()
		seen = req.DeepCopy()
		mu.Unlock()
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "protected pods stay"}}
	})
	url := srv.URL
	none := admissionregistrationv1.SideEffectClassNone
	if _, err := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "guard.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}},
			}},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := s.Client.CoreV1().Pods("default")
	// Admission comes before the pod is looked up: until the webhook is
	// in place the pod (not created yet) is not found.
	eventually(t, "the webhook refuses an eviction", func(ctx context.Context) error {
		return pods.EvictV1(ctx, evictionOf("protected"))
	}, func(err error) bool { return !apierrors.IsNotFound(err) })
	for _, name := range []string{"protected", "free"} {
		if _, err := pods.Create(ctx, simplePod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ev := evictionOf("protected")
	ev.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](5)}
	wantStatus(t, pods.EvictV1(ctx, ev), 400, "", `admission webhook "guard.example.com" denied the request: protected pods stay`)
	if _, err := pods.Get(ctx, "protected", metav1.GetOptions{}); err != nil {
		t.Fatalf("the refused eviction's pod: %v", err)
	}
	mu.Lock()
	req := seen
	mu.Unlock()
	wantKind := metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
	if req.Kind != wantKind || req.Resource != (metav1.GroupVersionResource{Version: "v1", Resource: "pods"}) ||
		req.SubResource != "eviction" || req.Operation != admissionv1.Create || req.Namespace != "default" {
		t.Errorf("webhook saw kind %v resource %v subresource %q operation %s namespace %q; want policy/v1 Eviction on pods/eviction, CREATE in default",
			req.Kind, req.Resource, req.SubResource, req.Operation, req.Namespace)
	}
	var got policyv1.Eviction
	if err := json.Unmarshal(req.Object.Raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "Eviction" || got.APIVersion != "policy/v1" || got.Name != "protected" || got.Namespace != "default" ||
		got.DeleteOptions == nil || ptr.Deref(got.DeleteOptions.GracePeriodSeconds, 0) != 5 {
		t.Errorf("webhook saw eviction %+v", got)
	}
	var opts metav1.CreateOptions
	if err := json.Unmarshal(req.Options.Raw, &opts); err != nil || opts.Kind != "CreateOptions" {
		t.Errorf("webhook saw options %s (%v); want CreateOptions", req.Options.Raw, err)
	}

	if err := pods.EvictV1(ctx, evictionOf("free")); err != nil {
		t.Fatalf("the allowed eviction: %v", err)
	}
	if _, err := pods.Get(ctx, "free", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the evicted pod: %v; want it gone", err)
	}
}

// As upstream, the Node authorizer lets a kubelet evict pods and create
// and delete pods (mirror pods); NodeRestriction limits it to its own.
func TestNodeEvictsAndMirrorsOnlyItsOwnPods(t *testing.T) {
	sec := &framework.Security{}
	s := framework.StartAPIServer(t, framework.WithSecurity(sec))
	ctx := ctxT(t)
	n1Node, err := s.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := s.Client.CoreV1().Pods("default")
	for _, node := range []string{"n1", "n2"} {
		p := simplePod("on-" + node)
		p.Spec.NodeName = node
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n1 := kubernetes.NewForConfigOrDie(sec.NodeConfigs["n1"]).CoreV1().Pods("default")

	wantStatus(t, n1.EvictV1(ctx, evictionOf("on-n2")), 403, metav1.StatusReasonForbidden,
		`pods "on-n2" is forbidden: node n1 can only evict pods with spec.nodeName set to itself`)
	if p, err := pods.Get(ctx, "on-n2", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("n2's pod after n1 evicted it: %v, deleting %v; want it untouched", err, p.DeletionTimestamp)
	}
	if err := n1.EvictV1(ctx, evictionOf("on-n1")); err != nil {
		t.Fatalf("n1 evicts its own pod: %v", err)
	}
	// Bound to a node, the pod goes gracefully, as the kubelet sees to.
	if p, err := pods.Get(ctx, "on-n1", metav1.GetOptions{}); err == nil && p.DeletionTimestamp == nil {
		t.Fatalf("n1's evicted pod is not being deleted")
	}

	wantStatus(t, n1.Delete(ctx, "on-n2", metav1.DeleteOptions{}), 403, metav1.StatusReasonForbidden,
		`pods "on-n2" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself`)
	mirror := simplePod("static-n1")
	mirror.Annotations = map[string]string{"kubernetes.io/config.mirror": "hash"}
	mirror.Spec.NodeName = "n1"
	mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: n1Node.UID, Controller: ptr.To(true)}}
	created, err := n1.Create(ctx, mirror, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("n1 creates its mirror pod: %v", err)
	}
	if err := n1.Delete(ctx, "static-n1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
		Preconditions: &metav1.Preconditions{UID: &created.UID}}); err != nil {
		t.Fatalf("n1 deletes its mirror pod: %v", err)
	}
	if _, err := pods.Get(ctx, "static-n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the deleted mirror pod: %v; want it gone", err)
	}
	plain := simplePod("plain")
	plain.Spec.NodeName = "n1"
	_, err = n1.Create(ctx, plain, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`)
}
