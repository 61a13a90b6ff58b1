package apiserver

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/spf13/pflag"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authn"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authz/abac"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authz/node"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authz/rbac"
	"github.com/kube-lite/kube-lite/pkg/apiserver/authz/webhook"
	"github.com/kube-lite/kube-lite/pkg/apiserver/bootstrappolicy"
	"github.com/kube-lite/kube-lite/pkg/apiserver/handler"
	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
	"github.com/kube-lite/kube-lite/pkg/pki"
	"github.com/kube-lite/kube-lite/pkg/storage"
)

// Authorization modes, as upstream's --authorization-mode values.
const (
	ModeNode        = "Node"
	ModeRBAC        = "RBAC"
	ModeABAC        = "ABAC"
	ModeWebhook     = "Webhook"
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
)

// DefaultServiceAccountIssuer is the issuer of service-account tokens
// unless --service-account-issuer says otherwise.
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc"

// SecurityOptions configure authentication and authorization, with
// upstream's flag names. HTTP Basic authentication does not exist here on
// purpose (upstream removed it as unsafe).
type SecurityOptions struct {
	// ClientCAFile verifies client certificates (CN user, O groups).
	ClientCAFile string
	// TokenAuthFile is a CSV of static tokens: token,user,uid,"g1,g2".
	TokenAuthFile string
	// ServiceAccountKeyFiles verify service-account tokens; empty means
	// the signing key's public half.
	ServiceAccountKeyFiles []string
	// ServiceAccountSigningKeyFile signs tokens from TokenRequest.
	ServiceAccountSigningKeyFile string
	// ServiceAccountIssuers: the first one issues, all are accepted.
	ServiceAccountIssuers []string
	// APIAudiences a token must name one of; empty means the issuers.
	APIAudiences []string
	// TokenWebhookConfigFile is a kubeconfig naming a TokenReview service.
	TokenWebhookConfigFile string
	TokenWebhookCacheTTL   time.Duration
	// AnonymousAuth lets requests without credentials in as system:anonymous.
	AnonymousAuth bool
	// ExtendTokenExpiration makes the automatic token volume's tokens
	// (3607 s, bound to a pod, for the API) valid for a year, warning after
	// the hour asked, as upstream.
	ExtendTokenExpiration bool

	AuthorizationModes             []string
	AuthorizationPolicyFile        string
	AuthorizationWebhookConfigFile string
	AuthorizationWebhookCacheTTL   time.Duration
}

// NewSecurityOptions returns upstream's defaults: no anonymous requests,
// Node then RBAC authorization.
func NewSecurityOptions() SecurityOptions {
	return SecurityOptions{
		ServiceAccountIssuers:        []string{DefaultServiceAccountIssuer},
		ExtendTokenExpiration:        true,
		TokenWebhookCacheTTL:         2 * time.Minute,
		AuthorizationModes:           []string{ModeNode, ModeRBAC},
		AuthorizationWebhookCacheTTL: 5 * time.Minute,
	}
}

// AddFlags registers the flags on fs.
func (o *SecurityOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "CA bundle that verifies client certificates; the certificate's CommonName is the user, its Organizations the groups.")
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, "CSV file of static bearer tokens: token,user,uid,\"group1,group2\".")
	fs.StringSliceVar(&o.ServiceAccountKeyFiles, "service-account-key-file", o.ServiceAccountKeyFiles, "PEM file(s) with the public keys (or certificates, or private keys) that verify service-account tokens.")
	fs.StringVar(&o.ServiceAccountSigningKeyFile, "service-account-signing-key-file", o.ServiceAccountSigningKeyFile, "RSA private key that signs service-account tokens (TokenRequest).")
	fs.StringSliceVar(&o.ServiceAccountIssuers, "service-account-issuer", o.ServiceAccountIssuers, "Issuer of service-account tokens; the first one issues, all are accepted.")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences, "Audiences a token must be for; defaults to the service-account issuers.")
	fs.StringVar(&o.TokenWebhookConfigFile, "authentication-token-webhook-config-file", o.TokenWebhookConfigFile, "kubeconfig naming an HTTPS service that reviews bearer tokens (TokenReview).")
	fs.DurationVar(&o.TokenWebhookCacheTTL, "authentication-token-webhook-cache-ttl", o.TokenWebhookCacheTTL, "How long accepted webhook token reviews are remembered.")
	fs.BoolVar(&o.ExtendTokenExpiration, "service-account-extend-token-expiration", o.ExtendTokenExpiration, "Tokens of the automatic service-account volume (asked for 3607 s, bound to a pod, for the API's audiences) are valid for a year, and say when the hour asked for ended (warnafter), so that a kubelet late in refreshing them breaks nothing.")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth, "Let requests without credentials in as system:anonymous (group system:unauthenticated).")
	fs.StringSliceVar(&o.AuthorizationModes, "authorization-mode", o.AuthorizationModes, "Authorizers asked in order: Node, RBAC, ABAC, Webhook, AlwaysAllow, AlwaysDeny.")
	fs.StringVar(&o.AuthorizationPolicyFile, "authorization-policy-file", o.AuthorizationPolicyFile, "ABAC policy file, one JSON Policy per line (--authorization-mode=ABAC).")
	fs.StringVar(&o.AuthorizationWebhookConfigFile, "authorization-webhook-config-file", o.AuthorizationWebhookConfigFile, "kubeconfig naming an HTTPS service that reviews requests (SubjectAccessReview) for --authorization-mode=Webhook.")
	fs.DurationVar(&o.AuthorizationWebhookCacheTTL, "authorization-webhook-cache-authorized-ttl", o.AuthorizationWebhookCacheTTL, "How long allowed webhook decisions are remembered (others half as long).")
}

// Validate reports inconsistent settings.
func (o *SecurityOptions) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for _, m := range o.AuthorizationModes {
		switch m {
		case ModeNode, ModeRBAC, ModeABAC, ModeWebhook, ModeAlwaysAllow, ModeAlwaysDeny:
		default:
			errs = append(errs, fmt.Errorf("--authorization-mode: unknown mode %q", m))
		}
		if seen[m] {
			errs = append(errs, fmt.Errorf("--authorization-mode: %s given twice", m))
		}
		seen[m] = true
	}
	if len(o.AuthorizationModes) == 0 {
		errs = append(errs, errors.New("--authorization-mode: at least one mode is required"))
	}
	if seen[ModeABAC] != (o.AuthorizationPolicyFile != "") {
		errs = append(errs, errors.New("--authorization-policy-file goes with --authorization-mode=ABAC"))
	}
	if seen[ModeWebhook] != (o.AuthorizationWebhookConfigFile != "") {
		errs = append(errs, errors.New("--authorization-webhook-config-file goes with --authorization-mode=Webhook"))
	}
	if len(o.ServiceAccountIssuers) == 0 {
		errs = append(errs, errors.New("--service-account-issuer may not be empty"))
	}
	return errors.Join(errs...)
}

// security is the assembled authentication and authorization.
type security struct {
	authenticator authn.Request
	// tokens authenticate bearer tokens, also for TokenReview.
	tokens     authn.BearerToken
	anonymous  bool
	authorizer authz.Authorizer
	signer     *authn.Signer
	audiences  []string
	// extendTokens: --service-account-extend-token-expiration.
	extendTokens bool
	// rbac lists rules for SelfSubjectRulesReview; modes are the
	// authorization modes, which say whether that list is complete.
	rbac  *rbac.Authorizer
	modes []string
	// starters fill the in-memory indexes (RBAC, node graph); lifetime is
	// the server's context, which they follow until it ends.
	lifetime context.Context
	starters []func(ctx, lifetime context.Context) error
	// started keeps a second Bootstrap from following everything twice.
	started bool
}

func newSecurity(ctx context.Context, s *Server, o *SecurityOptions, clk clock.Clock) (*security, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	sec := &security{anonymous: o.AnonymousAuth, extendTokens: o.ExtendTokenExpiration, lifetime: ctx}
	sec.audiences = o.APIAudiences
	if len(sec.audiences) == 0 {
		sec.audiences = o.ServiceAccountIssuers
	}

	var reqAuth authn.Union
	if o.ClientCAFile != "" {
		pool, err := pki.LoadCertPool(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		reqAuth = append(reqAuth, &authn.X509{Roots: pool, Clock: clk})
	}
	var tokens authn.BearerToken
	if o.TokenAuthFile != "" {
		tf, err := authn.LoadTokenFile(o.TokenAuthFile)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, tf)
	}
	keyFiles := o.ServiceAccountKeyFiles
	if len(keyFiles) == 0 && o.ServiceAccountSigningKeyFile != "" {
		// As upstream: what the server signs, it accepts.
		keyFiles = []string{o.ServiceAccountSigningKeyFile}
	}
	if len(keyFiles) > 0 {
		keys, err := authn.LoadPublicKeys(keyFiles...)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, &authn.ServiceAccountTokens{Keys: keys, Issuers: o.ServiceAccountIssuers,
			Audiences: sec.audiences, Objects: boundObjects{s: s}, Clock: clk})
	}
	if o.ServiceAccountSigningKeyFile != "" {
		key, err := authn.LoadSigningKey(o.ServiceAccountSigningKeyFile)
		if err != nil {
			return nil, err
		}
		sec.signer = &authn.Signer{Key: key, Issuer: o.ServiceAccountIssuers[0], Clock: clk}
	}
	if o.TokenWebhookConfigFile != "" {
		wh, err := authn.NewTokenWebhook(o.TokenWebhookConfigFile, sec.audiences, o.TokenWebhookCacheTTL, clk)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, wh)
	}
	if len(tokens) > 0 {
		reqAuth = append(reqAuth, tokens)
	}
	sec.tokens = tokens
	sec.authenticator = reqAuth

	var union authz.Union
	for _, m := range o.AuthorizationModes {
		switch m {
		case ModeNode:
			z := node.New(node.NewGraph(), podReader{s: s})
			union = append(union, z)
			pods, err := s.source(schema.GroupResource{Resource: "pods"})
			if err != nil {
				return nil, err
			}
			sec.starters = append(sec.starters, func(ctx, lifetime context.Context) error {
				return startWithin(ctx, lifetime, func(c context.Context) error { return z.Start(c, clk, pods) })
			})
		case ModeRBAC:
			z := rbac.New()
			union = append(union, z)
			sec.rbac = z
			var src rbac.Sources
			var err error
			for _, p := range []struct {
				dst *authz.Source
				res string
			}{{&src.Roles, "roles"}, {&src.RoleBindings, "rolebindings"}, {&src.ClusterRoles, "clusterroles"}, {&src.ClusterRoleBindings, "clusterrolebindings"}} {
				if *p.dst, err = s.source(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: p.res}); err != nil {
					return nil, err
				}
			}
			sec.starters = append(sec.starters, func(ctx, lifetime context.Context) error {
				if err := ensureBootstrapPolicy(ctx, s, clk); err != nil {
					return err
				}
				return startWithin(ctx, lifetime, func(c context.Context) error { return z.Start(c, clk, src) })
			})
		case ModeABAC:
			z, err := abac.LoadFile(o.AuthorizationPolicyFile)
			if err != nil {
				return nil, err
			}
			union = append(union, z)
		case ModeWebhook:
			z, err := webhook.New(o.AuthorizationWebhookConfigFile, o.AuthorizationWebhookCacheTTL, clk)
			if err != nil {
				return nil, err
			}
			union = append(union, z)
		case ModeAlwaysAllow:
			union = append(union, authz.AlwaysAllow{})
		case ModeAlwaysDeny:
			union = append(union, authz.AlwaysDeny{})
		}
	}
	sec.authorizer = union
	sec.modes = o.AuthorizationModes
	return sec, nil
}

// validators are the admission checks security adds: with RBAC, no one
// may grant permissions they do not hold.
func (sec *security) validators() []admission.Validator {
	if sec.rbac == nil {
		return nil
	}
	return []admission.Validator{rbac.EscalationCheck{Authorizer: sec.authorizer, Roles: sec.rbac}}
}

// startWithin runs start, whose followers live as long as lifetime, and
// gives up waiting when ctx ends.
func startWithin(ctx, lifetime context.Context, start func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- start(lifetime) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("authorization: waiting for the initial policy: %w", ctx.Err())
	}
}

func (s *Server) source(gr schema.GroupResource) (authz.Source, error) {
	st, ok := s.Store(gr)
	if !ok {
		return authz.Source{}, fmt.Errorf("authorization needs %s, which the server does not serve", gr)
	}
	return authz.Source{Store: st.Storage, Prefix: st.Prefix, NewList: st.NewList}, nil
}

// startSecurity creates the bootstrap policy and fills the authorizers'
// indexes; requests are denied (but for system:masters) until it is done.
func (s *Server) startSecurity(ctx context.Context) error {
	if s.security == nil || s.security.started {
		return nil
	}
	for _, start := range s.security.starters {
		if err := start(ctx, s.security.lifetime); err != nil {
			return err
		}
	}
	s.security.started = true
	return nil
}

// ensureBootstrapPolicy creates the bootstrap roles and bindings that are absent.
func ensureBootstrapPolicy(ctx context.Context, s *Server, clk clock.Clock) error {
	n, err := bootstrappolicy.Ensure(ctx, storeCreator{s: s, clock: clk})
	if err != nil {
		return err
	}
	if n > 0 {
		slog.InfoContext(ctx, "created bootstrap RBAC policy", "objects", n)
	}
	return nil
}

// storeCreator writes bootstrap objects straight to storage, as the
// handler's create would (defaults, UID, creation time).
type storeCreator struct {
	s     *Server
	clock clock.Clock
}

func (c storeCreator) CreateIfAbsent(ctx context.Context, obj runtime.Object) (bool, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	var st *handler.Store
	for _, cand := range c.s.stores {
		if cand.GroupVersion == gvk.GroupVersion() && cand.Kind == gvk.Kind {
			st = cand
			break
		}
	}
	if st == nil {
		return false, fmt.Errorf("no store for %s", gvk)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false, err
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(c.clock.Now()))
	st.Strategy.Default(obj)
	st.Strategy.PrepareForCreate(ctx, obj)
	err = st.Storage.Create(ctx, st.Key(m.GetNamespace(), m.GetName()), obj, st.New())
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrKeyExists):
		return false, nil
	}
	return false, fmt.Errorf("create %s %s: %w", gvk.Kind, m.GetName(), err)
}

// boundObjects reads, for service-account tokens, whether the objects a
// token is bound to still exist. It reads storage rather than a cache, so
// that a deleted service account stops authenticating at once.
type boundObjects struct{ s *Server }

func (b boundObjects) uid(ctx context.Context, resource, ns, name string) (string, bool, error) {
	st, ok := b.s.Store(schema.GroupResource{Resource: resource})
	if !ok {
		return "", false, fmt.Errorf("%s are not served", resource)
	}
	obj := st.New()
	if err := st.Storage.Get(ctx, st.Key(ns, name), obj); err != nil {
		if errors.Is(err, storage.ErrKeyNotFound) {
			return "", false, nil
		}
		return "", false, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false, err
	}
	if m.GetDeletionTimestamp() != nil {
		// Being deleted counts as gone, as upstream.
		return "", false, nil
	}
	return string(m.GetUID()), true, nil
}

func (b boundObjects) ServiceAccountUID(ctx context.Context, ns, name string) (string, bool, error) {
	return b.uid(ctx, "serviceaccounts", ns, name)
}

func (b boundObjects) PodUID(ctx context.Context, ns, name string) (string, bool, error) {
	return b.uid(ctx, "pods", ns, name)
}

func (b boundObjects) SecretUID(ctx context.Context, ns, name string) (string, bool, error) {
	return b.uid(ctx, "secrets", ns, name)
}

// podReader reads pods from storage: for the Node authorizer, when its
// graph has not caught up yet, and for NodeRestriction (nil when missing).
type podReader struct{ s *Server }

func (p podReader) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	st, ok := p.s.Store(schema.GroupResource{Resource: "pods"})
	if !ok {
		return nil, nil
	}
	pod := &corev1.Pod{}
	if err := st.Storage.Get(ctx, st.Key(ns, name), pod); err != nil {
		if errors.Is(err, storage.ErrKeyNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return pod, nil
}

func (p podReader) ListPods(ctx context.Context, ns string) ([]*corev1.Pod, error) {
	st, ok := p.s.Store(schema.GroupResource{Resource: "pods"})
	if !ok || ns == "" {
		return nil, nil
	}
	list := &corev1.PodList{}
	if err := st.Storage.List(ctx, st.Prefix+ns+"/", storage.ListOptions{}, list); err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// publicPath reports the health and version endpoints, served to anyone
// without authentication. Upstream serves them to system:unauthenticated
// through the system:public-info-viewer binding, but answers 401 when
// anonymous requests are off; keeping them open lets process supervisors
// and `make up` probe the server without credentials.
func publicPath(p string) bool {
	switch p {
	case "/livez", "/readyz", "/healthz", "/version":
		return true
	}
	return strings.HasPrefix(p, "/livez/") || strings.HasPrefix(p, "/readyz/") || strings.HasPrefix(p, "/healthz/")
}

// authenticate finds the request's user. Credentials that do not check
// out are a 401 even when anonymous requests are allowed, as upstream.
func (s *Server) authenticate(next http.Handler) http.Handler {
	sec := s.security
	if sec == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if publicPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		u, ok, err := sec.authenticator.AuthenticateRequest(r)
		switch {
		case ok:
		case err == nil && sec.anonymous:
			u = authn.AnonymousUser()
		default:
			if err != nil {
				slog.DebugContext(r.Context(), "unable to authenticate the request", "path", r.URL.Path, "err", err)
			}
			handler.WriteError(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		// The token has done its job; nothing downstream (proxies to
		// kubelets, logs) should see it.
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	})
}

// impersonate acts on the Impersonate-* headers (kubectl --as, --as-group):
// when the authenticated user may impersonate the named user, groups, UID
// and extras, the request goes on as that user, as upstream.
func (s *Server) impersonate(next http.Handler) http.Handler {
	sec := s.security
	if sec == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header
		name, groups, uid := h.Get("Impersonate-User"), h.Values("Impersonate-Group"), h.Get("Impersonate-Uid")
		extra := map[string][]string{}
		for k, v := range h {
			if key, ok := strings.CutPrefix(k, "Impersonate-Extra-"); ok && key != "" {
				extra[strings.ToLower(key)] = v
			}
		}
		if name == "" {
			if len(groups) > 0 || uid != "" || len(extra) > 0 {
				handler.WriteError(w, r, apierrors.NewBadRequest("requested impersonation of groups, a UID or extras without impersonating a user"))
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		actor, _ := request.UserFrom(r.Context())
		check := func(a authz.Attributes) bool {
			a.User, a.ResourceRequest, a.Verb = actor, true, "impersonate"
			if d, reason, _ := sec.authorizer.Authorize(r.Context(), a); d != authz.Allow {
				handler.WriteError(w, r, forbidden(a, reason))
				return false
			}
			return true
		}
		target := &request.User{Name: name, UID: uid}
		if ns, sa, ok := strings.Cut(strings.TrimPrefix(name, authn.ServiceAccountUserPrefix), ":"); ok && strings.HasPrefix(name, authn.ServiceAccountUserPrefix) {
			if !check(authz.Attributes{Resource: "serviceaccounts", Namespace: ns, Name: sa}) {
				return
			}
			target.Groups = append(target.Groups, "system:serviceaccounts", "system:serviceaccounts:"+ns)
		} else if !check(authz.Attributes{Resource: "users", Name: name}) {
			return
		}
		for _, g := range groups {
			if !check(authz.Attributes{Resource: "groups", Name: g}) {
				return
			}
			target.Groups = append(target.Groups, g)
		}
		if uid != "" && !check(authz.Attributes{APIGroup: "authentication.k8s.io", Resource: "uids", Name: uid}) {
			return
		}
		for k, vs := range extra {
			for _, v := range vs {
				if !check(authz.Attributes{APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: k, Name: v}) {
					return
				}
			}
		}
		if len(extra) > 0 {
			target.Extra = extra
		}
		switch {
		case name == authn.Anonymous:
			if !slices.Contains(target.Groups, authn.AllUnauthenticated) {
				target.Groups = append(target.Groups, authn.AllUnauthenticated)
			}
		case !slices.Contains(target.Groups, authn.AllAuthenticated):
			target.Groups = append(target.Groups, authn.AllAuthenticated)
		}
		for k := range h {
			if strings.HasPrefix(k, "Impersonate-") {
				h.Del(k)
			}
		}
		next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), target)))
	})
}

// authorize asks the authorizers; anything but Allow is a 403.
func (s *Server) authorize(next http.Handler) http.Handler {
	sec := s.security
	if sec == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if publicPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		info, ok := request.InfoFrom(r.Context())
		if !ok {
			info = request.Parse(r)
		}
		u, _ := request.UserFrom(r.Context())
		a := requestAttributes(r, info, u)
		d, reason, err := sec.authorizer.Authorize(r.Context(), a)
		if err != nil {
			slog.WarnContext(r.Context(), "authorization failed", "err", err)
		}
		if d == authz.Allow {
			next.ServeHTTP(w, r)
			return
		}
		handler.WriteError(w, r, forbidden(a, reason))
	})
}

// requestAttributes are the authorization attributes of a request. A list
// or watch narrowed to one object by fieldSelector=metadata.name=<n> is
// authorized as a request for that name, as upstream does, so that a
// kubelet may watch the one secret its pod uses.
func requestAttributes(r *http.Request, info *request.Info, u *request.User) authz.Attributes {
	a := authz.FromRequest(info, u)
	if a.ResourceRequest && a.Name == "" && (a.Verb == "list" || a.Verb == "watch") {
		if fs := r.URL.Query().Get("fieldSelector"); fs != "" {
			if sel, err := fields.ParseSelector(fs); err == nil {
				if name, ok := sel.RequiresExactMatch("metadata.name"); ok {
					a.Name = name
				}
			}
		}
	}
	return a
}

// forbidden is upstream's 403: `pods is forbidden: User "x" cannot list
// resource "pods" in API group "" in the namespace "default"[: reason]`.
func forbidden(a authz.Attributes, reason string) error {
	msg := authz.ForbiddenMessage(a)
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	return apierrors.NewForbidden(gr, a.Name, errors.New(msg))
}

// mountSecurityRoutes serves the review APIs and TokenRequest, which have
// no storage behind them.
func (s *Server) mountSecurityRoutes(r chi.Router) {
	r.Post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", s.selfSubjectAccessReview)
	r.Post("/apis/authorization.k8s.io/v1/subjectaccessreviews", s.subjectAccessReview)
	r.Post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", s.selfSubjectRulesReview)
	r.Post("/apis/authentication.k8s.io/v1/selfsubjectreviews", s.selfSubjectReview)
	r.Post("/apis/authentication.k8s.io/v1/tokenreviews", s.tokenReview)
	r.Post("/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", s.tokenRequest)
}

// securityDiscovery lists the resources mountSecurityRoutes serves, for
// the discovery documents, in a stable order.
func securityDiscovery() []metav1.APIResourceList {
	create := metav1.Verbs{"create"}
	return []metav1.APIResourceList{
		{GroupVersion: "authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "selfsubjectaccessreviews", SingularName: "selfsubjectaccessreview", Kind: "SelfSubjectAccessReview", Verbs: create},
			{Name: "subjectaccessreviews", SingularName: "subjectaccessreview", Kind: "SubjectAccessReview", Verbs: create},
			{Name: "selfsubjectrulesreviews", SingularName: "selfsubjectrulesreview", Kind: "SelfSubjectRulesReview", Verbs: create},
		}},
		{GroupVersion: "authentication.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "selfsubjectreviews", SingularName: "selfsubjectreview", Kind: "SelfSubjectReview", Verbs: create},
			{Name: "tokenreviews", SingularName: "tokenreview", Kind: "TokenReview", Verbs: create},
		}},
	}
}

// maxReviewBody bounds review request bodies; they are small.
const maxReviewBody = 1 << 20

// decodeBody decodes a review in any of the API's encodings (client-go
// sends protobuf for built-in types).
func (s *Server) decodeBody(r *http.Request, into runtime.Object) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBody+1))
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if len(body) > maxReviewBody {
		return apierrors.NewRequestEntityTooLargeError("limit is 1048576")
	}
	var defaults *schema.GroupVersionKind
	if gvks, _, err := s.scheme.ObjectKinds(into); err == nil && len(gvks) > 0 {
		// A body without apiVersion and kind still names what it is.
		defaults = &gvks[0]
	}
	if _, _, err := s.scheme.Codecs.UniversalDeserializer().Decode(body, defaults, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decode request body: %v", err))
	}
	return nil
}

func writeCreated(w http.ResponseWriter, obj any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(obj)
}

// reviewAttributes turns a review spec into authorization attributes.
func reviewAttributes(u *request.User, ra *authzv1.ResourceAttributes, nra *authzv1.NonResourceAttributes) (authz.Attributes, error) {
	a := authz.Attributes{User: u}
	switch {
	case ra != nil:
		a.ResourceRequest = true
		a.Verb, a.Namespace, a.APIGroup, a.APIVersion = ra.Verb, ra.Namespace, ra.Group, ra.Version
		a.Resource, a.Subresource, a.Name = ra.Resource, ra.Subresource, ra.Name
	case nra != nil:
		a.Verb, a.Path = nra.Verb, nra.Path
	default:
		return a, apierrors.NewBadRequest("exactly one of resourceAttributes and nonResourceAttributes must be set")
	}
	return a, nil
}

// decide runs the authorizers for a review; without security configured
// everything is allowed, as on the request path.
func (s *Server) decide(ctx context.Context, a authz.Attributes) authzv1.SubjectAccessReviewStatus {
	if s.security == nil {
		return authzv1.SubjectAccessReviewStatus{Allowed: true}
	}
	d, reason, err := s.security.authorizer.Authorize(ctx, a)
	st := authzv1.SubjectAccessReviewStatus{Allowed: d == authz.Allow, Denied: d == authz.Deny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

// selfSubjectAccessReview answers `kubectl auth can-i`: may the caller
// do what the review describes?
func (s *Server) selfSubjectAccessReview(w http.ResponseWriter, r *http.Request) {
	var review authzv1.SelfSubjectAccessReview
	if err := s.decodeBody(r, &review); err != nil {
		handler.WriteError(w, r, err)
		return
	}
	u, _ := request.UserFrom(r.Context())
	a, err := reviewAttributes(u, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
	if err != nil {
		handler.WriteError(w, r, err)
		return
	}
	review.Status = s.decide(r.Context(), a)
	review.APIVersion, review.Kind = "authorization.k8s.io/v1", "SelfSubjectAccessReview"
	review.CreationTimestamp = metav1.Time{}
	writeCreated(w, &review)
}

// selfSubjectRulesReview answers `kubectl auth can-i --list`: the RBAC
// rules the caller has in a namespace (everything under AlwaysAllow),
// marked incomplete where another mode may grant more (rulesIncomplete).
func (s *Server) selfSubjectRulesReview(w http.ResponseWriter, r *http.Request) {
	var review authzv1.SelfSubjectRulesReview
	if err := s.decodeBody(r, &review); err != nil {
		handler.WriteError(w, r, err)
		return
	}
	review.APIVersion, review.Kind = "authorization.k8s.io/v1", "SelfSubjectRulesReview"
	st := authzv1.SubjectRulesReviewStatus{ResourceRules: []authzv1.ResourceRule{}, NonResourceRules: []authzv1.NonResourceRule{}}
	u, _ := request.UserFrom(r.Context())
	sec := s.security
	if sec == nil || slices.Contains(sec.modes, ModeAlwaysAllow) {
		st.ResourceRules = append(st.ResourceRules, authzv1.ResourceRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
		st.NonResourceRules = append(st.NonResourceRules, authzv1.NonResourceRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}})
	}
	if sec != nil {
		st.Incomplete, st.EvaluationError = sec.rulesIncomplete(u)
	}
	if sec != nil && sec.rbac != nil {
		for _, rule := range sec.rbac.RulesFor(u, review.Spec.Namespace) {
			if len(rule.NonResourceURLs) > 0 {
				st.NonResourceRules = append(st.NonResourceRules, authzv1.NonResourceRule{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
				continue
			}
			st.ResourceRules = append(st.ResourceRules, authzv1.ResourceRule{Verbs: rule.Verbs, APIGroups: rule.APIGroups,
				Resources: rule.Resources, ResourceNames: rule.ResourceNames})
		}
	}
	review.Status = st
	writeCreated(w, &review)
}

// subjectAccessReview answers for any user, for callers allowed to create
// subjectaccessreviews (webhooks and controllers acting for others).
func (s *Server) subjectAccessReview(w http.ResponseWriter, r *http.Request) {
	var review authzv1.SubjectAccessReview
	if err := s.decodeBody(r, &review); err != nil {
		handler.WriteError(w, r, err)
		return
	}
	sp := review.Spec
	if sp.User == "" && len(sp.Groups) == 0 {
		handler.WriteError(w, r, apierrors.NewBadRequest("at least one of user or groups must be set"))
		return
	}
	u := &request.User{Name: sp.User, UID: sp.UID, Groups: sp.Groups}
	if len(sp.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range sp.Extra {
			u.Extra[k] = v
		}
	}
	a, err := reviewAttributes(u, sp.ResourceAttributes, sp.NonResourceAttributes)
	if err != nil {
		handler.WriteError(w, r, err)
		return
	}
	review.Status = s.decide(r.Context(), a)
	review.APIVersion, review.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	writeCreated(w, &review)
}

// selfSubjectReview answers `kubectl auth whoami`.
func (s *Server) selfSubjectReview(w http.ResponseWriter, r *http.Request) {
	var review authnv1.SelfSubjectReview
	if err := s.decodeBody(r, &review); err != nil {
		handler.WriteError(w, r, err)
		return
	}
	review.APIVersion, review.Kind = "authentication.k8s.io/v1", "SelfSubjectReview"
	if u, ok := request.UserFrom(r.Context()); ok {
		review.Status.UserInfo = userInfo(u, u.Groups)
	}
	writeCreated(w, &review)
}

// userInfo is u as the authentication API shows it, with groups given
// apart because a TokenReview adds system:authenticated to them.
func userInfo(u *request.User, groups []string) authnv1.UserInfo {
	ui := authnv1.UserInfo{Username: u.Name, UID: u.UID, Groups: groups}
	if len(u.Extra) > 0 {
		ui.Extra = map[string]authnv1.ExtraValue{}
		for k, v := range u.Extra {
			ui.Extra[k] = v
		}
	}
	return ui
}

// tokenReview tells a caller allowed to create tokenreviews (a webhook, an
// aggregated server) who a bearer token belongs to.
func (s *Server) tokenReview(w http.ResponseWriter, r *http.Request) {
	var review authnv1.TokenReview
	if err := s.decodeBody(r, &review); err != nil {
		handler.WriteError(w, r, err)
		return
	}
	if review.Spec.Token == "" {
		handler.WriteError(w, r, apierrors.NewBadRequest("spec.token: Required value"))
		return
	}
	review.APIVersion, review.Kind = "authentication.k8s.io/v1", "TokenReview"
	review.Status = authnv1.TokenReviewStatus{}
	var tokens authn.BearerToken
	if s.security != nil {
		tokens = s.security.tokens
	}
	for _, t := range tokens {
		u, ok, err := t.AuthenticateToken(r.Context(), review.Spec.Token)
		if ok {
			groups := slices.Clone(u.Groups)
			if !slices.Contains(groups, authn.AllAuthenticated) {
				groups = append(groups, authn.AllAuthenticated)
			}
			review.Status = authnv1.TokenReviewStatus{Authenticated: true, User: userInfo(u, groups), Audiences: s.security.audiences}
			break
		}
		if err != nil {
			review.Status.Error = err.Error()
		}
	}
	writeCreated(w, &review)
}

// tokenRequest issues a service-account token (serviceaccounts/{name}/token),
// optionally bound to a pod or secret so that it dies with it.
func (s *Server) tokenRequest(w http.ResponseWriter, r *http.Request) {
	ns, name := chi.URLParam(r, "namespace"), chi.URLParam(r, "name")
	if s.security == nil || s.security.signer == nil {
		handler.WriteError(w, r, apierrors.NewServiceUnavailable("token issuing is not configured (--service-account-signing-key-file)"))
		return
	}
	var tr authnv1.TokenRequest
	if err := s.decodeBody(r, &tr); err != nil {
		handler.WriteError(w, r, err)
		return
	}
	objs := boundObjects{s: s}
	saUID, found, err := objs.ServiceAccountUID(r.Context(), ns, name)
	if err != nil {
		handler.WriteError(w, r, handler.StorageError(err, corev1.Resource("serviceaccounts"), name))
		return
	}
	if !found {
		handler.WriteError(w, r, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name))
		return
	}
	req := authn.TokenRequest{Namespace: ns, ServiceAccount: authn.ObjectRef{Name: name, UID: saUID}, Audiences: tr.Spec.Audiences}
	if tr.Spec.ExpirationSeconds != nil {
		if *tr.Spec.ExpirationSeconds < 600 {
			handler.WriteError(w, r, apierrors.NewBadRequest("spec.expirationSeconds: may not specify a duration less than 10 minutes"))
			return
		}
		req.Lifetime = time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	}
	if len(req.Audiences) == 0 {
		req.Audiences = s.security.audiences
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		var get func(context.Context, string, string) (string, bool, error)
		switch ref.Kind {
		case "Pod":
			get = objs.PodUID
		case "Secret":
			get = objs.SecretUID
		default:
			handler.WriteError(w, r, apierrors.NewBadRequest(fmt.Sprintf("spec.boundObjectRef.kind: %q is not Pod or Secret", ref.Kind)))
			return
		}
		uid, found, err := get(r.Context(), ns, ref.Name)
		switch {
		case err != nil:
			handler.WriteError(w, r, apierrors.NewInternalError(err))
			return
		case !found:
			handler.WriteError(w, r, apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(ref.Kind) + "s"}, ref.Name))
			return
		case ref.UID != "" && string(ref.UID) != uid:
			handler.WriteError(w, r, apierrors.NewConflict(schema.GroupResource{Resource: strings.ToLower(ref.Kind) + "s"}, ref.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record (%s)", ref.UID, uid)))
			return
		}
		bound := &authn.ObjectRef{Name: ref.Name, UID: uid}
		if ref.Kind == "Pod" {
			req.Pod = bound
		} else {
			req.Secret = bound
		}
	}
	// The automatic volume's token lasts a year but is shown, and
	// refreshed, as the hour asked for (upstream's extended expiry).
	asked := req.Lifetime
	if extendedTokenExpiry(s.security.extendTokens, tr.Spec.ExpirationSeconds, req.Pod != nil, req.Audiences, s.security.audiences) {
		req.WarnAfter, req.Lifetime = req.Lifetime, extendedTokenLifetime
	}
	token, exp, err := s.security.signer.Issue(req)
	if err != nil {
		handler.WriteError(w, r, apierrors.NewInternalError(err))
		return
	}
	if req.WarnAfter > 0 {
		exp = exp.Add(asked - req.Lifetime)
	}
	tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenRequest"
	tr.Name, tr.Namespace = name, ns
	tr.Spec.Audiences = req.Audiences
	tr.Status = authnv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(exp)}
	writeCreated(w, &tr)
}

// Upstream's extended expiry: a token asked for warnOnlyTokenSeconds
// (what the automatic volume asks) is issued for extendedTokenLifetime.
const (
	warnOnlyTokenSeconds  = 60*60 + 7
	extendedTokenLifetime = 365 * 24 * time.Hour
)

// extendedTokenExpiry says whether a TokenRequest gets the extended
// expiry: enabled, exactly warnOnlyTokenSeconds asked, bound to a pod,
// and for no audience but the API's.
func extendedTokenExpiry(enabled bool, seconds *int64, boundToPod bool, audiences, apiAudiences []string) bool {
	if !enabled || seconds == nil || *seconds != warnOnlyTokenSeconds || !boundToPod {
		return false
	}
	for _, a := range audiences {
		if !slices.Contains(apiAudiences, a) {
			return false
		}
	}
	return true
}

// clientCertPool is the pool the TLS server names when requesting client
// certificates, so that clients pick a matching one; verification itself
// happens in the authenticator.
func clientCertPool(o *SecurityOptions) (*x509.CertPool, error) {
	if o == nil || o.ClientCAFile == "" {
		return nil, nil
	}
	return pki.LoadCertPool(o.ClientCAFile)
}

// rulesIncomplete says whether the listed rules may miss what a mode grants
// u, and why: the Node mode grants only to kubelets and cannot list what
// (as upstream), nor can the webhook mode (as upstream) or kube-lite's ABAC
// mode (upstream's can).
func (sec *security) rulesIncomplete(u *request.User) (bool, string) {
	var why []string
	for _, m := range sec.modes {
		switch m {
		case ModeNode:
			if _, kubelet := node.NodeName(authz.Attributes{User: u}); kubelet {
				why = append(why, "node authorizer does not support user rule resolution")
			}
		case ModeWebhook, ModeABAC:
			why = append(why, strings.ToLower(m)+" authorizer does not support user rule resolution")
		}
	}
	return len(why) > 0, strings.Join(why, "; ")
}
