package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Authorizer decides whether an authenticated user may use a part of the
// kubelet API (upstream's nodes/<subresource> attributes).
type Authorizer interface {
	Authorize(ctx context.Context, user string, groups []string, verb, subresource string) (allowed bool, reason string, err error)
}

// subresourceOf maps a kubelet API path to the nodes subresource upstream
// authorizes it as.
func subresourceOf(path string) string {
	switch {
	case path == "/metrics" || strings.HasPrefix(path, "/metrics/"):
		return "metrics"
	case strings.HasPrefix(path, "/logs"):
		return "log"
	case path == "/healthz":
		return "healthz"
	default: // /pods, /containerLogs, and everything else
		return "proxy"
	}
}

func verbOf(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(method)
}

// maxSARAnswers bounds the remembered answers: one per user, group set,
// verb and subresource, which is few on a node, unless many short-lived
// identities (bound service-account tokens) call it.
const maxSARAnswers = 1024

// SARAuthorizer asks the apiserver with SubjectAccessReviews, remembering
// answers briefly as upstream's webhook authorizer does.
type SARAuthorizer struct {
	Client kubernetes.Interface
	Node   string
	Clock  clock.PassiveClock
	// AllowTTL and DenyTTL bound how long an answer is reused.
	AllowTTL, DenyTTL time.Duration

	mu    sync.Mutex
	cache map[string]sarAnswer
}

type sarAnswer struct {
	allowed bool
	reason  string
	expires time.Time
}

// Authorize implements Authorizer.
func (a *SARAuthorizer) Authorize(ctx context.Context, user string, groups []string, verb, subresource string) (bool, string, error) {
	now := a.Clock.Now()
	key := user + "\x00" + strings.Join(groups, ",") + "\x00" + verb + "\x00" + subresource
	a.mu.Lock()
	if ans, ok := a.cache[key]; ok && now.Before(ans.expires) {
		a.mu.Unlock()
		return ans.allowed, ans.reason, nil
	}
	a.mu.Unlock()
	review, err := a.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "nodes", Subresource: subresource, Name: a.Node},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	ttl := a.DenyTTL
	if review.Status.Allowed {
		ttl = a.AllowTTL
	}
	a.mu.Lock()
	if a.cache == nil {
		a.cache = map[string]sarAnswer{}
	}
	if len(a.cache) >= maxSARAnswers {
		a.evict(now)
	}
	a.cache[key] = sarAnswer{allowed: review.Status.Allowed, reason: review.Status.Reason, expires: now.Add(ttl)}
	a.mu.Unlock()
	return review.Status.Allowed, review.Status.Reason, nil
}

// evict drops the expired answers, and all of them if none had expired:
// asking again costs one review each, remembering without bound costs
// memory for as long as the kubelet runs.
func (a *SARAuthorizer) evict(now time.Time) {
	for k, ans := range a.cache {
		if !now.Before(ans.expires) {
			delete(a.cache, k)
		}
	}
	if len(a.cache) >= maxSARAnswers {
		clear(a.cache)
	}
}
