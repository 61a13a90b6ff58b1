package apiserverextra

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func TestPatchTypes(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	pods := s.Client.CoreV1().Pods("default")

	cases := []struct {
		name  string
		typ   types.PatchType
		patch string
		check func(t *testing.T, p *corev1.Pod)
	}{
		{
			name:  "json patch adds a label and replaces an image",
			typ:   types.JSONPatchType,
			patch: `[{"op":"add","path":"/metadata/labels/tier","value":"front"},{"op":"replace","path":"/spec/containers/1/image","value":"kube-lite.local/busybox:1.36"}]`,
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Labels["tier"] != "front" || p.Labels["app"] != "web" {
					t.Errorf("labels = %v, want app=web and tier=front", p.Labels)
				}
				if got := p.Spec.Containers[1].Image; got != "kube-lite.local/busybox:1.36" {
					t.Errorf("sidecar image = %q", got)
				}
			},
		},
		{
			name:  "merge patch null removes a label, list replaced whole",
			typ:   types.MergePatchType,
			patch: `{"metadata":{"labels":{"app":null,"tier":"back"}}}`,
			check: func(t *testing.T, p *corev1.Pod) {
				if _, ok := p.Labels["app"]; ok || p.Labels["tier"] != "back" {
					t.Errorf("labels = %v, want only tier=back", p.Labels)
				}
			},
		},
		{
			name:  "strategic merge patch merges containers by name",
			typ:   types.StrategicMergePatchType,
			patch: `{"spec":{"containers":[{"name":"sidecar","image":"kube-lite.local/busybox:1.37"}]}}`,
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.Containers) != 2 {
					t.Fatalf("containers = %d, want 2 (merged by name, not replaced)", len(p.Spec.Containers))
				}
				if p.Spec.Containers[0].Image != "kube-lite.local/busybox:1.35" || p.Spec.Containers[1].Image != "kube-lite.local/busybox:1.37" {
					t.Errorf("images = %q, %q", p.Spec.Containers[0].Image, p.Spec.Containers[1].Image)
				}
			},
		},
		{
			name:  "strategic merge patch null removes a map key",
			typ:   types.StrategicMergePatchType,
			patch: `{"metadata":{"labels":{"app":null}}}`,
			check: func(t *testing.T, p *corev1.Pod) {
				if _, ok := p.Labels["app"]; ok {
					t.Errorf("labels = %v, want app removed", p.Labels)
				}
			},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("patch-" + string(rune('a'+i)))
			created, err := pods.Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := pods.Patch(ctx, p.Name, tc.typ, []byte(tc.patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			tc.check(t, got)
			if got.ResourceVersion == created.ResourceVersion {
				t.Errorf("resourceVersion unchanged after patch: %s", got.ResourceVersion)
			}
			again, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, again)
		})
	}

	t.Run("bad patches are 4xx", func(t *testing.T) {
		if _, err := pods.Create(ctx, newPod("patch-bad"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bad := []struct {
			name  string
			typ   types.PatchType
			patch string
			why   string // in the Status message: the user learns what was wrong
		}{
			{"json patch test op fails", types.JSONPatchType, `[{"op":"test","path":"/metadata/name","value":"other"}]`, "/metadata/name"},
			{"json patch removes what is not there", types.JSONPatchType, `[{"op":"remove","path":"/metadata/labels/nokey"}]`, "/metadata/labels/nokey"},
			{"json patch not a list", types.JSONPatchType, `{"op":"add"}`, "error decoding patch"},
			{"merge patch not json", types.MergePatchType, `{"metadata":`, "error decoding patch"},
			{"strategic patch changes an immutable field", types.StrategicMergePatchType, `{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80}]}]}}`, "spec"},
		}
		for _, b := range bad {
			_, err := pods.Patch(ctx, "patch-bad", b.typ, []byte(b.patch), metav1.PatchOptions{})
			if err == nil {
				t.Errorf("%s: patch accepted", b.name)
				continue
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsConflict(err) {
				t.Errorf("%s: err = %v, want 400, 409 or 422", b.name, err)
			}
			if !strings.Contains(err.Error(), b.why) {
				t.Errorf("%s: err = %q, want it to say %q", b.name, err, b.why)
			}
		}
	})

	t.Run("identity fields are not silently kept", func(t *testing.T) {
		cms := s.Client.CoreV1().ConfigMaps("default")
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "patch-identity"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		refused := []struct {
			name  string
			typ   types.PatchType
			patch string
			want  func(error) bool
			msg   string
		}{
			{"merge patch renames", types.MergePatchType, `{"metadata":{"name":"other"}}`, apierrors.IsBadRequest,
				"the name of the object (other) does not match the name on the URL (patch-identity)"},
			{"strategic patch moves namespace", types.StrategicMergePatchType, `{"metadata":{"namespace":"kube-system"}}`, apierrors.IsBadRequest,
				"the namespace of the provided object does not match the namespace sent on the request"},
			{"json patch changes uid", types.JSONPatchType, `[{"op":"replace","path":"/metadata/uid","value":"zzz"}]`, apierrors.IsInvalid,
				`metadata.uid: Invalid value: "zzz": field is immutable`},
			{"merge patch adds an unqualified finalizer", types.MergePatchType, `{"metadata":{"finalizers":["mine"]}}`, apierrors.IsInvalid,
				`metadata.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified`},
		}
		for _, b := range refused {
			_, err := cms.Patch(ctx, cm.Name, b.typ, []byte(b.patch), metav1.PatchOptions{})
			if !b.want(err) || !strings.Contains(err.Error(), b.msg) {
				t.Errorf("%s: err = %v, want %q", b.name, err, b.msg)
			}
		}
		stale := cm.DeepCopy()
		stale.UID = "not-this-one"
		if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) ||
			!strings.Contains(err.Error(), "Precondition failed: UID in precondition: not-this-one") {
			t.Errorf("update with another uid: err = %v, want 409 naming the uid precondition", err)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "finalizer-bad", Finalizers: []string{"orphan", "example.com/x", "foo"}}},
			metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `metadata.finalizers[2]: Invalid value: "foo"`) {
			t.Errorf("create with finalizer foo: err = %v, want 422 for finalizers[2] only", err)
		}
		got, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.UID != cm.UID || got.ResourceVersion != cm.ResourceVersion || len(got.Finalizers) != 0 {
			t.Errorf("after refused writes: uid %s rv %s finalizers %v, want unchanged", got.UID, got.ResourceVersion, got.Finalizers)
		}
	})
}

// TestPatchBodyErrors: a patch body that is not JSON of its type is
// refused in upstream's words, which differ by patch type and by whether
// the body is first read strictly (fieldValidation Strict or Warn, the
// default).
func TestPatchBodyErrors(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "patched"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	raw := newRaw(t, s)
	const (
		jsonPatch  = "application/json-patch+json"
		mergePatch = "application/merge-patch+json"
		smp        = "application/strategic-merge-patch+json"
	)
	for _, tc := range []struct {
		typ, validation, body string
		code                  int32
		want                  string
	}{
		{jsonPatch, "", `{"op":"add"}`, 400, "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"},
		{jsonPatch, "Strict", `[{"op":"add"`, 400, "error decoding patch: unexpected end of JSON input"},
		{jsonPatch, "Ignore", `{"op":"add"}`, 400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"},
		{mergePatch, "", `{"data":`, 400, "error decoding patch: unexpected end of JSON input"},
		{mergePatch, "Strict", `[1]`, 400, "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{mergePatch, "Ignore", `{"data":`, 400, "Invalid JSON Patch"},
		{mergePatch, "", `null`, 400, "Invalid JSON Patch"},
		{smp, "", `{"data":`, 400, "unexpected end of JSON input"},
		{smp, "Ignore", `{"data":`, 400, "unexpected end of JSON input"},
	} {
		path := "/api/v1/namespaces/default/configmaps/patched"
		if tc.validation != "" {
			path += "?fieldValidation=" + tc.validation
		}
		r := raw.do(t, http.MethodPatch, path, tc.typ, []byte(tc.body))
		if st := r.status(t); st.Code != tc.code || st.Message != tc.want {
			t.Errorf("%s %s %s: %d %q, want %d %q", tc.typ, tc.validation, tc.body, st.Code, st.Message, tc.code, tc.want)
		}
		// Upstream decodes the body only when applying it to the object
		// read: an object that does not exist is a 404 whatever the body.
		path = strings.Replace(path, "/patched", "/missing", 1)
		r = raw.do(t, http.MethodPatch, path, tc.typ, []byte(tc.body))
		if st := r.status(t); st.Code != http.StatusNotFound || st.Message != `configmaps "missing" not found` {
			t.Errorf("%s %s %s of a missing object: %d %q, want 404 not found", tc.typ, tc.validation, tc.body, st.Code, st.Message)
		}
	}

	// What upstream refuses before reading the object is still refused
	// for one that does not exist: the patch type, the body's size and
	// the options.
	for _, tc := range []struct {
		name, query, typ string
		body             []byte
		code             int32
		want             string
	}{
		{"unsupported patch type", "", "application/json", []byte(`{}`), http.StatusUnsupportedMediaType,
			"415: Unsupported Media Type"},
		{"body too large", "", mergePatch, []byte(`{"data":{"k":"` + strings.Repeat("x", 3<<20) + `"}}`), http.StatusRequestEntityTooLarge,
			"Request entity too large: limit is 3145728"},
		{"invalid fieldValidation", "?fieldValidation=Bogus", mergePatch, []byte(`{"data":`), http.StatusUnprocessableEntity,
			`PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"`},
	} {
		r := raw.do(t, http.MethodPatch, "/api/v1/namespaces/default/configmaps/missing"+tc.query, tc.typ, tc.body)
		if st := r.status(t); st.Code != tc.code || !strings.HasPrefix(st.Message, tc.want) {
			t.Errorf("%s of a missing object: %d %q, want %d %q", tc.name, st.Code, st.Message, tc.code, tc.want)
		}
	}

	// Under Strict, an operation's unknown field is refused as upstream's.
	r := raw.do(t, http.MethodPatch, "/api/v1/namespaces/default/configmaps/patched?fieldValidation=Strict", jsonPatch,
		[]byte(`[{"op":"add","path":"/data","value":{"k":"v"},"vaule":"typo"}]`))
	if st := r.status(t); st.Code != http.StatusUnprocessableEntity || !strings.Contains(st.Message, `strict decoding error: json patch unknown field "[0].vaule"`) {
		t.Errorf("JSON patch with an unknown operation field under Strict: %d %q, want 422 naming json patch unknown field \"[0].vaule\"", st.Code, st.Message)
	}
}
