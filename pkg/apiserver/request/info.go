// Package request parses what a request asks for (verb, group, version,
// namespace, resource, name, subresource) the way the Kubernetes API lays
// out its paths. Authorization, admission and the REST handler all read it.
package request

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Info describes one API request.
type Info struct {
	// IsResourceRequest is false for /api, /apis, /version, /healthz, ...
	IsResourceRequest bool
	Path              string
	// Verb is the Kubernetes verb: get, list, watch, create, update, patch,
	// delete, deletecollection; for non-resource requests the lowercased method.
	Verb        string
	APIPrefix   string // "api" or "apis"
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// WatchPath is the deprecated /watch/ form of a path
	// (/api/v1/watch/namespaces/{ns}/pods[/{name}]): a watch whatever the
	// query says, of one object when it names one.
	WatchPath bool
	// Parts are the path segments after the version, for error messages.
	Parts []string
	// Media is the form of the answer, which the REST handler settles from
	// the Accept header before it runs the request (so that a request it
	// cannot answer does not happen) and reads again to answer.
	Media any

	// The response's headers, where warnings go (see Warn).
	header http.Header
}

// WarnTo sends the request's warnings to h, the response's headers.
func (i *Info) WarnTo(h http.Header) { i.header = h }

// Warn gives the client a warning (kubectl prints "Warning: msg"), once
// however often a retried write repeats it; without WarnTo it is dropped.
// Like the response's headers, it belongs to the request's goroutine.
func (i *Info) Warn(msg string) {
	if i.header == nil {
		return
	}
	// The headers already hold what was sent.
	if v := "299 - " + strconv.Quote(msg); !slices.Contains(i.header.Values("Warning"), v) {
		i.header.Add("Warning", v)
	}
}

// Parse reads the request info from r. It never fails: a path it does not
// understand is a non-resource request, and the router answers 404 for it.
func Parse(r *http.Request) *Info {
	info := &Info{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 2 || (parts[0] != "api" && parts[0] != "apis") {
		return info
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if info.APIPrefix == "apis" {
		if len(parts) < 2 {
			return info
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.APIVersion = parts[0]
	parts = parts[1:]
	if len(parts) == 0 {
		return info
	}
	info.IsResourceRequest = true
	if parts[0] == "watch" {
		if len(parts) < 2 {
			return &Info{Path: r.URL.Path, Verb: info.Verb}
		}
		info.WatchPath = true
		parts = parts[1:]
	}

	// /namespaces/{ns}/{resource}... is a namespaced request, except that
	// /namespaces/{name}/status and /finalize are subresources of a namespace.
	if parts[0] == "namespaces" && len(parts) > 2 && !(len(parts) == 3 && isNamespaceSubresource(parts[2])) {
		info.Namespace = parts[1]
		parts = parts[2:]
	} else if parts[0] == "namespaces" && len(parts) >= 2 {
		info.Namespace = parts[1]
	}
	info.Parts = parts
	info.Resource = parts[0]
	if len(parts) >= 2 {
		info.Name = parts[1]
	}
	if len(parts) >= 3 {
		info.Subresource = parts[2]
	}

	switch r.Method {
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodGet, http.MethodHead:
		info.Verb = "get"
		// As upstream's, ?watch= turns only a collection's GET into a
		// watch; on an object's path it is a get.
		if info.Name == "" {
			info.Verb = "list"
			if QueryBool(r.URL.Query(), "watch") {
				info.Verb = "watch"
			}
		}
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		info.Verb = "delete"
		if info.Name == "" {
			info.Verb = "deletecollection"
		}
	}
	if info.WatchPath {
		info.Verb = "watch"
	}
	// A get on a single object by field selector metadata.name is still a
	// get for authorization purposes only in upstream's watch case; we keep it
	// a list/watch, as the request is served by the collection endpoint.
	return info
}

func isNamespaceSubresource(s string) bool { return s == "status" || s == "finalize" }

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

type infoKey struct{}

// WithInfo returns ctx carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// InfoFrom returns the request info stored in ctx, if any.
func InfoFrom(ctx context.Context) (*Info, bool) {
	info, ok := ctx.Value(infoKey{}).(*Info)
	return info, ok
}

// QueryBool reads a boolean query parameter as upstream's query conversion
// does: present and neither "0" nor "false" (any case) is true.
func QueryBool(q url.Values, name string) bool {
	v, ok := q[name]
	return ok && len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
}
