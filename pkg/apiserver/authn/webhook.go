package authn

import (
	"context"
	"fmt"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
	"github.com/kube-lite/kube-lite/pkg/apiserver/webhookclient"
)

// TokenWebhook asks an external service (named by a kubeconfig file, as
// upstream's --authentication-token-webhook-config-file) to review bearer
// tokens with an authentication.k8s.io/v1 TokenReview. Accepted tokens are
// remembered for TTL so that a busy client does not cost a round trip per
// request; rejections are not remembered.
type TokenWebhook struct {
	client    *webhookclient.Client
	audiences []string
	ttl       time.Duration
	clock     clock.PassiveClock
	cache     *webhookclient.Cache[request.User]
}

// NewTokenWebhook reads the kubeconfig at path: its current cluster's
// server is the URL the review is POSTed to, with its TLS settings and
// client credentials.
func NewTokenWebhook(path string, audiences []string, ttl time.Duration, clk clock.PassiveClock) (*TokenWebhook, error) {
	client, err := webhookclient.New(path)
	if err != nil {
		return nil, fmt.Errorf("token webhook config %s: %w", path, err)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &TokenWebhook{client: client, audiences: audiences, ttl: ttl, clock: clk, cache: webhookclient.NewCache[request.User]()}, nil
}

// AuthenticateToken implements Token.
func (w *TokenWebhook) AuthenticateToken(ctx context.Context, token string) (*request.User, bool, error) {
	now := w.clock.Now()
	// Callers get their own copy, so that nothing they change leaks into the cache.
	if u, ok := w.cache.Get([]byte(token), now); ok {
		return &u, true, nil
	}

	review := &authnv1.TokenReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"},
		Spec:     authnv1.TokenReviewSpec{Token: token, Audiences: w.audiences},
	}
	var out authnv1.TokenReview
	if err := w.client.PostJSON(ctx, review, &out); err != nil {
		return nil, false, fmt.Errorf("token webhook: %w", err)
	}
	if !out.Status.Authenticated {
		if out.Status.Error != "" {
			return nil, false, fmt.Errorf("token webhook: %s", out.Status.Error)
		}
		return nil, false, nil
	}
	ui := out.Status.User
	u := request.User{Name: ui.Username, UID: ui.UID, Groups: ui.Groups}
	if len(ui.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range ui.Extra {
			u.Extra[k] = v
		}
	}
	w.cache.Put([]byte(token), u, now, w.ttl)
	return &u, true, nil
}
