package apply

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest/fake"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

func obj(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(js), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// live returns the object as the server holds it after applying file
// (annotation included) and adding fields of its own.
func live(t *testing.T, file, extra string) *unstructured.Unstructured {
	t.Helper()
	mod, _, err := modifiedConfiguration(obj(t, file))
	if err != nil {
		t.Fatal(err)
	}
	u := obj(t, string(mod))
	if extra != "" {
		for k, v := range obj(t, extra).Object {
			u.Object[k] = v
		}
	}
	return u
}

func TestModifiedConfigurationRecordsTheFileWithoutItself(t *testing.T) {
	in := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","annotations":{"a":"b","kubectl.kubernetes.io/last-applied-configuration":"old"}},"data":{"k":"v"}}`)
	mod, _, err := modifiedConfiguration(in)
	if err != nil {
		t.Fatal(err)
	}
	out := obj(t, string(mod))
	recorded := out.GetAnnotations()[LastAppliedAnnotation]
	want := `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{"a":"b"},"name":"c"}}` + "\n"
	if recorded != want {
		t.Fatalf("annotation %q, want %q", recorded, want)
	}
	if out.GetAnnotations()["a"] != "b" {
		t.Errorf("other annotations lost: %v", out.GetAnnotations())
	}
}

func TestModifiedConfigurationRecordsWhatKubectlRecords(t *testing.T) {
	// kubectl records an empty annotations map when the file has none; a
	// different byte makes kubectl and kubectl-lite each report the
	// other's apply of an unchanged file as "configured".
	mod, _, err := modifiedConfiguration(obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}`))
	if err != nil {
		t.Fatal(err)
	}
	recorded := obj(t, string(mod)).GetAnnotations()[LastAppliedAnnotation]
	want := `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"c"}}` + "\n"
	if recorded != want {
		t.Fatalf("annotation %q, want kubectl's %q", recorded, want)
	}
}

func TestThreeWayPatch(t *testing.T) {
	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	podGVK := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	widgetGVK := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	tests := []struct {
		name                  string
		gvk                   schema.GroupVersionKind
		previous, file, extra string
		wantType              types.PatchType
		want                  string // the patch, minus the annotation
	}{
		{"unchanged file, server-added fields kept", cmGVK,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}`,
			`{"status":{"x":"y"}}`, types.StrategicMergePatchType, `{}`},
		{"key removed from the file is deleted", cmGVK,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1","b":"2"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}`,
			"", types.StrategicMergePatchType, `{"data":{"b":null}}`},
		{"list item merged by key", podGVK,
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}`,
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x2"},{"name":"b","image":"y"}]}}`,
			"", types.StrategicMergePatchType, `{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"image":"x2","name":"a"}]}}`},
		{"unknown kinds get a JSON merge patch", widgetGVK,
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"a":1,"b":2}}`,
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"a":1}}`,
			"", types.MergePatchType, `{"spec":{"b":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := live(t, tt.previous, tt.extra)
			mod, _, err := modifiedConfiguration(obj(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			patch, pt, err := ThreeWayPatch(tt.gvk, mod, current, true)
			if err != nil {
				t.Fatal(err)
			}
			if pt != tt.wantType {
				t.Errorf("patch type %s, want %s", pt, tt.wantType)
			}
			var p map[string]interface{}
			if err := json.Unmarshal(patch, &p); err != nil {
				t.Fatal(err)
			}
			if md, ok := p["metadata"].(map[string]interface{}); ok {
				// The annotation changes with every file change; its
				// content is covered above.
				delete(md["annotations"].(map[string]interface{}), LastAppliedAnnotation)
				if len(md["annotations"].(map[string]interface{})) == 0 {
					delete(md, "annotations")
				}
				if len(md) == 0 {
					delete(p, "metadata")
				}
			}
			got, _ := json.Marshal(p)
			if string(got) != tt.want {
				t.Fatalf("patch %s, want %s", got, tt.want)
			}
		})
	}
}

func TestThreeWayPatchRefusesToRename(t *testing.T) {
	current := live(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`, "")
	mod, _, err := modifiedConfiguration(obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ThreeWayPatch(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, mod, current, true); err == nil {
		t.Fatal("a patch that renames the object was computed")
	}
}

// TestDryRunFlag: apply and create take --dry-run as kubectl does: bare
// (a client dry run) and with kubectl's words for a bad value.
func TestDryRunFlag(t *testing.T) {
	streams := genericiooptions.NewTestIOStreamsDiscard()
	for name, newCmd := range map[string]func(cmdutil.Factory, genericiooptions.IOStreams) *cobra.Command{"apply": NewApplyCmd, "create": NewCreateCmd} {
		cmd := newCmd(nil, streams)
		if err := cmd.ParseFlags([]string{"--dry-run"}); err != nil {
			t.Fatalf("%s --dry-run: %v", name, err)
		}
		if dry, err := cmdutil.GetDryRunStrategy(cmd); err != nil || dry != cmdutil.DryRunClient {
			t.Errorf("%s --dry-run: %v, %v; want a client dry run", name, dry, err)
		}
		cmd = newCmd(nil, streams)
		cmd.SetArgs([]string{"-f", "x.yaml", "--dry-run=maybe"})
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		want := `Invalid dry-run value (maybe). Must be "none", "server", or "client".`
		if err := cmd.Execute(); err == nil || err.Error() != want {
			t.Errorf("%s --dry-run=maybe: %v; want %q", name, err, want)
		}
	}
}

// fakeServer holds one ConfigMap; its first PATCHes fail with 409, as when
// another writer changed the object between our GET and PATCH.
type fakeServer struct {
	conflicts int
	gets      int
	patches   []string
	object    string
}

func (s *fakeServer) roundTrip(req *http.Request) (*http.Response, error) {
	reply := func(code int, body string) (*http.Response, error) {
		return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}, nil
	}
	switch req.Method {
	case http.MethodGet:
		s.gets++
		return reply(http.StatusOK, s.object)
	case http.MethodPatch:
		body, _ := io.ReadAll(req.Body)
		s.patches = append(s.patches, string(body))
		if s.conflicts > 0 {
			s.conflicts--
			return reply(http.StatusConflict, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,"message":"the object has been modified"}`)
		}
		return reply(http.StatusOK, s.object)
	}
	return reply(http.StatusMethodNotAllowed, `{}`)
}

func TestApplyRetriesConflicts(t *testing.T) {
	previous := live(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"},"data":{"a":"1"}}`, "")
	stored, err := json.Marshal(previous.Object)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		conflicts   int
		wantErr     bool
		wantPatches int
	}{
		{"one conflict then success", 1, false, 2},
		{"conflicts until the retries run out", maxPatchRetries, true, maxPatchRetries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &fakeServer{conflicts: tt.conflicts, object: string(stored)}
			client := &fake.RESTClient{
				NegotiatedSerializer: resource.UnstructuredPlusDefaultContentConfig().NegotiatedSerializer,
				Client:               fake.CreateHTTPClient(srv.roundTrip),
			}
			info := &resource.Info{
				Client:    client,
				Mapping:   &meta.RESTMapping{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Scope: meta.RESTScopeNamespace},
				Namespace: "ns", Name: "c",
				Object: obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"},"data":{"a":"2"}}`),
			}
			o := &Options{Validate: "strict", Overwrite: true}
			op, err := o.applyOne(context.Background(), info)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && op != "configured" {
				t.Errorf("operation %q, want configured", op)
			}
			if len(srv.patches) != tt.wantPatches {
				t.Errorf("%d PATCHes, want %d", len(srv.patches), tt.wantPatches)
			}
			// Each retry recomputes the patch from a fresh GET.
			if srv.gets != len(srv.patches) {
				t.Errorf("%d GETs for %d PATCHes", srv.gets, len(srv.patches))
			}
		})
	}
}
