// Package authn finds out who sent a request: x509 client certificates,
// static bearer tokens (--token-auth-file), service-account JWTs and a
// TokenReview webhook. HTTP Basic authentication is absent on purpose:
// upstream removed it as unsafe (passwords in a file, sent on every request),
// and client certificates or tokens cover the same needs.
package authn

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// Well-known identities.
const (
	// AllAuthenticated is the group of every authenticated user.
	AllAuthenticated = "system:authenticated"
	// AllUnauthenticated is the group of the anonymous user.
	AllUnauthenticated = "system:unauthenticated"
	// Anonymous is the user of a request without credentials, when
	// --anonymous-auth allows those.
	Anonymous = "system:anonymous"
)

// ErrInvalidToken reports a bearer token that no authenticator recognised.
var ErrInvalidToken = errors.New("invalid bearer token")

// Request authenticates a request from its credentials. ok is false, with
// a nil error, when the request carries no credentials of its kind; an
// error means it did carry some and they are not valid.
type Request interface {
	AuthenticateRequest(r *http.Request) (u *request.User, ok bool, err error)
}

// Token authenticates a bearer token. ok is false, with a nil error, when
// the token is not one it knows (another authenticator may).
type Token interface {
	AuthenticateToken(ctx context.Context, token string) (u *request.User, ok bool, err error)
}

// BearerToken reads the "Authorization: Bearer" header and asks each token
// authenticator in order.
type BearerToken []Token

// AuthenticateRequest implements Request.
func (b BearerToken) AuthenticateRequest(r *http.Request) (*request.User, bool, error) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return nil, false, nil
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, false, nil
	}
	var errs []error
	for _, t := range b {
		u, ok, err := t.AuthenticateToken(r.Context(), token)
		if ok {
			return u, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, false, errors.Join(errs...)
	}
	return nil, false, ErrInvalidToken
}

// Union asks each authenticator in order; the first success wins. When
// none succeeds, the errors of those that saw credentials are returned.
type Union []Request

// AuthenticateRequest implements Request, adding system:authenticated to
// the groups of whoever is found.
func (u Union) AuthenticateRequest(r *http.Request) (*request.User, bool, error) {
	var errs []error
	for _, a := range u {
		user, ok, err := a.AuthenticateRequest(r)
		if ok {
			return withAuthenticatedGroup(user), true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return nil, false, errors.Join(errs...)
}

func withAuthenticatedGroup(u *request.User) *request.User {
	if slices.Contains(u.Groups, AllAuthenticated) || u.Name == Anonymous {
		return u
	}
	c := *u
	c.Groups = append(slices.Clip(u.Groups), AllAuthenticated)
	return &c
}

// AnonymousUser is who a request without credentials is, when allowed.
func AnonymousUser() *request.User {
	return &request.User{Name: Anonymous, Groups: []string{AllUnauthenticated}}
}
