package mutatingwebhookconfiguration

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newConfig(mutate func(*admissionregistrationv1.MutatingWebhook)) *admissionregistrationv1.MutatingWebhookConfiguration {
	h := admissionregistrationv1.MutatingWebhook{
		Name:         "inject.sidecar.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443/mutate")},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
		AdmissionReviewVersions: []string{"v1", "v1beta1"},
	}
	mutate(&h)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecar-injector"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{h},
	}
	Resource(clocktesting.NewFakePassiveClock(now)).Strategy.Default(cfg)
	return cfg
}

func TestDefault(t *testing.T) {
	h := newConfig(func(*admissionregistrationv1.MutatingWebhook) {}).Webhooks[0]
	if *h.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy || *h.FailurePolicy != admissionregistrationv1.Fail ||
		*h.MatchPolicy != admissionregistrationv1.Equivalent || *h.TimeoutSeconds != 10 || h.ObjectSelector == nil ||
		*h.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("webhook not defaulted like upstream: %+v", h)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*admissionregistrationv1.MutatingWebhook)
		want   []string
	}{
		{name: "valid", mutate: func(*admissionregistrationv1.MutatingWebhook) {}},
		{name: "reinvoke if needed", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
		}},
		{name: "unknown reinvocation policy", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.ReinvocationPolicy = ptr.To[admissionregistrationv1.ReinvocationPolicyType]("Always")
		}, want: []string{"webhooks[0].reinvocationPolicy"}},
		{name: "shared webhook rules apply", mutate: func(h *admissionregistrationv1.MutatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{}
			h.SideEffects = nil
		}, want: []string{"webhooks[0].sideEffects", "webhooks[0].clientConfig"}},
	}
	r := Resource(clocktesting.NewFakePassiveClock(now))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := newConfig(tt.mutate)
			var got []string
			for _, e := range r.Strategy.Validate(context.Background(), cfg) {
				got = append(got, e.Field)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("errors at %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTable(t *testing.T) {
	r := Resource(clocktesting.NewFakePassiveClock(now))
	cfg := newConfig(func(*admissionregistrationv1.MutatingWebhook) {})
	cfg.Webhooks = append(cfg.Webhooks, cfg.Webhooks[0])
	cfg.CreationTimestamp = metav1.NewTime(now.Add(-30 * time.Second))
	cells, err := r.Table.Cells(cfg)
	if want := []interface{}{"sidecar-injector", int64(2), "30s"}; err != nil || !apiequality.Semantic.DeepEqual(cells, want) {
		t.Errorf("cells = %#v, %v; want %#v", cells, err, want)
	}
}
