// Package webhook is the Webhook authorization mode: each request is sent
// to an external service as an authorization.k8s.io/v1 SubjectAccessReview
// (--authorization-webhook-config-file, a kubeconfig naming the service).
package webhook

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

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
)

// Authorizer asks the service. Allowed is Allow, Denied is Deny, anything
// else NoOpinion; answers are remembered for TTL (allowed) or half of it
// (not allowed), as upstream caches both.
type Authorizer struct {
	url    string
	client *http.Client
	ttl    time.Duration
	clock  clock.PassiveClock

	mu    sync.Mutex
	cache map[[32]byte]cached
}

type cached struct {
	d       authz.Decision
	reason  string
	expires time.Time
}

// New reads the kubeconfig at path.
func New(path string, ttl time.Duration, clk clock.PassiveClock) (*Authorizer, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("authorization webhook config %s: %w", path, err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("authorization webhook config %s: %w", path, err)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Authorizer{url: cfg.Host, client: hc, ttl: ttl, clock: clk, cache: map[[32]byte]cached{}}, nil
}

// Review builds the SubjectAccessReview for a.
func Review(a authz.Attributes) *authzv1.SubjectAccessReview {
	r := &authzv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
	}
	if a.User != nil {
		r.Spec.User, r.Spec.UID, r.Spec.Groups = a.User.Name, a.User.UID, a.User.Groups
		if len(a.User.Extra) > 0 {
			r.Spec.Extra = map[string]authzv1.ExtraValue{}
			for k, v := range a.User.Extra {
				r.Spec.Extra[k] = v
			}
		}
	}
	if a.ResourceRequest {
		r.Spec.ResourceAttributes = &authzv1.ResourceAttributes{
			Namespace: a.Namespace, Verb: a.Verb, Group: a.APIGroup, Version: a.APIVersion,
			Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		}
	} else {
		r.Spec.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	}
	return r
}

// Authorize implements authz.Authorizer.
func (z *Authorizer) Authorize(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	review := Review(a)
	body, err := json.Marshal(review)
	if err != nil {
		return authz.NoOpinion, "", err
	}
	key := sha256.Sum256(body)
	now := z.clock.Now()
	z.mu.Lock()
	if c, ok := z.cache[key]; ok && now.Before(c.expires) {
		z.mu.Unlock()
		return c.d, c.reason, nil
	}
	z.mu.Unlock()

	var out authzv1.SubjectAccessReview
	if err := post(ctx, z.client, z.url, body, &out); err != nil {
		return authz.NoOpinion, "", fmt.Errorf("authorization webhook: %w", err)
	}
	d, ttl := authz.NoOpinion, z.ttl/2
	switch {
	case out.Status.Allowed:
		d, ttl = authz.Allow, z.ttl
	case out.Status.Denied:
		d = authz.Deny
	}
	reason := out.Status.Reason
	if ttl > 0 {
		z.mu.Lock()
		for k, c := range z.cache {
			if !now.Before(c.expires) {
				delete(z.cache, k)
			}
		}
		z.cache[key] = cached{d: d, reason: reason, expires: now.Add(ttl)}
		z.mu.Unlock()
	}
	return d, reason, nil
}

func post(ctx context.Context, hc *http.Client, url string, body []byte, out any) error {
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
