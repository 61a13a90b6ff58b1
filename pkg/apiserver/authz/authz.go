// Package authz decides whether an authenticated user may do what a request
// asks. Each mode (Node, RBAC, ABAC, Webhook, AlwaysAllow, AlwaysDeny) is an
// Authorizer; a Union asks them in order until one decides, as upstream's
// --authorization-mode list does.
package authz

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// Decision is an authorizer's answer.
type Decision int

const (
	// NoOpinion lets the next authorizer decide; when none does, the
	// request is denied.
	NoOpinion Decision = iota
	// Allow lets the request through at once.
	Allow
	// Deny refuses it at once, whatever later authorizers would say.
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	}
	return "NoOpinion"
}

// SystemMasters is the group that every authorizer chain lets through, as
// upstream's privileged-group short-circuit: it keeps an admin able to repair
// a broken RBAC policy.
const SystemMasters = "system:masters"

// Attributes are what an authorizer looks at.
type Attributes struct {
	User *request.User
	// Verb is the Kubernetes verb for resource requests (get, list, ...)
	// and the lowercased HTTP method for others.
	Verb string
	// ResourceRequest is false for paths such as /healthz or /apis.
	ResourceRequest bool
	Path            string
	Namespace       string
	APIGroup        string
	APIVersion      string
	Resource        string
	Subresource     string
	Name            string
}

// UserName is the user's name, or "" without a user.
func (a Attributes) UserName() string {
	if a.User == nil {
		return ""
	}
	return a.User.Name
}

// Groups are the user's groups.
func (a Attributes) Groups() []string {
	if a.User == nil {
		return nil
	}
	return a.User.Groups
}

// IsReadOnly reports whether the verb only reads.
func (a Attributes) IsReadOnly() bool {
	return a.Verb == "get" || a.Verb == "list" || a.Verb == "watch"
}

// FromRequest builds attributes from the parsed request and its user.
func FromRequest(info *request.Info, u *request.User) Attributes {
	a := Attributes{User: u, Verb: info.Verb, Path: info.Path}
	if !info.IsResourceRequest {
		return a
	}
	a.ResourceRequest = true
	a.Namespace, a.APIGroup, a.APIVersion = info.Namespace, info.APIGroup, info.APIVersion
	a.Resource, a.Subresource, a.Name = info.Resource, info.Subresource, info.Name
	return a
}

// Authorizer decides one request. reason explains a decision (it is
// appended to a 403's message); err reports a failure to decide, which
// counts as NoOpinion.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// Func adapts a function to Authorizer.
type Func func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f Func) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// AlwaysAllow allows every request (--authorization-mode=AlwaysAllow).
type AlwaysAllow struct{}

// Authorize allows.
func (AlwaysAllow) Authorize(context.Context, Attributes) (Decision, string, error) {
	return Allow, "", nil
}

// AlwaysDeny denies every request (--authorization-mode=AlwaysDeny).
type AlwaysDeny struct{}

// Authorize denies.
func (AlwaysDeny) Authorize(context.Context, Attributes) (Decision, string, error) {
	return Deny, "Everything is forbidden.", nil
}

// Union asks each authorizer in order; the first Allow or Deny wins.
// Members of system:masters are allowed before any is asked.
type Union []Authorizer

// Authorize returns the first decision, or NoOpinion with the collected
// reasons when nobody decided.
func (u Union) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	if slices.Contains(a.Groups(), SystemMasters) {
		return Allow, "", nil
	}
	var reasons []string
	for _, z := range u {
		d, reason, err := z.Authorize(ctx, a)
		if err != nil {
			// An authorizer that cannot answer (a webhook down) must not
			// decide; the next one may.
			slog.WarnContext(ctx, "authorizer failed", "authorizer", fmt.Sprintf("%T", z), "err", err)
		}
		if d != NoOpinion {
			return d, reason, nil
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	if len(reasons) == 0 {
		return NoOpinion, "", nil
	}
	return NoOpinion, joinReasons(reasons), nil
}

func joinReasons(rs []string) string {
	out := rs[0]
	for _, r := range rs[1:] {
		out += ", " + r
	}
	return out
}

// ForbiddenMessage is upstream's wording of a denial, without the
// "<resource> is forbidden: " prefix that the Status error adds.
func ForbiddenMessage(a Attributes) string {
	user := a.UserName()
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", user, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", user, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", user, a.Verb, resource, a.APIGroup)
}
