package authn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// TokenWebhook asks an external service (named by a kubeconfig file, as
// upstream's --authentication-token-webhook-config-file) to review bearer
// tokens with an authentication.k8s.io/v1 TokenReview. Accepted tokens are
// remembered for TTL so that a busy client does not cost a round trip per
// request; rejections are not remembered.
type TokenWebhook struct {
	url       string
	client    *http.Client
	audiences []string
	ttl       time.Duration
	clock     clock.PassiveClock

	mu    sync.Mutex
	cache map[[32]byte]cachedUser
}

type cachedUser struct {
	user    *request.User
	expires time.Time
}

// NewTokenWebhook reads the kubeconfig at path: its current cluster's
// server is the URL the review is POSTed to, with its TLS settings and
// client credentials.
func NewTokenWebhook(path string, audiences []string, ttl time.Duration, clk clock.PassiveClock) (*TokenWebhook, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("token webhook config %s: %w", path, err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("token webhook config %s: %w", path, err)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &TokenWebhook{url: cfg.Host, client: hc, audiences: audiences, ttl: ttl, clock: clk, cache: map[[32]byte]cachedUser{}}, nil
}

// AuthenticateToken implements Token.
func (w *TokenWebhook) AuthenticateToken(ctx context.Context, token string) (*request.User, bool, error) {
	key := sha256.Sum256([]byte(token))
	now := w.clock.Now()
	w.mu.Lock()
	if c, ok := w.cache[key]; ok {
		if now.Before(c.expires) {
			w.mu.Unlock()
			u := *c.user
			return &u, true, nil
		}
		delete(w.cache, key)
	}
	w.mu.Unlock()

	review := &authnv1.TokenReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"},
		Spec:     authnv1.TokenReviewSpec{Token: token, Audiences: w.audiences},
	}
	var out authnv1.TokenReview
	if err := postJSON(ctx, w.client, w.url, review, &out); err != nil {
		return nil, false, fmt.Errorf("token webhook: %w", err)
	}
	if !out.Status.Authenticated {
		if out.Status.Error != "" {
			return nil, false, fmt.Errorf("token webhook: %s", out.Status.Error)
		}
		return nil, false, nil
	}
	ui := out.Status.User
	u := &request.User{Name: ui.Username, UID: ui.UID, Groups: ui.Groups}
	if len(ui.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range ui.Extra {
			u.Extra[k] = v
		}
	}
	if w.ttl > 0 {
		w.mu.Lock()
		for k, c := range w.cache {
			if !now.Before(c.expires) {
				delete(w.cache, k)
			}
		}
		w.cache[key] = cachedUser{user: u, expires: now.Add(w.ttl)}
		w.mu.Unlock()
	}
	c := *u
	return &c, true, nil
}

// postJSON POSTs in as JSON and decodes a 2xx answer into out.
func postJSON(ctx context.Context, hc *http.Client, url string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer of %s: %w", url, err)
	}
	return nil
}
