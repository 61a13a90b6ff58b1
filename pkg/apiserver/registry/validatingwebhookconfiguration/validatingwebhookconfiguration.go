// Package validatingwebhookconfiguration holds the rules for
// admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations, and the
// per-webhook defaulting and validation that mutating configurations share.
// kube-lite stores these configurations; calling the webhooks is admission's
// business.
package validatingwebhookconfiguration

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
)

// Resource describes validating webhook configurations for the generic REST
// handler; c is the clock that table ages are measured against.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: admissionregistrationv1.SchemeGroupVersion,
		Name:         "validatingwebhookconfigurations",
		Singular:     "validatingwebhookconfiguration",
		Kind:         "ValidatingWebhookConfiguration",
		Categories:   []string{"api-extensions"},
		New:          func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
		NewList:      func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		Strategy:     strategy{},
		Table: Table(c, func(obj *admissionregistrationv1.ValidatingWebhookConfiguration) (string, int, metav1.Time) {
			return obj.Name, len(obj.Webhooks), obj.CreationTimestamp
		}),
	}
}

type strategy struct{}

func (strategy) Default(obj runtime.Object) {
	cfg := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	for i := range cfg.Webhooks {
		DefaultWebhook(&cfg.Webhooks[i])
	}
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Generation = 1
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validate(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration))
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newCfg := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	oldCfg := old.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	newCfg.Generation = registry.NextGeneration(oldCfg.Generation, !apiequality.Semantic.DeepEqual(newCfg.Webhooks, oldCfg.Webhooks))
}

func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return validate(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration))
}

func validate(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	hooksPath := field.NewPath("webhooks")
	for i := range cfg.Webhooks {
		allErrs = append(allErrs, ValidateWebhook(&cfg.Webhooks[i], names, hooksPath.Index(i))...)
	}
	return allErrs
}

// Table renders webhook configurations as upstream: NAME WEBHOOKS AGE.
func Table[T runtime.Object](c clock.PassiveClock, row func(T) (name string, webhooks int, created metav1.Time)) registry.TableConvertor {
	cols := []metav1.TableColumnDefinition{
		tableutil.NameColumn(),
		tableutil.Column("Webhooks", "integer", 0, "Webhooks indicates the number of webhooks in the configuration."),
		tableutil.AgeColumn(),
	}
	return tableutil.New(cols, func(obj T) []interface{} {
		name, n, created := row(obj)
		return []interface{}{name, int64(n), tableutil.Age(created, c.Now())}
	})
}
