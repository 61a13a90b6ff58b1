package openapi_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/openapi3"
	"k8s.io/kube-openapi/pkg/spec3"
)

// describe summarises a path item as "verb:GVK kind:response media" for the
// operations a client relies on.
func describe(item *spec3.Path) []string {
	var out []string
	for verb, op := range map[string]*spec3.Operation{"get": item.Get, "put": item.Put, "post": item.Post, "delete": item.Delete, "patch": item.Patch} {
		if op == nil {
			continue
		}
		var gvk map[string]string
		_ = op.Extensions.GetObject("x-kubernetes-group-version-kind", &gvk)
		out = append(out, fmt.Sprintf("%s:%s/%s", verb, gvk["group"], gvk["kind"]))
		if r := op.Responses.StatusCodeResponses[200]; r != nil && r.Content["text/plain"] != nil {
			out = append(out, verb+":text")
		}
	}
	sort.Strings(out)
	return out
}

func TestPaths(t *testing.T) {
	f := newFixture(t)
	root := openapi3.NewRoot(f.v3)
	core, err := root.GVSpec(corev1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	apps, err := root.GVSpec(appsv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		doc  *spec3.OpenAPI
		path string
		want string // empty: the path must not exist
	}{
		{core, "/api/v1/namespaces/{namespace}/pods", "[delete:/Pod get:/Pod post:/Pod]"},
		{core, "/api/v1/pods", "[get:/Pod]"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}", "[delete:/Pod get:/Pod patch:/Pod put:/Pod]"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/status", "[get:/Pod patch:/Pod put:/Pod]"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/binding", "[post:/Binding]"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/eviction", "[post:policy/Eviction]"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/log", "[get:/Pod get:text]"},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/exec", "[get:/Pod get:text post:/Pod post:text]"},
		{core, "/api/v1/namespaces", "[delete:/Namespace get:/Namespace post:/Namespace]"},
		{core, "/api/v1/namespaces/{name}/finalize", "[put:/Namespace]"},
		{core, "/api/v1/namespaces/{namespace}/namespaces", ""},
		{core, "/api/v1/namespaces/{namespace}/pods/{name}/scale", ""},
		{core, "/apis/apps/v1/namespaces/{namespace}/deployments", ""},
		{apps, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "[get:autoscaling/Scale patch:autoscaling/Scale put:autoscaling/Scale]"},
		{apps, "/apis/apps/v1/deployments", "[get:apps/Deployment]"},
	}
	for _, tt := range tests {
		item := tt.doc.Paths.Paths[tt.path]
		if tt.want == "" {
			if item != nil {
				t.Errorf("%s exists: %v", tt.path, describe(item))
			}
			continue
		}
		if item == nil {
			t.Errorf("%s is missing", tt.path)
			continue
		}
		if got := fmt.Sprint(describe(item)); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.path, got, tt.want)
		}
	}

	// Every write declares dryRun and fieldValidation, so that kubectl sends
	// them instead of validating on its own.
	for _, doc := range []*spec3.OpenAPI{core, apps} {
		for path, item := range doc.Paths.Paths {
			for verb, op := range map[string]*spec3.Operation{"put": item.Put, "post": item.Post, "patch": item.Patch} {
				if op == nil || strings.HasSuffix(path, "/exec") {
					continue
				}
				names := map[string]bool{}
				for _, p := range op.Parameters {
					if p.In == "query" {
						names[p.Name] = true
					}
				}
				if !names["dryRun"] || !names["fieldValidation"] {
					t.Errorf("%s %s query parameters %v lack dryRun or fieldValidation", verb, path, names)
				}
			}
		}
	}
}
