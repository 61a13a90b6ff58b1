package request

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		method, path string
		want         Info
	}{
		{"GET", "/api/v1/pods", Info{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/default/pods", Info{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/default/pods?watch=true", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/default/pods/web", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "pods", Name: "web"}},
		{"POST", "/api/v1/namespaces/default/pods/web/binding", Info{IsResourceRequest: true, Verb: "create", APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "pods", Name: "web", Subresource: "binding"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", Info{IsResourceRequest: true, Verb: "patch", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Namespace: "ns", Resource: "deployments", Name: "d", Subresource: "scale"}},
		{"DELETE", "/apis/batch/v1/namespaces/ns/jobs", Info{IsResourceRequest: true, Verb: "deletecollection", APIPrefix: "apis", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "jobs"}},
		// A namespace is itself the object: its name is also its namespace,
		// and status and finalize are its subresources, not resources in it.
		{"GET", "/api/v1/namespaces/prod", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "prod", Resource: "namespaces", Name: "prod"}},
		{"PUT", "/api/v1/namespaces/prod/finalize", Info{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", Namespace: "prod", Resource: "namespaces", Name: "prod", Subresource: "finalize"}},
		{"GET", "/api/v1/namespaces/prod/status", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "prod", Resource: "namespaces", Name: "prod", Subresource: "status"}},
		{"GET", "/api/v1/nodes/n1/status", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Resource: "nodes", Name: "n1", Subresource: "status"}},
		// As upstream's: ?watch on an object's path is a get, and the
		// deprecated /watch/ paths are watches whatever the query says.
		{"GET", "/api/v1/namespaces/default/pods/web?watch=true", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "pods", Name: "web"}},
		{"GET", "/api/v1/pods?watch=yes", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/pods?watch=False", Info{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/watch/namespaces/default/pods?watch=false", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "pods", WatchPath: true}},
		{"GET", "/api/v1/watch/namespaces/default/pods/web", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "pods", Name: "web", WatchPath: true}},
		{"GET", "/apis/apps/v1/watch/deployments", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Resource: "deployments", WatchPath: true}},
		{"GET", "/api/v1/watch/namespaces/prod", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "prod", Resource: "namespaces", Name: "prod", WatchPath: true}},
		{"GET", "/api/v1/watch", Info{Verb: "get"}},
		{"GET", "/api", Info{Verb: "get"}},
		{"GET", "/apis/apps", Info{Verb: "get", APIPrefix: "apis"}},
		{"GET", "/apis/apps/v1", Info{Verb: "get", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1"}},
		{"GET", "/version", Info{Verb: "get"}},
		{"GET", "/healthz", Info{Verb: "get"}},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			got := Parse(httptest.NewRequest(tc.method, tc.path, nil))
			got.Path, got.Parts = "", nil
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

// A write retried after a conflict admits its object again: its warnings
// still reach the client once each.
func TestWarningsReachTheClientOnceEach(t *testing.T) {
	h := http.Header{}
	info := &Info{}
	info.Warn("before the response is known") // dropped: nowhere to send it
	info.WarnTo(h)
	for range 2 {
		info.Warn(`would violate PodSecurity "restricted:latest": x`)
		info.Warn("second")
	}
	want := []string{`299 - "would violate PodSecurity \"restricted:latest\": x"`, `299 - "second"`}
	if got := h.Values("Warning"); !slices.Equal(got, want) {
		t.Fatalf("Warning headers %q, want %q", got, want)
	}
}
