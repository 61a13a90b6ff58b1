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
		if h.FailurePolicy == nil {
			h.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
		}
		if h.MatchPolicy == nil {
			h.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
		}
		if h.NamespaceSelector == nil {
			h.NamespaceSelector = &metav1.LabelSelector{}
		}
		if h.ObjectSelector == nil {
			h.ObjectSelector = &metav1.LabelSelector{}
		}
		if h.TimeoutSeconds == nil {
			h.TimeoutSeconds = ptr.To[int32](10)
		}
		if h.ReinvocationPolicy == nil {
			h.ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		}
		vwc.DefaultRulesAndClientConfig(h.Rules, &h.ClientConfig)
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
	newCfg.Generation = oldCfg.Generation
	if !apiequality.Semantic.DeepEqual(newCfg.Webhooks, oldCfg.Webhooks) {
		newCfg.Generation = oldCfg.Generation + 1
	}
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
		// A mutating webhook is a validating one plus a reinvocation policy.
		allErrs = append(allErrs, vwc.ValidateWebhook(&admissionregistrationv1.ValidatingWebhook{
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
		}, names, p)...)
		policies := []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy}
		if rp := h.ReinvocationPolicy; rp != nil && *rp != policies[0] && *rp != policies[1] {
			allErrs = append(allErrs, field.NotSupported(p.Child("reinvocationPolicy"), *rp, policies))
		}
	}
	return allErrs
}
