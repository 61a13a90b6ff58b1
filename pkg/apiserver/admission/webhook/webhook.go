// Package webhook is dynamic admission: it calls the HTTPS webhooks that
// MutatingWebhookConfiguration and ValidatingWebhookConfiguration objects
// register, with an admission.k8s.io/v1 AdmissionReview, applies the
// JSONPatch a mutating webhook answers with, and honours rules,
// namespaceSelector, objectSelector, failurePolicy and timeoutSeconds.
//
// A webhook is reached by clientConfig.url, or by clientConfig.service as
// https://<name>.<namespace>.svc:<port><path> when that name resolves: there
// is no cluster DNS or service proxy in the apiserver, so a service
// reference that does not resolve counts as a failed call. caBundle, when
// set, is the only trust root for the webhook's certificate.
// matchConditions, reinvocationPolicy and matchPolicy Equivalent are not
// supported (the request is matched exactly as it was made).
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
)

// defaultTimeout is the API's default timeoutSeconds.
const defaultTimeout = 10 * time.Second

// Resolver turns a service reference into a host to dial; the default
// resolves <name>.<namespace>.svc with the system resolver.
type Resolver func(ctx context.Context, namespace, name string) (host string, err error)

func dnsResolver(ctx context.Context, namespace, name string) (string, error) {
	host := name + "." + namespace + ".svc"
	if _, err := net.DefaultResolver.LookupHost(ctx, host); err != nil {
		return "", fmt.Errorf("service %s/%s: %s does not resolve (kube-lite has no cluster DNS; use clientConfig.url): %w", namespace, name, host, err)
	}
	return host, nil
}

// caller sends AdmissionReviews; both plugins share its clients.
type caller struct {
	namespaces NamespaceGetter
	resolve    Resolver

	mu      sync.Mutex
	clients map[string]*http.Client // by caBundle
}

func newCaller(namespaces NamespaceGetter) *caller {
	return &caller{namespaces: namespaces, resolve: dnsResolver, clients: map[string]*http.Client{}}
}

func (c *caller) client(caBundle []byte) (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc, ok := c.clients[string(caBundle)]; ok {
		return hc, nil
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("caBundle holds no PEM certificate")
		}
		tlsCfg.RootCAs = pool
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16}}
	c.clients[string(caBundle)] = hc
	return hc, nil
}

func (c *caller) url(ctx context.Context, cc admissionregistrationv1.WebhookClientConfig) (string, error) {
	if cc.URL != nil {
		return *cc.URL, nil
	}
	if cc.Service == nil {
		return "", errors.New("clientConfig has neither url nor service")
	}
	host, err := c.resolve(ctx, cc.Service.Namespace, cc.Service.Name)
	if err != nil {
		return "", err
	}
	port := int32(443)
	if cc.Service.Port != nil {
		port = *cc.Service.Port
	}
	path := ""
	if cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(int(port))) + path, nil
}

// encode renders obj as JSON with its apiVersion and kind.
func encode(obj runtime.Object, a *admission.Attributes) (runtime.RawExtension, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return runtime.RawExtension{}, nil
	}
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(a.ObjectKind())
	b, err := json.Marshal(c)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encode %s: %w", a.ObjectKind().Kind, err)
	}
	return runtime.RawExtension{Raw: b}, nil
}

func encodeOptions(options func() runtime.Object) runtime.RawExtension {
	if options == nil {
		return runtime.RawExtension{}
	}
	opts := options()
	if opts == nil || reflect.ValueOf(opts).IsNil() {
		return runtime.RawExtension{}
	}
	c := opts.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind(reflect.TypeOf(c).Elem().Name()))
	b, err := json.Marshal(c)
	if err != nil {
		return runtime.RawExtension{}
	}
	return runtime.RawExtension{Raw: b}
}

func reviewRequest(a *admission.Attributes) (*admissionv1.AdmissionRequest, error) {
	gvk := a.ObjectKind()
	gvr := a.Resource.GroupVersionResource()
	kind := metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
	res := metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}
	obj, err := encode(a.Object, a)
	if err != nil {
		return nil, err
	}
	old, err := encode(a.OldObject, a)
	if err != nil {
		return nil, err
	}
	dry := a.DryRun
	r := &admissionv1.AdmissionRequest{
		UID: uuid.NewUUID(), Kind: kind, Resource: res, SubResource: a.Subresource,
		RequestKind: &kind, RequestResource: &res, RequestSubResource: a.Subresource,
		Name: a.Name, Namespace: a.Namespace, Operation: admissionv1.Operation(a.Operation),
		Object: obj, OldObject: old, DryRun: &dry, Options: encodeOptions(a.Options),
	}
	if u := a.User; u != nil {
		r.UserInfo = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
		if len(u.Extra) > 0 {
			r.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range u.Extra {
				r.UserInfo.Extra[k] = v
			}
		}
	}
	return r, nil
}

// call sends one review and returns the webhook's response.
func (c *caller) call(ctx context.Context, h *hook, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	timeout := defaultTimeout
	if h.timeoutSeconds != nil && *h.timeoutSeconds > 0 {
		timeout = time.Duration(*h.timeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url, err := c.url(ctx, h.clientConfig)
	if err != nil {
		return nil, err
	}
	hc, err := c.client(h.clientConfig.CABundle)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		return nil, fmt.Errorf("encode AdmissionReview: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	resp, err := hc.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 3<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("webhook answered %s", resp.Status)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &review); err != nil {
		return nil, fmt.Errorf("decode AdmissionReview: %w", err)
	}
	if review.Response == nil {
		return nil, errors.New("webhook response was absent")
	}
	if review.Response.UID != req.UID {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", req.UID, review.Response.UID)
	}
	return review.Response, nil
}

// denied is upstream's refusal of a webhook: its own status, code 400 when
// it gave none.
func denied(name string, result *metav1.Status) error {
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result.DeepCopy()
		st.Status = metav1.StatusFailure
	}
	by := fmt.Sprintf("admission webhook %q denied the request", name)
	switch {
	case st.Message != "":
		st.Message = by + ": " + st.Message
	case st.Reason != "":
		st.Message = by + ": " + string(st.Reason)
	default:
		st.Message = by + " without explanation"
	}
	if st.Code < 400 {
		st.Code = http.StatusBadRequest
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// dispatch decides whether h applies to the request and calls it. A nil
// response with a nil error means the webhook did not apply or its failure
// is ignored.
func (c *caller) dispatch(ctx context.Context, h *hook, a *admission.Attributes) (*admissionv1.AdmissionResponse, error) {
	if !matchesRules(h.rules, a) {
		return nil, nil
	}
	failed := func(err error) (*admissionv1.AdmissionResponse, error) {
		if h.failurePolicy == admissionregistrationv1.Ignore {
			slog.Warn("admission webhook failed, ignored by its failurePolicy", "webhook", h.name, "err", err)
			return nil, nil
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("failed calling webhook %q: %w", h.name, err))
	}
	ok, err := matchesObject(h, a)
	if err != nil {
		return failed(err)
	}
	if !ok {
		return nil, nil
	}
	if ok, err = matchesNamespace(ctx, h, a, c.namespaces); err != nil {
		return failed(err)
	}
	if !ok {
		return nil, nil
	}
	if a.DryRun && h.sideEffects != nil && *h.sideEffects != admissionregistrationv1.SideEffectClassNone &&
		*h.sideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q has side effects and does not support dry run", h.name))
	}
	req, err := reviewRequest(a)
	if err != nil {
		return nil, err
	}
	resp, err := c.call(ctx, h, req)
	if err != nil {
		return failed(fmt.Errorf("failed to call webhook: %w", err))
	}
	if !resp.Allowed {
		return nil, denied(h.name, resp.Result)
	}
	return resp, nil
}

// Mutating is the MutatingAdmissionWebhook plugin.
type Mutating struct {
	configs *Cache[*admissionregistrationv1.MutatingWebhookConfiguration]
	*caller
}

// NewMutating returns the plugin over the configurations in configs.
func NewMutating(configs *Cache[*admissionregistrationv1.MutatingWebhookConfiguration], namespaces NamespaceGetter) *Mutating {
	return &Mutating{configs: configs, caller: newCaller(namespaces)}
}

// WithResolver replaces how service references are resolved (tests).
func (m *Mutating) WithResolver(r Resolver) *Mutating { m.resolve = r; return m }

// Name implements admission.Mutator.
func (m *Mutating) Name() string { return "MutatingAdmissionWebhook" }

// Admit implements admission.Mutator: webhooks run in the order of their
// configurations' names, each seeing the previous ones' patches.
func (m *Mutating) Admit(ctx context.Context, a *admission.Attributes) error {
	if skipped(a) {
		return nil
	}
	configs, err := m.configs.List(ctx)
	if err != nil {
		return err
	}
	for _, cfg := range configs {
		for i := range cfg.Webhooks {
			h := fromMutating(&cfg.Webhooks[i])
			resp, err := m.dispatch(ctx, &h, a)
			if err != nil {
				return err
			}
			if resp == nil || len(resp.Patch) == 0 || a.Object == nil {
				continue
			}
			if err := applyPatch(a, resp); err != nil {
				return apierrors.NewInternalError(fmt.Errorf("webhook %q: %w", h.name, err))
			}
		}
	}
	return nil
}

// applyPatch applies a JSONPatch response to a.Object in place (the
// handler holds the same pointer) and defaults what the patch added.
func applyPatch(a *admission.Attributes, resp *admissionv1.AdmissionResponse) error {
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		return errors.New("patch given without patchType JSONPatch")
	}
	p, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return fmt.Errorf("decode patch: %w", err)
	}
	cur, err := encode(a.Object, a)
	if err != nil {
		return err
	}
	patched, err := p.Apply(cur.Raw)
	if err != nil {
		return fmt.Errorf("apply patch: %w", err)
	}
	fresh := reflect.New(reflect.TypeOf(a.Object).Elem())
	if err := json.Unmarshal(patched, fresh.Interface()); err != nil {
		return fmt.Errorf("decode patched object: %w", err)
	}
	reflect.ValueOf(a.Object).Elem().Set(fresh.Elem())
	// The resource's defaults are for its own kind, not for what a
	// subresource carries (a Binding on pods/binding).
	if a.Resource.Strategy != nil && a.Kind.Empty() {
		a.Resource.Strategy.Default(a.Object)
	}
	a.Object.GetObjectKind().SetGroupVersionKind(a.ObjectKind())
	return nil
}

// skipped keeps webhook configurations themselves out of webhooks' reach,
// as upstream, so a broken webhook cannot lock its own fix out.
func skipped(a *admission.Attributes) bool {
	return a.Resource == nil || a.Resource.GroupVersion.Group == admissionregistrationv1.GroupName
}

// Validating is the ValidatingAdmissionWebhook plugin.
type Validating struct {
	configs *Cache[*admissionregistrationv1.ValidatingWebhookConfiguration]
	*caller
}

// NewValidating returns the plugin over the configurations in configs.
func NewValidating(configs *Cache[*admissionregistrationv1.ValidatingWebhookConfiguration], namespaces NamespaceGetter) *Validating {
	return &Validating{configs: configs, caller: newCaller(namespaces)}
}

// WithResolver replaces how service references are resolved (tests).
func (v *Validating) WithResolver(r Resolver) *Validating { v.resolve = r; return v }

// Name implements admission.Validator.
func (v *Validating) Name() string { return "ValidatingAdmissionWebhook" }

// Validate implements admission.Validator; the first refusal wins.
func (v *Validating) Validate(ctx context.Context, a *admission.Attributes) error {
	if skipped(a) {
		return nil
	}
	configs, err := v.configs.List(ctx)
	if err != nil {
		return err
	}
	for _, cfg := range configs {
		for i := range cfg.Webhooks {
			h := fromValidating(&cfg.Webhooks[i])
			if _, err := v.dispatch(ctx, &h, a); err != nil {
				return err
			}
		}
	}
	return nil
}
