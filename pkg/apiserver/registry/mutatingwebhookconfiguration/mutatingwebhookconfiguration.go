// Package mutatingwebhookconfiguration holds the rules for
// admissionregistration.k8s.io/v1 MutatingWebhookConfigurations. kube-lite
// stores these configurations; calling the webhooks is admission's business.
package mutatingwebhookconfiguration

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	vwc "github.com/kube-lite/kube-lite/pkg/apiserver/registry/validatingwebhookconfiguration"
)

// Resource describes mutating webhook configurations for the generic REST
// handler; c is the clock that table ages are measured against.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: admissionregistrationv1.SchemeGroupVersion,
		Name:         "mutatingwebhookconfigurations",
		Singular:     "mutatingwebhookconfiguration",
		Kind:         "MutatingWebhookConfiguration",
		Categories:   []string{"api-extensions"},
		New:          func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
		NewList:      func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
		Strategy:     strategy{},
		Table: vwc.Table(c, func(obj *admissionregistrationv1.MutatingWebhookConfiguration) (string, int, metav1.Time) {
			return obj.Name, len(obj.Webhooks), obj.CreationTimestamp
		}),
	}
}

type strategy struct{}

func (strategy) Default(obj runtime.Object) {
	cfg := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	for i := range cfg.Webhooks {
		h := &cfg.Webhooks[i]
		v := asValidating(h)
		vwc.DefaultWebhook(v)
		setCommon(h, v)
		if h.ReinvocationPolicy == nil {
			h.ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		}
	}
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Generation = 1
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validate(obj.(*admissionregistrationv1.MutatingWebhookConfiguration))
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newCfg := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	oldCfg := old.(*admissionregistrationv1.MutatingWebhookConfiguration)
	newCfg.Generation = registry.NextGeneration(oldCfg.Generation, !apiequality.Semantic.DeepEqual(newCfg.Webhooks, oldCfg.Webhooks))
}

func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return validate(obj.(*admissionregistrationv1.MutatingWebhookConfiguration))
}

func validate(cfg *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	hooksPath := field.NewPath("webhooks")
	for i := range cfg.Webhooks {
		h := &cfg.Webhooks[i]
		p := hooksPath.Index(i)
		allErrs = append(allErrs, vwc.ValidateWebhook(asValidating(h), names, p)...)
		policies := []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy}
		if rp := h.ReinvocationPolicy; rp != nil && *rp != policies[0] && *rp != policies[1] {
			allErrs = append(allErrs, field.NotSupported(p.Child("reinvocationPolicy"), *rp, policies))
		}
	}
	return allErrs
}

// asValidating is h without its reinvocation policy: a mutating webhook is
// a validating one plus that policy, so the two share their defaulting and
// validation.
func asValidating(h *admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.ValidatingWebhook {
	return &admissionregistrationv1.ValidatingWebhook{
		Name:                    h.Name,
		ClientConfig:            h.ClientConfig,
		Rules:                   h.Rules,
		FailurePolicy:           h.FailurePolicy,
		MatchPolicy:             h.MatchPolicy,
		NamespaceSelector:       h.NamespaceSelector,
		ObjectSelector:          h.ObjectSelector,
		SideEffects:             h.SideEffects,
		TimeoutSeconds:          h.TimeoutSeconds,
		AdmissionReviewVersions: h.AdmissionReviewVersions,
		MatchConditions:         h.MatchConditions,
	}
}

// setCommon takes back what defaulting set on asValidating's copy.
func setCommon(h *admissionregistrationv1.MutatingWebhook, v *admissionregistrationv1.ValidatingWebhook) {
	h.Name = v.Name
	h.ClientConfig = v.ClientConfig
	h.Rules = v.Rules
	h.FailurePolicy = v.FailurePolicy
	h.MatchPolicy = v.MatchPolicy
	h.NamespaceSelector = v.NamespaceSelector
	h.ObjectSelector = v.ObjectSelector
	h.SideEffects = v.SideEffects
	h.TimeoutSeconds = v.TimeoutSeconds
	h.AdmissionReviewVersions = v.AdmissionReviewVersions
	h.MatchConditions = v.MatchConditions
}
