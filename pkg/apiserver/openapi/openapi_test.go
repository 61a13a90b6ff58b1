package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientopenapi "k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	explainv2 "k8s.io/kubectl/pkg/explain/v2"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"
	"k8s.io/kubectl/pkg/validation"

	"github.com/kube-lite/kube-lite/pkg/api"
	"github.com/kube-lite/kube-lite/pkg/apiserver/openapi"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

// The builder needs only the descriptive parts of a Resource; these
// stand in for the strategies the apiserver plugs in.
type statusStrategy struct{}

func (statusStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (statusStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}

type scaler struct{}

func (scaler) Scale(runtime.Object) (int32, int32, string) { return 0, 0, "" }
func (scaler) SetReplicas(runtime.Object, int32)           {}

func testResources() []*registry.Resource {
	return []*registry.Resource{
		{
			GroupVersion: corev1.SchemeGroupVersion, Name: "pods", Singular: "pod", Kind: "Pod", Namespaced: true,
			New: func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} },
			Status: statusStrategy{},
			ExtraSubresources: []registry.Subresource{
				{Name: "binding", Kind: "Binding", Verbs: []string{"create"}},
				{Name: "eviction", Kind: "Eviction", Group: "policy", Verbs: []string{"create"}},
				{Name: "log", Kind: "Pod", Verbs: []string{"get"}},
				{Name: "exec", Kind: "PodExecOptions", Verbs: []string{"get", "create"}},
			},
		},
		{
			GroupVersion: corev1.SchemeGroupVersion, Name: "namespaces", Singular: "namespace", Kind: "Namespace",
			New: func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
			Status:            statusStrategy{},
			ExtraSubresources: []registry.Subresource{{Name: "finalize", Kind: "Namespace", Verbs: []string{"update"}}},
		},
		{
			GroupVersion: corev1.SchemeGroupVersion, Name: "secrets", Singular: "secret", Kind: "Secret", Namespaced: true,
			New: func() runtime.Object { return &corev1.Secret{} }, NewList: func() runtime.Object { return &corev1.SecretList{} },
		},
		{
			GroupVersion: appsv1.SchemeGroupVersion, Name: "deployments", Singular: "deployment", Kind: "Deployment", Namespaced: true,
			New: func() runtime.Object { return &appsv1.Deployment{} }, NewList: func() runtime.Object { return &appsv1.DeploymentList{} },
			Status: statusStrategy{}, Scale: scaler{},
		},
	}
}

// serve mounts the documents the way the apiserver will: the v3 root, one
// document per group version, v2 as JSON or protobuf by Accept.
func serve(t *testing.T, b *openapi.Builder) *rest.Config {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/openapi/v3", b.ServeV3Discovery)
	mux.HandleFunc("/openapi/v3/", b.ServeV3)
	mux.HandleFunc("/openapi/v2", b.ServeV2)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

type fixture struct {
	builder   *openapi.Builder
	discovery *discovery.DiscoveryClient
	v3        clientopenapi.Client
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	b := openapi.NewBuilder(testResources(), api.NewScheme())
	dc, err := discovery.NewDiscoveryClientForConfig(serve(t, b))
	if err != nil {
		t.Fatal(err)
	}
	return fixture{builder: b, discovery: dc, v3: dc.OpenAPIV3()}
}

func TestV3RootListsServedGroupVersions(t *testing.T) {
	f := newFixture(t)
	gvs, err := openapi3.NewRoot(f.v3).GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.GroupVersion{{Group: "apps", Version: "v1"}, {Version: "v1"}}
	if fmt.Sprint(gvs) != fmt.Sprint(want) {
		t.Fatalf("group versions = %v, want %v", gvs, want)
	}

	// Clients cache documents by URL; the hash must change with the body.
	paths, err := f.v3.Paths()
	if err != nil {
		t.Fatal(err)
	}
	_, etag, ok := f.builder.V3("api/v1")
	if !ok {
		t.Fatal("no document for api/v1")
	}
	if got, want := paths["api/v1"].ServerRelativeURL(), "/openapi/v3/api/v1?hash="+etag; got != want {
		t.Errorf("serverRelativeURL = %q, want %q", got, want)
	}
	if _, _, ok := f.builder.V3("apis/batch/v1"); ok {
		t.Error("a document for a group version nothing serves")
	}
}

func TestKubectlSeesServerSideFieldValidation(t *testing.T) {
	f := newFixture(t)
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crds: "CustomResourceDefinitionList"})
	v3 := resource.NewQueryParamVerifierV3(dyn, f.v3, resource.QueryParamFieldValidation)
	v2 := resource.NewQueryParamVerifier(dyn, f.discovery, resource.QueryParamFieldValidation)

	tests := []struct {
		gvk       schema.GroupVersionKind
		supported bool
	}{
		{gvk: corev1.SchemeGroupVersion.WithKind("Pod"), supported: true},
		{gvk: corev1.SchemeGroupVersion.WithKind("Namespace"), supported: true},
		{gvk: appsv1.SchemeGroupVersion.WithKind("Deployment"), supported: true},
		{gvk: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, supported: false},
	}
	for _, tt := range tests {
		for name, verifier := range map[string]resource.Verifier{"v3": v3, "v2": v2} {
			err := verifier.HasSupport(tt.gvk)
			if got := err == nil; got != tt.supported {
				t.Errorf("%s verifier: HasSupport(%v) = %v, want supported=%v", name, tt.gvk, err, tt.supported)
			}
		}
	}
}

const podYAML = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    ports:
    - containerPort: 80
    resources:
      limits: {cpu: 500m, memory: 128Mi}
    livenessProbe:
      httpGet: {path: /, port: http}
  volumes:
  - name: data
    emptyDir: {}
`

const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
`

type resourcesGetter struct {
	parser *kubectlopenapi.CachedOpenAPIParser
}

func (g resourcesGetter) OpenAPISchema() (kubectlopenapi.Resources, error) { return g.parser.Parse() }

// kubectl validates on the client, from /openapi/v2, when the server does not
// take fieldValidation; the schemas must hold up to that too.
func TestKubectlClientSideValidation(t *testing.T) {
	f := newFixture(t)
	v := validation.NewSchemaValidation(resourcesGetter{kubectlopenapi.NewOpenAPIParser(f.discovery)})

	tests := []struct {
		name    string
		yaml    string
		wantErr []string
	}{
		{name: "valid pod", yaml: podYAML},
		{name: "valid deployment", yaml: deploymentYAML},
		{
			name:    "unknown field",
			yaml:    strings.Replace(podYAML, "image: nginx:1.27", "imagee: nginx:1.27", 1),
			wantErr: []string{`unknown field "imagee"`, "spec.containers[0]"},
		},
		{
			name:    "missing container name",
			yaml:    strings.Replace(podYAML, "- name: nginx\n", "- tty: true\n", 1),
			wantErr: []string{`missing required field "name"`},
		},
		{
			name:    "wrong type",
			yaml:    strings.Replace(deploymentYAML, "replicas: 3", "replicas: three", 1),
			wantErr: []string{"spec.replicas", "integer"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.ValidateBytes([]byte(tt.yaml))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("ValidateBytes: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateBytes accepted the manifest, want an error mentioning %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestKubectlExplain(t *testing.T) {
	f := newFixture(t)
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	deployments := appsv1.SchemeGroupVersion.WithResource("deployments")
	tests := []struct {
		name    string
		gvr     schema.GroupVersionResource
		path    []string
		want    []string
		wantErr string
	}{
		{name: "pods", gvr: pods, want: []string{"KIND:       Pod", "VERSION:    v1", "spec\t<PodSpec>", "Pod is a collection of containers"}},
		{name: "pods.spec", gvr: pods, path: []string{"spec"}, want: []string{"FIELD: spec <PodSpec>", "containers\t<[]Container> -required-", "nodeName\t<string>"}},
		{name: "pods.spec.containers.ports", gvr: pods, path: []string{"spec", "containers", "ports"}, want: []string{"containerPort\t<integer> -required-"}},
		{name: "deployments.spec", gvr: deployments, path: []string{"spec"}, want: []string{"GROUP:      apps", "replicas\t<integer>", "template\t<PodTemplateSpec> -required-"}},
		{name: "no such field", gvr: pods, path: []string{"spec", "nope"}, wantErr: `field "nope" does not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := explainv2.PrintModelDescription(tt.path, &out, f.v3, tt.gvr, false, "plaintext")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("explain error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("explain: %v", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("explain output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// kubectl apply computes its strategic merge patch from the v3 schema of the
// kind; with our schema it must produce the patch Go's struct tags give.
func TestApplyPatchFromSchemaMatchesBuiltins(t *testing.T) {
	f := newFixture(t)
	spec, err := openapi3.NewRoot(f.v3).GVSpec(corev1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}

	var podSchema *strategicpatch.PatchMetaFromOpenAPIV3
	for name, s := range spec.Components.Schemas {
		var gvks []map[string]string
		if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil {
			continue
		}
		for _, gvk := range gvks {
			if gvk["kind"] == "Pod" && gvk["version"] == "v1" && gvk["group"] == "" {
				if name != "io.k8s.api.core.v1.Pod" {
					t.Errorf("Pod GVK on %s", name)
				}
				podSchema = &strategicpatch.PatchMetaFromOpenAPIV3{Schema: s, SchemaList: spec.Components.Schemas}
			}
		}
	}
	if podSchema == nil {
		t.Fatal("no component schema carries the Pod GVK")
	}

	// apply only takes this path if PATCH of the kind accepts strategic merge.
	strategic := false
	for _, item := range spec.Paths.Paths {
		if op := item.Patch; op != nil && op.RequestBody != nil {
			if _, ok := op.RequestBody.Content["application/strategic-merge-patch+json"]; ok {
				strategic = true
			}
		}
	}
	if !strategic {
		t.Error("no PATCH operation accepts application/strategic-merge-patch+json")
	}

	original := toJSON(t, podYAML)
	// Change one container's image and one port, add an env var, drop the
	// volume: merge keys decide whether lists are merged or replaced.
	modified := toJSON(t, strings.NewReplacer(
		"image: nginx:1.27", "image: nginx:1.28\n    env:\n    - {name: MODE, value: prod}",
		"- containerPort: 80", "- containerPort: 8080",
		"  volumes:\n  - name: data\n    emptyDir: {}\n", "",
	).Replace(podYAML))
	current := toJSON(t, podYAML+"  nodeName: node-1\n")

	fromSchema, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, *podSchema, false)
	if err != nil {
		t.Fatalf("patch from openapi v3: %v", err)
	}
	fromStruct, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, mustPatchMeta(t, &corev1.Pod{}), false)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, fromSchema, fromStruct) {
		t.Errorf("patch from schema\n%s\ndiffers from patch from struct tags\n%s", fromSchema, fromStruct)
	}
	if !bytes.Contains(fromSchema, []byte(`"$setElementOrder/containers"`)) {
		t.Errorf("patch %s does not merge containers by name", fromSchema)
	}
}

func TestComponentSchemas(t *testing.T) {
	b := openapi.NewBuilder(testResources(), api.NewScheme())
	body, _, _ := b.V3("api/v1")
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas
	prop := func(def, name string) map[string]any {
		p, _ := schemas[def]["properties"].(map[string]any)[name].(map[string]any)
		return p
	}
	tests := []struct {
		name string
		got  any
		want string
	}{
		{"Time", schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Time"], `{"description":"Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.","format":"date-time","type":"string"}`},
		{"pull policy enum", prop("io.k8s.api.core.v1.Container", "imagePullPolicy")["enum"], `["Always","Never","IfNotPresent"]`},
		{"Quantity types", schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]["oneOf"], `[{"type":"string"},{"type":"number"}]`},
		{"IntOrString format", schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"], `"int-or-string"`},
		{"FieldsV1", schemas["io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"]["type"], `"object"`},
		{"Secret data", prop("io.k8s.api.core.v1.Secret", "data")["additionalProperties"], `{"format":"byte","type":"string"}`},
		{"labels", prop("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "labels")["additionalProperties"], `{"type":"string"}`},
		{"Container required", schemas["io.k8s.api.core.v1.Container"]["required"], `["name"]`},
		{"PodSpec required", schemas["io.k8s.api.core.v1.PodSpec"]["required"], `["containers"]`},
		{"ObjectMeta required", schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["required"], `null`},
		{"ports list keys", prop("io.k8s.api.core.v1.Container", "ports")["x-kubernetes-list-map-keys"], `["containerPort","protocol"]`},
		{"ports merge key", prop("io.k8s.api.core.v1.Container", "ports")["x-kubernetes-patch-merge-key"], `"containerPort"`},
		{"volumes strategy", prop("io.k8s.api.core.v1.PodSpec", "volumes")["x-kubernetes-patch-strategy"], `"merge,retainKeys"`},
		{"Pod GVK", schemas["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"], `[{"group":"","kind":"Pod","version":"v1"}]`},
		{"Eviction GVK", schemas["io.k8s.api.policy.v1.Eviction"]["x-kubernetes-group-version-kind"], `[{"group":"policy","kind":"Eviction","version":"v1"}]`},
		{"TypeMeta inlined", prop("io.k8s.api.core.v1.Pod", "apiVersion")["type"], `"string"`},
		{"VolumeSource inlined", prop("io.k8s.api.core.v1.Volume", "emptyDir")["allOf"], `[{"$ref":"#/components/schemas/io.k8s.api.core.v1.EmptyDirVolumeSource"}]`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.got)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s = %s, want %s", tt.name, got, tt.want)
		}
	}
	if _, ok := schemas["io.k8s.api.apps.v1.Deployment"]; ok {
		t.Error("api/v1 document carries apps/v1 Deployment")
	}
}

func TestDocumentsAreStable(t *testing.T) {
	a := openapi.NewBuilder(testResources(), api.NewScheme())
	b := openapi.NewBuilder(testResources(), api.NewScheme())
	for _, gv := range []string{"api/v1", "apis/apps/v1"} {
		bodyA, etagA, _ := a.V3(gv)
		bodyB, etagB, _ := b.V3(gv)
		if !bytes.Equal(bodyA, bodyB) || etagA != etagB {
			t.Errorf("%s differs between two builds of the same resources", gv)
		}
	}
	if !bytes.Equal(a.V3Discovery(), b.V3Discovery()) {
		t.Error("v3 discovery differs between two builds")
	}
	v2a, _ := a.V2()
	v2b, _ := b.V2()
	if !bytes.Equal(v2a, v2b) {
		t.Error("v2 differs between two builds")
	}
}

func toJSON(t *testing.T, y string) []byte {
	t.Helper()
	j, err := yaml.ToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func mustPatchMeta(t *testing.T, obj runtime.Object) strategicpatch.LookupPatchMeta {
	t.Helper()
	m, err := strategicpatch.NewPatchMetaFromStruct(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
