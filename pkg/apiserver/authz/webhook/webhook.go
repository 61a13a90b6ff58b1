// Package webhook is the Webhook authorization mode: each request is sent
// to an external service as an authorization.k8s.io/v1 SubjectAccessReview
// (--authorization-webhook-config-file, a kubeconfig naming the service).
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
	"github.com/kube-lite/kube-lite/pkg/apiserver/webhookclient"
)

// Authorizer asks the service. Allowed is Allow, Denied is Deny, anything
// else NoOpinion; answers are remembered for TTL (allowed) or half of it
// (not allowed), as upstream caches both.
type Authorizer struct {
	client *webhookclient.Client
	ttl    time.Duration
	clock  clock.PassiveClock
	cache  *webhookclient.Cache[answer]
}

type answer struct {
	d      authz.Decision
	reason string
}

// New reads the kubeconfig at path.
func New(path string, ttl time.Duration, clk clock.PassiveClock) (*Authorizer, error) {
	client, err := webhookclient.New(path)
	if err != nil {
		return nil, fmt.Errorf("authorization webhook config %s: %w", path, err)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Authorizer{client: client, ttl: ttl, clock: clk, cache: webhookclient.NewCache[answer]()}, nil
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
	// The review itself is the key: two requests with the same attributes
	// get the same answer.
	now := z.clock.Now()
	if c, ok := z.cache.Get(body, now); ok {
		return c.d, c.reason, nil
	}

	var out authzv1.SubjectAccessReview
	if err := z.client.Post(ctx, body, &out); err != nil {
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
	z.cache.Put(body, answer{d: d, reason: reason}, now, ttl)
	return d, reason, nil
}
