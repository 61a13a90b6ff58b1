package validatingwebhookconfiguration

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func resource() *registry.Resource { return Resource(clocktesting.NewFakePassiveClock(now)) }

func newConfig(mutate ...func(*admissionregistrationv1.ValidatingWebhook)) *admissionregistrationv1.ValidatingWebhookConfiguration {
	h := admissionregistrationv1.ValidatingWebhook{
		Name: "policy.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: "policy", Name: "webhook", Path: ptr.To("/validate")},
		},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
	for _, m := range mutate {
		m(&h)
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "policy"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{h},
	}
	resource().Strategy.Default(cfg)
	return cfg
}

func TestDefault(t *testing.T) {
	h := newConfig().Webhooks[0]
	if *h.FailurePolicy != admissionregistrationv1.Fail || *h.MatchPolicy != admissionregistrationv1.Equivalent ||
		*h.TimeoutSeconds != 10 || h.NamespaceSelector == nil || h.ObjectSelector == nil ||
		*h.Rules[0].Scope != admissionregistrationv1.AllScopes || *h.ClientConfig.Service.Port != 443 {
		t.Errorf("webhook not defaulted like upstream: %+v", h)
	}
	kept := newConfig(func(h *admissionregistrationv1.ValidatingWebhook) {
		h.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		h.TimeoutSeconds = ptr.To[int32](3)
	}).Webhooks[0]
	if *kept.FailurePolicy != admissionregistrationv1.Ignore || *kept.TimeoutSeconds != 3 {
		t.Errorf("explicit values overwritten: %+v", kept)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*admissionregistrationv1.ValidatingWebhook)
		want   []string
	}{
		{name: "valid", mutate: func(*admissionregistrationv1.ValidatingWebhook) {}},
		{name: "url instead of service", mutate: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://10.0.0.1:8443/validate")}
		}},
		{name: "name not fully qualified", mutate: func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "policy" },
			want: []string{"webhooks[0].name"}},
		{name: "both url and service", mutate: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = ptr.To("https://x") },
			want: []string{"webhooks[0].clientConfig"}},
		{name: "plain http url", mutate: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("http://hook.local/x?a=b")}
		}, want: []string{"webhooks[0].clientConfig.url", "webhooks[0].clientConfig.url"}},
		{name: "service path", mutate: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.Service.Path = ptr.To("validate") },
			want: []string{"webhooks[0].clientConfig.service.path"}},
		{name: "side effects required", mutate: func(h *admissionregistrationv1.ValidatingWebhook) { h.SideEffects = nil },
			want: []string{"webhooks[0].sideEffects"}},
		{name: "side effects Some", mutate: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		}, want: []string{"webhooks[0].sideEffects"}},
		{name: "review versions", mutate: func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v2"} },
			want: []string{"webhooks[0].admissionReviewVersions"}},
		{name: "timeout", mutate: func(h *admissionregistrationv1.ValidatingWebhook) { h.TimeoutSeconds = ptr.To[int32](31) },
			want: []string{"webhooks[0].timeoutSeconds"}},
		{name: "failure policy", mutate: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.FailurePolicy = ptr.To[admissionregistrationv1.FailurePolicyType]("Maybe")
		}, want: []string{"webhooks[0].failurePolicy"}},
		{name: "rule without operations or resources", mutate: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Operations = nil
			h.Rules[0].Resources = nil
		}, want: []string{"webhooks[0].rules[0].operations", "webhooks[0].rules[0].resources"}},
		{name: "wildcard with other operations", mutate: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Operations = append(h.Rules[0].Operations, admissionregistrationv1.OperationAll)
		}, want: []string{"webhooks[0].rules[0].operations"}},
		{name: "unknown operation", mutate: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Operations = []admissionregistrationv1.OperationType{"PATCH"}
		}, want: []string{"webhooks[0].rules[0].operations[0]"}},
		{name: "match condition without expression", mutate: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-kube-system"}}
		}, want: []string{"webhooks[0].matchConditions[0].expression"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := newConfig(tt.mutate)
			r := resource()
			r.Strategy.PrepareForCreate(context.Background(), cfg)
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

func TestDuplicateNames(t *testing.T) {
	cfg := newConfig()
	cfg.Webhooks = append(cfg.Webhooks, cfg.Webhooks[0])
	errs := resource().Strategy.Validate(context.Background(), cfg)
	if len(errs) != 1 || errs[0].Field != "webhooks[1].name" {
		t.Errorf("errors = %v, want a duplicate at webhooks[1].name", errs)
	}
}

func TestGeneration(t *testing.T) {
	r := resource()
	old := newConfig()
	r.Strategy.PrepareForCreate(context.Background(), old)
	if old.Generation != 1 {
		t.Fatalf("generation on create = %d", old.Generation)
	}
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	r.Strategy.PrepareForUpdate(context.Background(), relabelled, old)
	changed := old.DeepCopy()
	changed.Webhooks[0].TimeoutSeconds = ptr.To[int32](5)
	r.Strategy.PrepareForUpdate(context.Background(), changed, old)
	if relabelled.Generation != 1 || changed.Generation != 2 {
		t.Errorf("generation after relabel %d, after webhook change %d; want 1 and 2", relabelled.Generation, changed.Generation)
	}
}

func TestTable(t *testing.T) {
	r := resource()
	cfg := newConfig()
	cfg.CreationTimestamp = metav1.NewTime(now.Add(-48 * time.Hour))
	cells, err := r.Table.Cells(cfg)
	if want := []interface{}{"policy", int64(1), "2d"}; err != nil || !apiequality.Semantic.DeepEqual(cells, want) {
		t.Errorf("cells = %#v, %v; want %#v", cells, err, want)
	}
	if r.Namespaced {
		t.Error("webhook configurations are cluster-scoped")
	}
}
