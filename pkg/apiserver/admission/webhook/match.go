package webhook

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
)

// NamespaceGetter reads a namespace (for namespaceSelector). The namespace
// may be shared with other readers: do not modify it.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// hook is what the two webhook kinds have in common.
type hook struct {
	name              string
	clientConfig      admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
	failurePolicy     admissionregistrationv1.FailurePolicyType
	namespaceSelector *metav1.LabelSelector
	objectSelector    *metav1.LabelSelector
	sideEffects       *admissionregistrationv1.SideEffectClass
	timeoutSeconds    *int32
}

func fromMutating(w *admissionregistrationv1.MutatingWebhook) hook {
	return hook{w.Name, w.ClientConfig, w.Rules, policy(w.FailurePolicy), w.NamespaceSelector, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds}
}

func fromValidating(w *admissionregistrationv1.ValidatingWebhook) hook {
	return hook{w.Name, w.ClientConfig, w.Rules, policy(w.FailurePolicy), w.NamespaceSelector, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds}
}

// policy defaults the failure policy to Fail, as the API does.
func policy(p *admissionregistrationv1.FailurePolicyType) admissionregistrationv1.FailurePolicyType {
	if p == nil {
		return admissionregistrationv1.Fail
	}
	return *p
}

// matchesRules reports whether one of the rules covers the request.
func matchesRules(rules []admissionregistrationv1.RuleWithOperations, a *admission.Attributes) bool {
	gv := a.Resource.GroupVersion
	res := a.Resource.Name
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	for _, r := range rules {
		if matchOp(r.Operations, a.Operation) && matchAny(r.APIGroups, gv.Group) && matchAny(r.APIVersions, gv.Version) &&
			matchResource(r.Resources, a.Resource.Name, a.Subresource) && matchScope(r.Scope, a.Resource.Namespaced) {
			return true
		}
	}
	return false
}

func matchOp(ops []admissionregistrationv1.OperationType, op admission.Operation) bool {
	for _, o := range ops {
		if o == admissionregistrationv1.OperationAll || string(o) == string(op) {
			return true
		}
	}
	return false
}

func matchAny(list []string, v string) bool {
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}

// matchResource follows upstream's rules: "*" is every resource but no
// subresource, "*/*" everything, "pods/*" every subresource of pods,
// "*/status" the status of everything.
func matchResource(patterns []string, resource, sub string) bool {
	for _, p := range patterns {
		pr, ps, hasSub := strings.Cut(p, "/")
		if pr != "*" && pr != resource {
			continue
		}
		if !hasSub {
			if sub == "" {
				return true
			}
			continue
		}
		if ps == "*" || ps == sub {
			return true
		}
	}
	return false
}

func matchScope(scope *admissionregistrationv1.ScopeType, namespaced bool) bool {
	if scope == nil || *scope == admissionregistrationv1.AllScopes {
		return true
	}
	if *scope == admissionregistrationv1.NamespacedScope {
		return namespaced
	}
	return !namespaced
}

func selectorOf(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(ls)
}

func labelsOf(obj runtime.Object) labels.Set {
	if obj == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m.GetLabels()
}

// matchesObject applies objectSelector to the new or the old object.
func matchesObject(h *hook, a *admission.Attributes) (bool, error) {
	sel, err := selectorOf(h.objectSelector)
	if err != nil {
		return false, fmt.Errorf("invalid objectSelector of webhook %q: %w", h.name, err)
	}
	if sel.Empty() {
		return true, nil
	}
	return (a.Object != nil && sel.Matches(labelsOf(a.Object))) || (a.OldObject != nil && sel.Matches(labelsOf(a.OldObject))), nil
}

// matchesNamespace applies namespaceSelector: to the namespace's labels for
// namespaced objects, to the object itself for namespaces, and not at all
// to other cluster-scoped objects.
func matchesNamespace(ctx context.Context, h *hook, a *admission.Attributes, namespaces NamespaceGetter) (bool, error) {
	sel, err := selectorOf(h.namespaceSelector)
	if err != nil {
		return false, fmt.Errorf("invalid namespaceSelector of webhook %q: %w", h.name, err)
	}
	if sel.Empty() {
		return true, nil
	}
	if a.Resource.GroupVersion.Group == "" && a.Resource.Name == "namespaces" {
		obj := a.Object
		if obj == nil {
			obj = a.OldObject
		}
		return sel.Matches(labelsOf(obj)), nil
	}
	if !a.Resource.Namespaced || a.Namespace == "" {
		return true, nil
	}
	ns, err := namespaces.GetNamespace(ctx, a.Namespace)
	if err != nil {
		return false, fmt.Errorf("namespace %s for webhook %q: %w", a.Namespace, h.name, err)
	}
	return sel.Matches(labels.Set(ns.Labels)), nil
}
