package admission_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// sentOptions is what a webhook saw of one request's options.
type sentOptions struct {
	Kind            string   `json:"kind"`
	APIVersion      string   `json:"apiVersion"`
	DryRun          []string `json:"dryRun"`
	FieldManager    string   `json:"fieldManager"`
	FieldValidation string   `json:"fieldValidation"`
}

// As upstream, webhooks get a write's options: CreateOptions on a create
// (a PUT that creates included), UpdateOptions on an update and on a
// PATCH, which is admitted as an UPDATE.
func TestWebhooksSeeWriteOptions(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	var (
		mu   sync.Mutex
		seen = map[string]sentOptions{} // by "<operation> <name>"
	)
	srv, ca := webhookServer(t, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var o sentOptions
		if len(req.Options.Raw) > 0 {
			if err := json.Unmarshal(req.Options.Raw, &o); err != nil {
				o.Kind = "undecodable: " + err.Error()
			}
		}
		mu.Lock()
		seen[string(req.Operation)+" "+req.Name] = o
		mu.Unlock()
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	url := srv.URL
	none := admissionregistrationv1.SideEffectClassNone
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	if _, err := s.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "options"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "options.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{
				{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}},
				{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{"coordination.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"leases"}}},
			},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := func(key string) (sentOptions, bool) {
		mu.Lock()
		defer mu.Unlock()
		o, ok := seen[key]
		return o, ok
	}
	cms := s.Client.CoreV1().ConfigMaps("default")
	// Dry runs until the webhook is in place, so that each probe leaves
	// nothing behind.
	eventually(t, "the webhook sees a create", func(ctx context.Context) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}, func(error) bool { _, ok := got("CREATE probe"); return ok })

	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
		metav1.CreateOptions{FieldManager: "creator", FieldValidation: "Strict"})
	if err != nil {
		t.Fatal(err)
	}
	want := func(key string, w sentOptions) {
		t.Helper()
		if o, _ := got(key); o.Kind != w.Kind || o.APIVersion != "meta.k8s.io/v1" || o.FieldManager != w.FieldManager ||
			o.FieldValidation != w.FieldValidation || len(o.DryRun) != len(w.DryRun) {
			t.Errorf("%s: webhook saw options %+v, want %+v of meta.k8s.io/v1", key, o, w)
		}
	}
	want("CREATE probe", sentOptions{Kind: "CreateOptions", DryRun: []string{metav1.DryRunAll}})
	want("CREATE c", sentOptions{Kind: "CreateOptions", FieldManager: "creator", FieldValidation: "Strict"})

	cm.Data = map[string]string{"k": "v"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "updater", FieldValidation: "Warn"}); err != nil {
		t.Fatal(err)
	}
	want("UPDATE c", sentOptions{Kind: "UpdateOptions", FieldManager: "updater", FieldValidation: "Warn"})

	if _, err := cms.Patch(ctx, "c", types.MergePatchType, []byte(`{"data":{"k":"w"}}`),
		metav1.PatchOptions{FieldManager: "patcher", FieldValidation: "Ignore", DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	want("UPDATE c", sentOptions{Kind: "UpdateOptions", FieldManager: "patcher", FieldValidation: "Ignore", DryRun: []string{metav1.DryRunAll}})

	// A PUT of a lease that does not exist creates it.
	leases := s.Client.CoordinationV1().Leases("default")
	if _, err := leases.Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}, metav1.UpdateOptions{FieldManager: "holder"}); err != nil {
		t.Fatal(err)
	}
	want("CREATE l", sentOptions{Kind: "CreateOptions", FieldManager: "holder"})
}
