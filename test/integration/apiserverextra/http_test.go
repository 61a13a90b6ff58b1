package apiserverextra

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"

	kubeliteversion "github.com/kube-lite/kube-lite/pkg/version"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func TestBadInput(t *testing.T) {
	s := framework.StartAPIServer(t)
	raw := newRaw(t, s)
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"` + strings.Repeat("x", 3<<20+1) + `"}}`

	cases := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		wantCode    int
		wantReason  metav1.StatusReason
	}{
		{"malformed JSON", http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap",`, 400, metav1.StatusReasonBadRequest},
		{"malformed YAML", http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: [name: x\n", 400, metav1.StatusReasonBadRequest},
		{"kind does not match the path", http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`, 400, metav1.StatusReasonBadRequest},
		{"unknown resource", http.MethodGet, "/api/v1/namespaces/default/widgets", "", "", 404, metav1.StatusReasonNotFound},
		{"unknown group", http.MethodGet, "/apis/example.com/v1/widgets", "", "", 404, metav1.StatusReasonNotFound},
		{"missing object", http.MethodGet, "/api/v1/namespaces/default/configmaps/absent", "", "", 404, metav1.StatusReasonNotFound},
		{"wrong verb on a collection", http.MethodPut, "/api/v1/namespaces/default/configmaps", "application/json", `{}`, 405, metav1.StatusReasonMethodNotAllowed},
		{"wrong verb on a subresource", http.MethodDelete, "/api/v1/namespaces/default/pods/p/binding", "", "", 405, metav1.StatusReasonMethodNotAllowed},
		{"deletecollection of namespaces", http.MethodDelete, "/api/v1/namespaces", "", "", 405, metav1.StatusReasonMethodNotAllowed},
		{"body over 3 MiB", http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", big, 413, metav1.StatusReasonRequestEntityTooLarge},
		{"unsupported media type", http.MethodPost, "/api/v1/namespaces/default/configmaps", "text/csv", "a,b", 415, metav1.StatusReasonUnsupportedMediaType},
		{"unknown field with fieldValidation=Strict", http.MethodPost, "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"spec":{}}`, 400, metav1.StatusReasonBadRequest},
		{"a field of the wrong type", http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":1}}`, 400, metav1.StatusReasonBadRequest},
		{"a patch type on create", http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/merge-patch+json", `{"metadata":{"name":"x"}}`, 415, metav1.StatusReasonUnsupportedMediaType},
		{"a patch in plain JSON", http.MethodPatch, "/api/v1/namespaces/default/configmaps/x", "application/json", `{}`, 415, metav1.StatusReasonUnsupportedMediaType},
		{"a subresource kube-lite does not serve", http.MethodPost, "/api/v1/namespaces/default/pods/p/exec", "", "", 404, metav1.StatusReasonNotFound},
	}
	// Messages as upstream words them: clients and people search for them.
	upstreamMessages := map[string]string{
		"wrong verb on a collection":     "the server does not allow this method on the requested resource",
		"wrong verb on a subresource":    "the server does not allow this method on the requested resource",
		"deletecollection of namespaces": "the server does not allow this method on the requested resource",
		"unsupported media type":         "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
		"a patch type on create":         "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
		"a patch in plain JSON":          "415: Unsupported Media Type",
		"unknown Accept": "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf, " +
			"application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
		// kubectl create (which asks for Strict) prints these after "error when creating".
		"unknown field with fieldValidation=Strict": `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "spec"`,
		"a field of the wrong type":                 `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number`,
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := raw.do(t, tc.method, tc.path, tc.contentType, []byte(tc.body))
			if r.code != tc.wantCode {
				t.Fatalf("%s %s = %d, want %d; body: %.300s", tc.method, tc.path, r.code, tc.wantCode, r.body)
			}
			st := r.status(t)
			if st.Code != int32(tc.wantCode) || st.Reason != tc.wantReason {
				t.Errorf("Status code=%d reason=%q, want %d %q (message %q)", st.Code, st.Reason, tc.wantCode, tc.wantReason, st.Message)
			}
			if st.Message == "" {
				t.Error("Status has no message")
			}
			if strings.HasSuffix(tc.path, "/exec") && !strings.Contains(st.Message, "pods/exec") {
				t.Errorf("message %q does not name the subresource", st.Message)
			}
			if want, ok := upstreamMessages[tc.name]; ok && !strings.HasPrefix(st.Message, want) {
				t.Errorf("message %q, want upstream's %q", st.Message, want)
			}
		})
	}
	t.Run("namespaces have no deletecollection", func(t *testing.T) {
		rl, err := s.Client.Discovery().ServerResourcesForGroupVersion("v1")
		if err != nil {
			t.Fatal(err)
		}
		if ns := find(rl.APIResources, "namespaces"); ns == nil || slices.Contains(ns.Verbs, "deletecollection") {
			t.Errorf("namespaces in discovery = %+v, want it without deletecollection", ns)
		}
		if _, err := s.Client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
			t.Errorf("the refused deletecollection touched namespace default: %v", err)
		}
	})
	t.Run("unknown Accept", func(t *testing.T) {
		r := raw.do(t, http.MethodGet, "/api/v1/namespaces/default/configmaps", "", nil, "Accept", "text/html")
		if st := r.status(t); r.code != http.StatusNotAcceptable || st.Message != upstreamMessages["unknown Accept"] {
			t.Errorf("Accept: text/html = %d %q, want 406 %q", r.code, st.Message, upstreamMessages["unknown Accept"])
		}
		// A write whose answer cannot be given is not made.
		r = raw.do(t, http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json",
			[]byte(`{"metadata":{"name":"unanswerable"}}`), "Accept", "text/html")
		want := "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf"
		if st := r.status(t); r.code != http.StatusNotAcceptable || st.Message != want {
			t.Errorf("POST with Accept: text/html = %d %q, want 406 %q", r.code, st.Message, want)
		}
		if r := raw.do(t, http.MethodGet, "/api/v1/namespaces/default/configmaps/unanswerable", "", nil); r.code != http.StatusNotFound {
			t.Errorf("after a POST refused with 406, GET = %d, want 404 (not created)", r.code)
		}
		// A Table of a version meta.k8s.io does not have is refused, or
		// the next acceptable type is served.
		r = raw.do(t, http.MethodGet, "/api/v1/namespaces/default/configmaps", "", nil, "Accept", "application/json;as=Table;v=v9;g=meta.k8s.io")
		if st := r.status(t); r.code != http.StatusNotAcceptable || !strings.HasPrefix(st.Message, "only the following media types are accepted") {
			t.Errorf("Table v9 = %d %q, want 406", r.code, st.Message)
		}
		r = raw.do(t, http.MethodGet, "/api/v1/namespaces/default/configmaps", "", nil, "Accept", "application/json;as=Table;v=v9;g=meta.k8s.io,application/json")
		if r.code != http.StatusOK || !strings.Contains(string(r.body), `"kind":"ConfigMapList"`) {
			t.Errorf("Table v9 then JSON = %d %.200s, want a ConfigMapList", r.code, r.body)
		}
	})
}

// TestBadRequestOptions: a bad dryRun, fieldValidation, fieldManager or
// propagationPolicy is a 422 naming the options kind, worded as upstream.
func TestBadRequestOptions(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	raw := newRaw(t, s)
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const (
		cms = "/api/v1/namespaces/default/configmaps"
		cm  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`
	)
	cases := []struct {
		name, method, path, contentType, body string
		want                                  string
	}{
		{"create fieldValidation", http.MethodPost, cms + "?fieldValidation=Loose", "application/json", cm,
			`CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"`},
		{"create dryRun", http.MethodPost, cms + "?dryRun=Yes", "application/json", cm,
			`CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Yes"]: supported values: "All"`},
		{"create fieldManager", http.MethodPost, cms + "?fieldManager=" + strings.Repeat("m", 129), "application/json", cm,
			`CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes`},
		{"update fieldValidation", http.MethodPut, cms + "/x?fieldValidation=Loose", "application/json", cm,
			`UpdateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"`},
		{"patch dryRun", http.MethodPatch, cms + "/x?dryRun=Yes", "application/merge-patch+json", `{}`,
			`PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Yes"]: supported values: "All"`},
		{"patch force", http.MethodPatch, cms + "/x?force=true", "application/merge-patch+json", `{}`,
			`PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`},
		{"delete dryRun", http.MethodDelete, cms + "/x?dryRun=Yes", "", "",
			`DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Yes"]: supported values: "All"`},
		{"delete propagationPolicy", http.MethodDelete, cms + "/x?propagationPolicy=Sometimes", "", "",
			`DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sometimes": supported values: "Foreground", "Background", "Orphan", "nil"`},
		{"delete body orphan and policy", http.MethodDelete, cms + "/x", "application/json", `{"orphanDependents":true,"propagationPolicy":"Orphan"}`,
			`DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := raw.do(t, tc.method, tc.path, tc.contentType, []byte(tc.body))
			st := r.status(t)
			if r.code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Message != tc.want {
				t.Fatalf("%s = %d %s %q, want 422 Invalid %q", tc.name, r.code, st.Reason, st.Message, tc.want)
			}
			if st.Details == nil || st.Details.Group != "meta.k8s.io" || len(st.Details.Causes) == 0 {
				t.Errorf("details = %+v, want group meta.k8s.io with causes", st.Details)
			}
		})
	}
	if _, err := s.Client.CoreV1().ConfigMaps("default").Get(ctx, "x", metav1.GetOptions{}); err != nil {
		t.Errorf("a refused delete removed the object: %v", err)
	}
}

func TestTablesAndDiscovery(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	raw := newRaw(t, s)
	if _, err := s.Client.CoreV1().Pods("default").Create(ctx, newPod("tabled"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("pods table has upstream columns", func(t *testing.T) {
		r := raw.do(t, http.MethodGet, "/api/v1/namespaces/default/pods", "", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		if r.code != 200 {
			t.Fatalf("code %d: %s", r.code, r.body)
		}
		var table metav1.Table
		if err := json.Unmarshal(r.body, &table); err != nil {
			t.Fatal(err)
		}
		if table.Kind != "Table" {
			t.Fatalf("kind = %q, want Table", table.Kind)
		}
		var names []string
		for _, c := range table.ColumnDefinitions {
			if c.Priority == 0 {
				names = append(names, c.Name)
			}
		}
		if want := []string{"Name", "Ready", "Status", "Restarts", "Age"}; !slices.Equal(names, want) {
			t.Errorf("columns = %v, want %v", names, want)
		}
		if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
			t.Fatalf("rows = %+v, want one row with a cell per column", table.Rows)
		}
		if table.Rows[0].Cells[0] != "tabled" || table.Rows[0].Cells[1] != "0/2" || table.Rows[0].Cells[2] != "Pending" {
			t.Errorf("row = %v, want tabled 0/2 Pending ...", table.Rows[0].Cells)
		}
	})

	t.Run("single object as table", func(t *testing.T) {
		r := raw.do(t, http.MethodGet, "/api/v1/namespaces/default/pods/tabled", "", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		var table metav1.Table
		if err := json.Unmarshal(r.body, &table); err != nil || r.code != 200 {
			t.Fatalf("code %d err %v: %s", r.code, err, r.body)
		}
		if len(table.Rows) != 1 {
			t.Fatalf("rows = %d, want 1", len(table.Rows))
		}
	})

	t.Run("partial object metadata", func(t *testing.T) {
		const list, one = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
		r := raw.do(t, http.MethodGet, "/api/v1/namespaces/default/pods", "", nil, "Accept", "application/json;"+list)
		var pl metav1.PartialObjectMetadataList
		if err := json.Unmarshal(r.body, &pl); err != nil || r.code != 200 || pl.Kind != "PartialObjectMetadataList" || len(pl.Items) != 1 {
			t.Fatalf("code %d err %v: %s", r.code, err, r.body)
		}
		if it := pl.Items[0]; it.Kind != "PartialObjectMetadata" || it.APIVersion != "meta.k8s.io/v1" || it.Name != "tabled" {
			t.Errorf("item = %+v, want PartialObjectMetadata meta.k8s.io/v1 tabled", it.TypeMeta)
		}
		// The wrong shape is refused, as upstream does, rather than
		// answered in a kind the client did not ask for.
		for path, accept := range map[string]string{
			"/api/v1/namespaces/default/pods":        one,
			"/api/v1/namespaces/default/pods/tabled": list,
		} {
			r := raw.do(t, http.MethodGet, path, "", nil, "Accept", "application/json;"+accept)
			if st := r.status(t); r.code != http.StatusNotAcceptable || st.Reason != metav1.StatusReasonNotAcceptable ||
				!strings.HasPrefix(st.Message, "you requested PartialObjectMetadata") {
				t.Errorf("GET %s as %s = %d %s, want 406 NotAcceptable", path, accept, r.code, r.body)
			}
		}
	})

	t.Run("discovery through client-go", func(t *testing.T) {
		dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
		if err != nil {
			t.Fatal(err)
		}
		core, err := dc.ServerResourcesForGroupVersion("v1")
		if err != nil {
			t.Fatal(err)
		}
		pods := find(core.APIResources, "pods")
		if pods == nil || !pods.Namespaced || !slices.Contains(pods.ShortNames, "po") || !slices.Contains(pods.Verbs, "watch") {
			t.Errorf("pods in discovery = %+v, want namespaced, short name po, verb watch", pods)
		}
		if find(core.APIResources, "pods/status") == nil || find(core.APIResources, "pods/binding") == nil {
			t.Error("pods/status or pods/binding missing from discovery")
		}
		if ns := find(core.APIResources, "namespaces"); ns == nil || ns.Namespaced {
			t.Errorf("namespaces = %+v, want cluster-scoped", ns)
		}
		apps, err := dc.ServerResourcesForGroupVersion("apps/v1")
		if err != nil {
			t.Fatal(err)
		}
		if d := find(apps.APIResources, "deployments"); d == nil || !slices.Contains(d.ShortNames, "deploy") {
			t.Errorf("deployments = %+v, want short name deploy", d)
		}
		scale := find(apps.APIResources, "deployments/scale")
		if scale == nil || scale.Kind != "Scale" || scale.Group != "autoscaling" {
			t.Errorf("deployments/scale = %+v, want kind Scale in group autoscaling", scale)
		}
		groups, err := dc.ServerGroups()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range groups.Groups {
			names = append(names, g.Name)
		}
		for _, want := range []string{"", "apps", "batch", "coordination.k8s.io", "rbac.authorization.k8s.io"} {
			if !slices.Contains(names, want) {
				t.Errorf("group %q missing from %v", want, names)
			}
		}
	})

	t.Run("aggregated discovery", func(t *testing.T) {
		// kubectl and client-go ask for this first; without it they fall
		// back to one request per group version.
		const accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
		lookup := func(path, group, version, resource string) *apidiscoveryv2.APIResourceDiscovery {
			t.Helper()
			r := raw.do(t, http.MethodGet, path, "", nil, "Accept", accept)
			if ct := r.header.Get("Content-Type"); r.code != 200 || ct != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
				t.Fatalf("GET %s = %d, Content-Type %q", path, r.code, ct)
			}
			var list apidiscoveryv2.APIGroupDiscoveryList
			if err := json.Unmarshal(r.body, &list); err != nil {
				t.Fatal(err)
			}
			for _, g := range list.Items {
				for _, v := range g.Versions {
					for i, res := range v.Resources {
						if g.Name == group && v.Version == version && res.Resource == resource {
							if v.Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent {
								t.Errorf("%s/%s freshness %q", group, version, v.Freshness)
							}
							return &v.Resources[i]
						}
					}
				}
			}
			t.Fatalf("%s/%s %s not in %s", group, version, resource, path)
			return nil
		}
		pods := lookup("/api", "", "v1", "pods")
		if pods.Scope != apidiscoveryv2.ScopeNamespace || pods.ResponseKind.Kind != "Pod" || !slices.Contains(pods.ShortNames, "po") {
			t.Errorf("pods = %+v", pods)
		}
		var subs []string
		for _, s := range pods.Subresources {
			subs = append(subs, s.Subresource)
		}
		if !slices.Contains(subs, "status") || !slices.Contains(subs, "binding") {
			t.Errorf("pods subresources = %v, want status and binding among them", subs)
		}
		deploy := lookup("/apis", "apps", "v1", "deployments")
		var scale *apidiscoveryv2.APISubresourceDiscovery
		for i := range deploy.Subresources {
			if deploy.Subresources[i].Subresource == "scale" {
				scale = &deploy.Subresources[i]
			}
		}
		if scale == nil || *scale.ResponseKind != (metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}) {
			t.Errorf("deployments/scale = %+v, want responseKind autoscaling/v1 Scale", scale)
		}
		if ns := lookup("/api", "", "v1", "namespaces"); ns.Scope != apidiscoveryv2.ScopeCluster {
			t.Errorf("namespaces scope %q", ns.Scope)
		}
		// Legacy discovery still answers a plain JSON Accept, with the
		// storage version hashes upstream publishes.
		r := raw.do(t, http.MethodGet, "/api/v1", "", nil, "Accept", "application/json")
		var core metav1.APIResourceList
		if err := json.Unmarshal(r.body, &core); err != nil {
			t.Fatal(err)
		}
		if cm := find(core.APIResources, "configmaps"); cm == nil || cm.StorageVersionHash != "qFsyl6wFWjQ=" {
			t.Errorf("configmaps = %+v, want upstream's storageVersionHash qFsyl6wFWjQ=", cm)
		}
	})

	t.Run("version", func(t *testing.T) {
		r := raw.do(t, http.MethodGet, "/version", "", nil)
		var v version.Info
		if err := json.Unmarshal(r.body, &v); err != nil || r.code != 200 {
			t.Fatalf("code %d err %v: %s", r.code, err, r.body)
		}
		if want := kubeliteversion.Get(); v.Major != want.Major || v.Minor != want.Minor || v.GitVersion != want.GitVersion || v.Platform != want.Platform {
			t.Errorf("version = %+v, want %+v", v, want)
		}
	})

	t.Run("readyz verbose lists etcd", func(t *testing.T) {
		r := raw.do(t, http.MethodGet, "/readyz?verbose", "", nil)
		if r.code != 200 || !bytes.Contains(r.body, []byte("[+]etcd ok")) || !bytes.Contains(r.body, []byte("readyz check passed")) {
			t.Errorf("readyz?verbose = %d: %s", r.code, r.body)
		}
		if r := raw.do(t, http.MethodGet, "/livez", "", nil); r.code != 200 {
			t.Errorf("livez = %d: %s", r.code, r.body)
		}
	})

	t.Run("metrics count requests", func(t *testing.T) {
		r := raw.do(t, http.MethodGet, "/metrics", "", nil)
		if r.code != 200 {
			t.Fatalf("metrics = %d", r.code)
		}
		for _, want := range []string{"apiserver_request_total{", "apiserver_request_duration_seconds_bucket{"} {
			if !bytes.Contains(r.body, []byte(want)) {
				t.Errorf("/metrics has no %s", want)
			}
		}
		if !bytes.Contains(r.body, []byte(`resource="pods"`)) {
			t.Error("/metrics does not count the pods requests made by this test")
		}
	})
}

func find(rs []metav1.APIResource, name string) *metav1.APIResource {
	for i := range rs {
		if rs[i].Name == name {
			return &rs[i]
		}
	}
	return nil
}

func TestScaleSubresource(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	deps := s.Client.AppsV1().Deployments("default")
	if _, err := deps.Create(ctx, newDeployment("scaled"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sc, err := deps.GetScale(ctx, "scaled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Replicas != 2 || sc.Name != "scaled" {
		t.Fatalf("scale = %+v, want spec.replicas 2", sc)
	}
	if sc.Status.Selector != "app=scaled" {
		t.Errorf("scale status.selector = %q, want app=scaled", sc.Status.Selector)
	}
	sc.Spec.Replicas = 5
	if _, err := deps.UpdateScale(ctx, "scaled", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update scale: %v", err)
	}
	d, err := deps.Get(ctx, "scaled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 5 || d.Generation != 2 {
		t.Fatalf("after scale: replicas=%d generation=%d, want 5 and 2", *d.Spec.Replicas, d.Generation)
	}
	stale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "scaled", Namespace: "default", ResourceVersion: sc.ResourceVersion}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
	if _, err := deps.UpdateScale(ctx, "scaled", stale, metav1.UpdateOptions{}); err == nil {
		t.Error("scale update with a stale resourceVersion accepted")
	}
	other := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
	if _, err := deps.UpdateScale(ctx, "scaled", other, metav1.UpdateOptions{}); !apierrors.IsBadRequest(err) ||
		err.Error() != "the name of the object (other) does not match the name on the URL (scaled)" {
		t.Errorf("scale update naming another object: err = %v, want upstream's 400", err)
	}
	if d, err = deps.Get(ctx, "scaled", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 5 {
		t.Errorf("after refused scale updates: replicas %d, want 5", *d.Spec.Replicas)
	}
	// A JSON patch the patch library cannot apply (it panics on a replace
	// of the whole document without a value) is the client's 400, as on
	// the object itself, never a 500.
	resp := newRaw(t, s).do(t, http.MethodPatch, "/apis/apps/v1/namespaces/default/deployments/scaled/scale",
		"application/json-patch+json", []byte(`[{"op":"replace","path":""}]`))
	if resp.code != http.StatusBadRequest || !strings.Contains(string(resp.body), "the patch could not be applied") {
		t.Errorf("malformed scale JSON patch: %d %s, want 400 the patch could not be applied", resp.code, resp.body)
	}
}
