package apiserverextra

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// TestBindingsCollection: POST namespaces/{ns}/bindings, the legacy form of
// pods/binding that older schedulers use, binds the pod its body names
// with the same refusals, and as upstream drops the body's uid and
// resourceVersion, which pods/binding holds the pod to.
func TestBindingsCollection(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	pods := s.Client.CoreV1().Pods("default")
	for _, name := range []string{"legacy", "precond", "drybound"} {
		if _, err := pods.Create(ctx, newPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	post := func(path string, b *corev1.Binding, dryRun bool) error {
		req := s.Client.CoreV1().RESTClient().Post().AbsPath(path).Body(b)
		if dryRun {
			req = req.Param("dryRun", metav1.DryRunAll)
		}
		return req.Do(ctx).Error()
	}
	const collection = "/api/v1/namespaces/default/bindings"
	node := corev1.ObjectReference{Kind: "Node", Name: "node-1"}

	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "legacy", UID: "not-the-pods", ResourceVersion: "1",
		Labels: map[string]string{"topology.kubernetes.io/zone": "z1"}, Annotations: map[string]string{"bound-by": "legacy"}}, Target: node}
	if err := post(collection, b, false); err != nil {
		t.Fatalf("POST bindings: %v, want 201", err)
	}
	got, err := pods.Get(ctx, "legacy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "node-1" || got.Labels["topology.kubernetes.io/zone"] != "z1" || got.Labels["app"] != "web" || got.Annotations["bound-by"] != "legacy" {
		t.Errorf("after POST bindings: nodeName %q, labels %v, annotations %v; want node-1 with the binding's labels and annotations added",
			got.Spec.NodeName, got.Labels, got.Annotations)
	}

	for _, tc := range []struct {
		name string
		path string
		b    *corev1.Binding
		dry  bool
		code int32
		want string
	}{
		{"bound twice", collection, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Target: node}, false, 409,
			`Operation cannot be fulfilled on pods/binding "legacy": pod legacy is already assigned to node "node-1"`},
		{"no such pod", collection, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "nope"}, Target: node}, false, 404, `pods "nope" not found`},
		{"no name", collection, &corev1.Binding{Target: node}, false, 400, "Name parameter required."},
		{"no target", collection, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "precond"}}, false, 422,
			`Binding "precond" is invalid: target.name: Required value`},
		{"another namespace", collection, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "precond", Namespace: "kube-system"}, Target: node}, false, 400,
			"the namespace of the provided object does not match the namespace sent on the request"},
		{"pods/binding holds the pod to the uid", "/api/v1/namespaces/default/pods/precond/binding",
			&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "precond", UID: "not-the-pods"}, Target: node}, false, 409,
			`Operation cannot be fulfilled on pods "precond": Precondition failed: UID in precondition: not-the-pods, UID in object meta: `},
		{"pods/binding holds the pod to the resourceVersion", "/api/v1/namespaces/default/pods/precond/binding",
			&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "precond", ResourceVersion: "1"}, Target: node}, false, 409,
			`Operation cannot be fulfilled on pods "precond": Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: `},
		{"a dry run is refused as the binding would be", collection, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Target: node}, true, 409,
			`Operation cannot be fulfilled on pods/binding "legacy": pod legacy is already assigned to node "node-1"`},
	} {
		err := post(tc.path, tc.b, tc.dry)
		var se *apierrors.StatusError
		// The pod's uid and resourceVersion are not known here: compare
		// up to them.
		if !errors.As(err, &se) || se.ErrStatus.Code != tc.code || len(se.ErrStatus.Message) < len(tc.want) || se.ErrStatus.Message[:len(tc.want)] != tc.want {
			t.Errorf("%s: %v, want %d %s", tc.name, err, tc.code, tc.want)
		}
	}
	if got, err := pods.Get(ctx, "precond", metav1.GetOptions{}); err != nil || got.Spec.NodeName != "" {
		t.Errorf("pod after refused bindings: %v, nodeName %q; want unbound", err, got.Spec.NodeName)
	}

	if err := post(collection, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "drybound"}, Target: node}, true); err != nil {
		t.Errorf("dry-run POST bindings: %v, want 201", err)
	}
	if got, err := pods.Get(ctx, "drybound", metav1.GetOptions{}); err != nil || got.Spec.NodeName != "" {
		t.Errorf("pod after a dry-run binding: %v, nodeName %q; want unbound", err, got.Spec.NodeName)
	}

	// Discovery lists the collection as upstream does, so that kubectl
	// create -f finds a Binding's resource.
	rl, err := s.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Name == "bindings" }); i < 0 ||
		rl.APIResources[i].Kind != "Binding" || !rl.APIResources[i].Namespaced || !slices.Equal(rl.APIResources[i].Verbs, []string{"create"}) {
		t.Errorf("v1 discovery: bindings %v, want a namespaced Binding with verb create", rl.APIResources)
	}

	raw := newRaw(t, s)
	if resp := raw.do(t, http.MethodGet, collection, "", nil); resp.code != http.StatusMethodNotAllowed {
		t.Errorf("GET bindings: %d %s, want 405 (create only)", resp.code, resp.body)
	}
	if resp := raw.do(t, http.MethodPost, "/api/v1/namespaces/default/bindings/legacy", "application/json", []byte(`{}`)); resp.code != http.StatusNotFound {
		t.Errorf("POST bindings/{name}: %d %s, want 404", resp.code, resp.body)
	}
}
