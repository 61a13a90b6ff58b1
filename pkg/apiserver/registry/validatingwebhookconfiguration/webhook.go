package validatingwebhookconfiguration

import (
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// DefaultWebhook fills what upstream defaults on a webhook: fail closed,
// match equivalent versions, select every namespace and object, 10s timeout,
// rules of any scope, service port 443.
func DefaultWebhook(h *admissionregistrationv1.ValidatingWebhook) {
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
	for i := range h.Rules {
		if h.Rules[i].Scope == nil {
			h.Rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
		}
	}
	if h.ClientConfig.Service != nil && h.ClientConfig.Service.Port == nil {
		h.ClientConfig.Service.Port = ptr.To[int32](443)
	}
}

// ValidateWebhook checks one webhook; names collects the names seen so far
// in its configuration, where they must be unique.
func ValidateWebhook(h *admissionregistrationv1.ValidatingWebhook, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	namePath := fldPath.Child("name")
	allErrs = append(allErrs, utilvalidation.IsFullyQualifiedName(namePath, h.Name)...)
	if names.Has(h.Name) {
		allErrs = append(allErrs, field.Duplicate(namePath, h.Name))
	}
	names.Insert(h.Name)

	for i, r := range h.Rules {
		allErrs = append(allErrs, validateRule(&r, fldPath.Child("rules").Index(i))...)
	}
	if h.FailurePolicy != nil && *h.FailurePolicy != admissionregistrationv1.Fail && *h.FailurePolicy != admissionregistrationv1.Ignore {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("failurePolicy"), *h.FailurePolicy,
			[]admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Ignore, admissionregistrationv1.Fail}))
	}
	if h.MatchPolicy != nil && *h.MatchPolicy != admissionregistrationv1.Exact && *h.MatchPolicy != admissionregistrationv1.Equivalent {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("matchPolicy"), *h.MatchPolicy,
			[]admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Exact, admissionregistrationv1.Equivalent}))
	}
	// v1 webhooks must declare that they have no side effects, so that
	// dry-run requests can safely call them.
	sideEffects := []admissionregistrationv1.SideEffectClass{admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun}
	switch {
	case h.SideEffects == nil:
		allErrs = append(allErrs, field.Required(fldPath.Child("sideEffects"), fmt.Sprintf("must specify one of %v", joinSideEffects(sideEffects))))
	case *h.SideEffects != sideEffects[0] && *h.SideEffects != sideEffects[1]:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("sideEffects"), *h.SideEffects, sideEffects))
	}
	if t := h.TimeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	for _, sel := range []struct {
		name string
		s    *metav1.LabelSelector
	}{{"namespaceSelector", h.NamespaceSelector}, {"objectSelector", h.ObjectSelector}} {
		if sel.s != nil {
			allErrs = append(allErrs, metav1validation.ValidateLabelSelector(sel.s, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child(sel.name))...)
		}
	}
	allErrs = append(allErrs, validateReviewVersions(h.AdmissionReviewVersions, fldPath.Child("admissionReviewVersions"))...)
	allErrs = append(allErrs, validateClientConfig(&h.ClientConfig, fldPath.Child("clientConfig"))...)
	allErrs = append(allErrs, validateMatchConditions(h.MatchConditions, fldPath.Child("matchConditions"))...)
	return allErrs
}

func joinSideEffects(s []admissionregistrationv1.SideEffectClass) string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return strings.Join(out, ", ")
}

var operations = []admissionregistrationv1.OperationType{
	admissionregistrationv1.OperationAll, admissionregistrationv1.Create, admissionregistrationv1.Update,
	admissionregistrationv1.Delete, admissionregistrationv1.Connect,
}

func validateRule(r *admissionregistrationv1.RuleWithOperations, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	opsPath := fldPath.Child("operations")
	if len(r.Operations) == 0 {
		allErrs = append(allErrs, field.Required(opsPath, ""))
	}
	if len(r.Operations) > 1 && hasWildcard(r.Operations) {
		allErrs = append(allErrs, field.Invalid(opsPath, r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !sets.New(operations...).Has(op) {
			allErrs = append(allErrs, field.NotSupported(opsPath.Index(i), op, operations))
		}
	}
	for _, list := range []struct {
		name   string
		values []string
	}{{"apiGroups", r.APIGroups}, {"apiVersions", r.APIVersions}, {"resources", r.Resources}} {
		p := fldPath.Child(list.name)
		if len(list.values) == 0 {
			allErrs = append(allErrs, field.Required(p, ""))
			continue
		}
		if len(list.values) > 1 && sets.New(list.values...).Has("*") {
			allErrs = append(allErrs, field.Invalid(p, list.values, "if '*' is present, must not specify other "+list.name))
		}
	}
	for i, v := range r.APIVersions {
		if v == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("apiVersions").Index(i), ""))
		}
	}
	for i, res := range r.Resources {
		if res == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("resources").Index(i), ""))
		}
	}
	scopes := []admissionregistrationv1.ScopeType{admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope, admissionregistrationv1.AllScopes}
	if r.Scope != nil && !sets.New(scopes...).Has(*r.Scope) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("scope"), *r.Scope, scopes))
	}
	return allErrs
}

func hasWildcard(ops []admissionregistrationv1.OperationType) bool {
	for _, op := range ops {
		if op == admissionregistrationv1.OperationAll {
			return true
		}
	}
	return false
}

// reviewVersions are the AdmissionReview versions a kube-lite apiserver can
// send; a webhook must accept at least one.
var reviewVersions = []string{"v1", "v1beta1"}

func validateReviewVersions(versions []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	accepted := false
	for i, v := range versions {
		allErrs = append(allErrs, validation.Messages(fldPath.Index(i), v, utilvalidation.IsDNS1035Label(v))...)
		if seen.Has(v) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), v))
		}
		seen.Insert(v)
		accepted = accepted || v == reviewVersions[0] || v == reviewVersions[1]
	}
	if !accepted {
		allErrs = append(allErrs, field.Required(fldPath, fmt.Sprintf("must specify one of %s", strings.Join(reviewVersions, ", "))))
	}
	return allErrs
}

func validateClientConfig(cc *admissionregistrationv1.WebhookClientConfig, fldPath *field.Path) field.ErrorList {
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		return field.ErrorList{field.Required(fldPath, "exactly one of url or service is required")}
	case cc.URL != nil:
		return validateURL(*cc.URL, fldPath.Child("url"))
	default:
		return validateService(cc.Service, fldPath.Child("service"))
	}
}

// validateURL accepts what the webhook client can call: an absolute https URL
// without credentials, query or fragment.
func validateURL(raw string, fldPath *field.Path) field.ErrorList {
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, raw, "url must be a valid URL: "+err.Error())}
	}
	var allErrs field.ErrorList
	if u.Scheme != "https" {
		allErrs = append(allErrs, field.Invalid(fldPath, u.Scheme, "'https' is the only allowed URL scheme"))
	}
	if u.Host == "" {
		allErrs = append(allErrs, field.Invalid(fldPath, u.Host, "host must be specified"))
	}
	if u.User != nil {
		allErrs = append(allErrs, field.Invalid(fldPath, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		allErrs = append(allErrs, field.Invalid(fldPath, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		allErrs = append(allErrs, field.Invalid(fldPath, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return allErrs
}

func validateService(s *admissionregistrationv1.ServiceReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), "service name is required"))
	} else {
		allErrs = append(allErrs, validation.Messages(fldPath.Child("name"), s.Name, utilvalidation.IsDNS1123Label(s.Name))...)
	}
	if s.Namespace == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), "service namespace is required"))
	} else {
		allErrs = append(allErrs, validation.Messages(fldPath.Child("namespace"), s.Namespace, utilvalidation.IsDNS1123Label(s.Namespace))...)
	}
	if p := ptr.Deref(s.Path, ""); s.Path != nil && !strings.HasPrefix(p, "/") {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), p, "must start with a '/'"))
	}
	if s.Port != nil {
		allErrs = append(allErrs, validation.Messages(fldPath.Child("port"), *s.Port, utilvalidation.IsValidPortNum(int(*s.Port)))...)
	}
	return allErrs
}

// maxMatchConditions bounds the CEL expressions evaluated per request, as upstream.
const maxMatchConditions = 64

// validateMatchConditions checks the shape of match conditions; kube-lite
// does not compile their CEL, so it cannot vouch for the expressions.
func validateMatchConditions(conds []admissionregistrationv1.MatchCondition, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(conds) > maxMatchConditions {
		allErrs = append(allErrs, field.TooMany(fldPath, len(conds), maxMatchConditions))
	}
	seen := sets.New[string]()
	for i, c := range conds {
		p := fldPath.Index(i)
		if c.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		} else {
			allErrs = append(allErrs, validation.Messages(p.Child("name"), c.Name, utilvalidation.IsQualifiedName(c.Name))...)
			if seen.Has(c.Name) {
				allErrs = append(allErrs, field.Duplicate(p.Child("name"), c.Name))
			}
			seen.Insert(c.Name)
		}
		if strings.TrimSpace(c.Expression) == "" {
			allErrs = append(allErrs, field.Required(p.Child("expression"), ""))
		}
	}
	return allErrs
}
