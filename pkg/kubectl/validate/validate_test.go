package validate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
)

// podDoc is a trimmed copy of the shapes the server publishes for core/v1.
const podDoc = `{"openapi":"3.0.0","info":{"title":"t","version":"v1"},"paths":{},"components":{"schemas":{
 "io.k8s.api.core.v1.Pod":{"type":"object","x-kubernetes-group-version-kind":[{"group":"","kind":"Pod","version":"v1"}],
   "properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},
     "metadata":{"allOf":[{"$ref":"#/components/schemas/meta.ObjectMeta"}]},
     "spec":{"allOf":[{"$ref":"#/components/schemas/io.k8s.api.core.v1.PodSpec"}]}}},
 "io.k8s.api.core.v1.PodSpec":{"type":"object","properties":{
     "containers":{"type":"array","items":{"$ref":"#/components/schemas/io.k8s.api.core.v1.Container"}},
     "nodeSelector":{"type":"object","additionalProperties":{"type":"string"}},
     "overhead":{"type":"object","additionalProperties":{"$ref":"#/components/schemas/quantity"}}}},
 "io.k8s.api.core.v1.Container":{"type":"object","properties":{"name":{"type":"string"},"image":{"type":"string"},
     "ports":{"type":"array","items":{"type":"object","properties":{"containerPort":{"type":"integer"},"targetPort":{"$ref":"#/components/schemas/intstr"}}}}}},
 "meta.ObjectMeta":{"type":"object","properties":{"name":{"type":"string"},"generateName":{"type":"string"},
     "labels":{"type":"object","additionalProperties":{"type":"string"}}}},
 "quantity":{"oneOf":[{"type":"string"},{"type":"number"}]},
 "intstr":{"format":"int-or-string","oneOf":[{"type":"integer"},{"type":"string"}]}
}}}`

type fakeSource map[schema.GroupVersion]string

func (f fakeSource) GVSpec(gv schema.GroupVersion) (*spec3.OpenAPI, error) {
	raw, ok := f[gv]
	if !ok {
		return nil, errors.New("not found")
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

func TestValidateBytes(t *testing.T) {
	src := fakeSource{{Version: "v1"}: podDoc}
	tests := []struct {
		name, manifest, want string // want "" means valid
	}{
		{"valid", `
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  nodeSelector: {disk: ssd}
  overhead: {cpu: 1, memory: 10Mi}
  containers: [{name: c, image: busybox, ports: [{containerPort: 80, targetPort: http}]}]
`, ""},
		{"unknown nested field with path", `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: c, imagee: busybox}]}
`, `unknown field "spec.containers[0].imagee"`},
		{"unknown top-level field", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspecc: {}\n", `unknown field "specc"`},
		{"mistyped scalar", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, ports: [{containerPort: eighty}]}]}\n",
			"spec.containers[0].ports[0].containerPort: expected integer, got string"},
		{"int-or-string rejects objects", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, ports: [{targetPort: {}}]}]}\n",
			"spec.containers[0].ports[0].targetPort: invalid type object"},
		{"names are left to the server", "apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\n", ""},
		{"a missing name is left to the server", "apiVersion: v1\nkind: Pod\nmetadata: {}\n", ""},
		{"missing kind", "apiVersion: v1\nmetadata: {name: x}\n", "kind not set"},
		{"unknown group-version is left to the RESTMapper", "apiVersion: example.com/v9\nkind: Foo\nmetadata: {name: x}\nanything: 1\n", ""},
		{"a List's items are checked, not the List's own name", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n- {apiVersion: v1, kind: Pod, metadata: {name: b}}\n", ""},
		{"a bad item of a List is named", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n- {apiVersion: v1, kind: Pod, metadata: {name: b}, specc: {}}\n",
			`items[1]: unknown field "specc"`},
		{"YAML syntax error", "apiVersion: v1\nkind: Pod\nmetadata: {name: x\n", "error converting YAML to JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := New(src, Strict).ValidateBytes([]byte(tt.manifest))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

// As kubectl: strict refuses what it finds, warn leaves all but a missing
// kind to the server (which warns), ignore checks nothing.
func TestValidateModes(t *testing.T) {
	src := fakeSource{{Version: "v1"}: podDoc}
	unknownField := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspecc: {}\n"
	listItem := "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}, specc: {}}\n"
	noKind := "apiVersion: v1\nmetadata: {name: web}\n"
	tests := []struct {
		mode, manifest, wantErr string // wantErr "" means accepted
	}{
		{Strict, unknownField, `unknown field "specc"`},
		{Strict, listItem, `items[0]: unknown field "specc"`},
		{Strict, noKind, "kind not set"},
		{Warn, unknownField, ""},
		{Warn, listItem, ""},
		{Warn, noKind, "kind not set"},
		{Ignore, unknownField, ""},
		{Ignore, noKind, ""},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+strings.SplitN(tt.manifest, "\n", 3)[1], func(t *testing.T) {
			err := New(src, tt.mode).ValidateBytes([]byte(tt.manifest))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseDirective(t *testing.T) {
	for in, want := range map[string]string{"strict": Strict, "true": Strict, "warn": Warn, "ignore": Ignore, "false": Ignore} {
		if got, err := ParseDirective(in); err != nil || got != want {
			t.Errorf("ParseDirective(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseDirective("maybe"); err == nil {
		t.Error("ParseDirective(maybe) accepted")
	}
}

// withPatch is podDoc with a PATCH operation for Pod taking params.
func withPatch(params string) string {
	return strings.Replace(podDoc, `"paths":{}`, `"paths":{"/api/v1/namespaces/{namespace}/pods/{name}":{"patch":{
 "x-kubernetes-group-version-kind":{"group":"","kind":"Pod","version":"v1"},"parameters":[`+params+`]}}}`, 1)
}

// As kubectl, a kind the server validates itself (its PATCH takes
// fieldValidation) is not checked here: the server refuses that one object
// and the documents after it are still sent. A List's items are, as the
// server never sees the List.
func TestServerValidatedKinds(t *testing.T) {
	fieldValidation := `{"name":"fieldValidation","in":"query","schema":{"type":"string"}}`
	unknownField := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspecc: {}\n"
	list := "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}, specc: {}}\n"
	tests := []struct {
		name, doc, manifest, want string // want "" means valid
	}{
		{"the server validates", withPatch(fieldValidation), unknownField, ""},
		{"the server validates, through a shared parameter", strings.Replace(withPatch(`{"$ref":"#/components/parameters/fv"}`),
			`"components":{`, `"components":{"parameters":{"fv":`+fieldValidation+`},`, 1), unknownField, ""},
		{"the PATCH has no fieldValidation", withPatch(`{"name":"dryRun","in":"query"}`), unknownField, `unknown field "specc"`},
		{"no PATCH for the kind", podDoc, unknownField, `unknown field "specc"`},
		{"a List's items are still checked", withPatch(fieldValidation), list, `items[0]: unknown field "specc"`},
		{"kind is still required", withPatch(fieldValidation), "apiVersion: v1\nmetadata: {name: web}\n", "kind not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fakeSource{{Version: "v1"}: tt.doc}
			err := New(src, Strict).ValidateBytes([]byte(tt.manifest))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
