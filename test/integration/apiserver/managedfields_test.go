package apiserver_test

import (
	"fmt"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// Apply through the status subresource owns status fields as a manager of
// that subresource, leaves the spec alone, and the main resource's apply
// owns no status.
func TestServerSideApplyStatus(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	deps := s.Client.AppsV1().Deployments("default")
	if _, err := deps.Patch(ctx, "web", types.ApplyPatchType, []byte(deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:1"}]}`)),
		metav1.PatchOptions{FieldManager: "user"}); err != nil {
		t.Fatal(err)
	}
	status := `{` + applyHead + `},"spec":{"replicas":7},"status":{"replicas":3,"observedGeneration":1}}`
	d, err := deps.Patch(ctx, "web", types.ApplyPatchType, []byte(status), metav1.PatchOptions{FieldManager: "controller"}, "status")
	if err != nil {
		t.Fatalf("status apply: %v", err)
	}
	if d.Status.Replicas != 3 || *d.Spec.Replicas != 1 {
		t.Fatalf("status %+v, replicas %d", d.Status, *d.Spec.Replicas)
	}
	var e *metav1.ManagedFieldsEntry
	for i := range d.ManagedFields {
		if d.ManagedFields[i].Manager == "controller" {
			e = &d.ManagedFields[i]
		}
	}
	if e == nil || e.Subresource != "status" || e.Operation != metav1.ManagedFieldsOperationApply ||
		string(e.FieldsV1.Raw) != `{"f:status":{"f:observedGeneration":{},"f:replicas":{}}}` {
		t.Fatalf("managedFields: %s", toJSON(d.ManagedFields))
	}
	// The main resource ignores status in an apply: it owns none of it.
	withStatus := strings.Replace(deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:1"}]}`), `"spec":`, `"status":{"replicas":9},"spec":`, 1)
	d, err = deps.Patch(ctx, "web", types.ApplyPatchType, []byte(withStatus), metav1.PatchOptions{FieldManager: "user"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.Replicas != 3 {
		t.Fatalf("main apply touched status: %+v", d.Status)
	}
	for _, e := range d.ManagedFields {
		if e.Manager == "user" && strings.Contains(string(e.FieldsV1.Raw), "f:status") {
			t.Fatalf("user owns status: %s", e.FieldsV1.Raw)
		}
	}
	// A status update records its manager for the status subresource.
	d.Status.ReadyReplicas = 1
	d, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: "kubelet-ish"})
	if err != nil {
		t.Fatal(err)
	}
	if names := strings.Join(managerNames(d), ","); !strings.Contains(names, "kubelet-ish/Update/status") {
		t.Fatalf("managers after a status update: %s", names)
	}
	// Apply to a missing object's status is a 404: only the main resource
	// creates.
	_, err = deps.Patch(ctx, "nope", types.ApplyPatchType, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"nope"},"status":{"replicas":1}}`),
		metav1.PatchOptions{FieldManager: "controller"}, "status")
	if !apierrors.IsNotFound(err) {
		t.Fatalf("status apply to a missing object: want 404, got %v", err)
	}
}

// The requests an apply needs, refused in upstream's words: no
// fieldManager (422 on PatchOptions), force on another patch type, and a
// dry run stores nothing.
func TestServerSideApplyRequests(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`)
	_, err := cms.Patch(ctx, "a", types.ApplyPatchType, body, metav1.PatchOptions{})
	want := `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("apply without fieldManager: want 422 %q, got %v", want, err)
	}
	_, err = cms.Patch(ctx, "a", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{Force: ptr.To(true)})
	want = `PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("force on a merge patch: want 422 %q, got %v", want, err)
	}
	// A field the kind's schema does not have: the field manager's words,
	// as a 400. Upstream answers them as a 500 with no reason, a known bug
	// (kubernetes/kubernetes#139253, whose fix makes it this 400).
	_, err = cms.Patch(ctx, "a", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"spec":{"x":1}}`), metav1.PatchOptions{FieldManager: "m"})
	want = `failed to create typed patch object (/a; /v1, Kind=ConfigMap): .spec: field not declared in schema`
	if !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Fatalf("apply of an unknown field: want 400 %q, got %v", want, err)
	}
	_, err = cms.Patch(ctx, "a", types.ApplyPatchType, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: [1"), metav1.PatchOptions{FieldManager: "m"})
	if !apierrors.IsBadRequest(err) || !strings.HasPrefix(err.Error(), "error decoding YAML: ") {
		t.Fatalf("apply of bad YAML: want 400, got %v", err)
	}
	dry, err := cms.Patch(ctx, "a", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "m", DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Data["k"] != "v" || len(dry.ManagedFields) != 1 || dry.ManagedFields[0].Manager != "m" {
		t.Fatalf("dry-run apply: %v %s", err, toJSON(dry))
	}
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the dry-run apply was stored: %v", err)
	}
	created, err := cms.Patch(ctx, "a", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "m"})
	if err != nil {
		t.Fatal(err)
	}
	dry, err = cms.Patch(ctx, "a", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"w"}}`),
		metav1.PatchOptions{FieldManager: "m", DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Data["k"] != "w" {
		t.Fatalf("dry-run apply: %v %v", err, dry.Data)
	}
	if got, _ := cms.Get(ctx, "a", metav1.GetOptions{}); got.Data["k"] != "v" || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("the dry-run apply was stored: %v", got.Data)
	}
	// Cluster-scoped kinds are applied alike.
	ns, err := s.Client.CoreV1().Namespaces().Patch(ctx, "applied", types.ApplyPatchType,
		[]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"applied","labels":{"team":"a"}}}`), metav1.PatchOptions{FieldManager: "m"})
	if err != nil || ns.Labels["team"] != "a" || ns.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("namespace apply: %v %+v", err, ns)
	}
	role, err := s.Client.RbacV1().ClusterRoles().Patch(ctx, "applied", types.ApplyPatchType,
		[]byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"applied"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`),
		metav1.PatchOptions{FieldManager: "m"})
	if err != nil || len(role.Rules) != 1 || len(role.ManagedFields) != 1 {
		t.Fatalf("cluster role apply: %v %+v", err, role)
	}
	// Applying the same configuration again changes nothing: no new
	// resourceVersion, the entry's time kept.
	again, err := cms.Patch(ctx, "a", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "m"})
	if err != nil || again.ResourceVersion != created.ResourceVersion {
		t.Fatalf("a repeated apply wrote: %v, %s → %s", err, created.ResourceVersion, again.ResourceVersion)
	}
}

// An update that changes nothing but would move managedFields' times
// writes nothing, as upstream; managedFields a client sends are kept when
// they decode, a malformed entry is ignored (the stored ones stay), and
// `managedFields: [{}]` clears them, as upstream documents.
func TestManagedFieldsOnUpdates(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	same, err := cms.Update(ctx, cm.DeepCopy(), metav1.UpdateOptions{FieldManager: "creator"})
	if err != nil || same.ResourceVersion != cm.ResourceVersion {
		t.Fatalf("a no-op update wrote: %v, %s → %s", err, cm.ResourceVersion, same.ResourceVersion)
	}
	malformed := cm.DeepCopy()
	malformed.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x", Operation: "Bogus", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}}}
	malformed.Data["u"] = "1"
	got, err := cms.Update(ctx, malformed, metav1.UpdateOptions{FieldManager: "editor"})
	if err != nil {
		t.Fatal(err)
	}
	if names := managerNames(got); strings.Join(names, ",") != "creator/Update/,editor/Update/" {
		t.Fatalf("after a malformed managedFields: %v", names)
	}
	cleared, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`), metav1.PatchOptions{})
	if err != nil || len(cleared.ManagedFields) != 0 {
		t.Fatalf("clearing managedFields: %v %s", err, toJSON(cleared.ManagedFields))
	}
}

// Without a fieldManager, a write's manager is its client's user agent up
// to the first "/", as upstream: kubectl's client-side apply sends
// "kubectl-client-side-apply" as its fieldManager, other kubectl commands
// are "kubectl-<verb>" by the user agent kubectl sets, a client-go program
// its binary's name. kubectl's migration from client-side to server-side
// apply finds its fields under that name.
func TestManagerFromUserAgent(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	cfg := rest.CopyConfig(s.Config)
	cfg.UserAgent = "kubectl-edit/v1.36.3 (linux/amd64) kubernetes/abcdef"
	c := kubernetes.NewForConfigOrDie(cfg)
	d, err := c.AppsV1().Deployments("default").Create(ctx, testDeployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if names := managerNames(d); len(names) != 1 || names[0] != "kubectl-edit/Update/" {
		t.Fatalf("managers: %v", names)
	}
	// kubectl apply (client-side) sends its manager name; its create
	// carries the last-applied annotation.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "csa", Annotations: map[string]string{
		corev1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","data":{"k":"v","l":"w"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"csa","namespace":"default"}}` + "\n"}},
		Data: map[string]string{"k": "v", "l": "w"}}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	// kubectl apply --server-side first moves the client-side apply
	// manager's fields to its own apply entry (client-go's csaupgrade, a
	// JSON patch of managedFields), then applies: the same configuration
	// keeps every field, and a field dropped from it is removed, as
	// upstream's migration promises.
	cms := c.CoreV1().ConfigMaps("default")
	live, err := cms.Get(ctx, "csa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upgrade, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New("kubectl-client-side-apply"), "kubectl")
	if err != nil || upgrade == nil {
		t.Fatalf("csaupgrade: %v %s", err, upgrade)
	}
	upgraded, err := cms.Patch(ctx, "csa", types.JSONPatchType, upgrade, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("managedFields upgrade: %v", err)
	}
	if names := managerNames(upgraded); strings.Join(names, ",") != "kubectl/Apply/" {
		t.Fatalf("managers after the upgrade: %v", names)
	}
	migrated, err := cms.Patch(ctx, "csa", types.ApplyPatchType,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"csa"},"data":{"k":"v","l":"w"}}`), metav1.PatchOptions{FieldManager: "kubectl"})
	if err != nil || migrated.Data["k"] != "v" || migrated.Data["l"] != "w" {
		t.Fatalf("server-side apply after the upgrade: %v %v", err, migrated.Data)
	}
	dropped, err := cms.Patch(ctx, "csa", types.ApplyPatchType,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"csa"},"data":{"k":"v"}}`), metav1.PatchOptions{FieldManager: "kubectl"})
	if err != nil || dropped.Data["k"] != "v" || len(dropped.Data) != 1 {
		t.Fatalf("a field dropped from the configuration: %v %v", err, dropped.Data)
	}
}

// Writes through the scale subresource own spec.replicas as a manager of
// that subresource, as upstream records them: an apply of other replicas
// then conflicts with the scaler, and an apply of a Scale takes them.
func TestManagedFieldsOfScale(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	deps := s.Client.AppsV1().Deployments("default")
	config := func(replicas int) []byte {
		return []byte(strings.Replace(deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:1"}]}`),
			`"spec":{`, fmt.Sprintf(`"spec":{"replicas":%d,`, replicas), 1))
	}
	if _, err := deps.Patch(ctx, "web", types.ApplyPatchType, config(2), metav1.PatchOptions{FieldManager: "user"}); err != nil {
		t.Fatal(err)
	}
	if _, err := deps.UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}},
		metav1.UpdateOptions{FieldManager: "scaler"}); err != nil {
		t.Fatal(err)
	}
	d, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range d.ManagedFields {
		if e.Manager == "scaler" {
			found = e.Subresource == "scale" && e.Operation == metav1.ManagedFieldsOperationUpdate && string(e.FieldsV1.Raw) == `{"f:spec":{"f:replicas":{}}}`
		}
		if e.Manager == "user" && strings.Contains(string(e.FieldsV1.Raw), "f:replicas") {
			t.Fatalf("user still owns replicas: %s", e.FieldsV1.Raw)
		}
	}
	if !found || *d.Spec.Replicas != 4 {
		t.Fatalf("replicas %d, managedFields %s", *d.Spec.Replicas, toJSON(d.ManagedFields))
	}
	_, err = deps.Patch(ctx, "web", types.ApplyPatchType, config(2), metav1.PatchOptions{FieldManager: "user"})
	want := `Apply failed with 1 conflict: conflict with "scaler" with subresource "scale" using apps/v1: .spec.replicas`
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Fatalf("apply over the scaler's replicas: want %q, got %v", want, err)
	}
	scale := []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":6}}`)
	if _, err := deps.Patch(ctx, "web", types.ApplyPatchType, scale, metav1.PatchOptions{FieldManager: "hpa"}, "scale"); !apierrors.IsConflict(err) {
		t.Fatalf("scale apply over the scaler's replicas: want 409, got %v", err)
	}
	if _, err := deps.Patch(ctx, "web", types.ApplyPatchType, scale, metav1.PatchOptions{FieldManager: "hpa", Force: ptr.To(true)}, "scale"); err != nil {
		t.Fatalf("forced scale apply: %v", err)
	}
	d, err = deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 6 {
		t.Fatalf("after the scale apply: %v %d", err, *d.Spec.Replicas)
	}
	if names := strings.Join(managerNames(d), ","); !strings.Contains(names, "hpa/Apply/scale") || strings.Contains(names, "scaler/") {
		t.Fatalf("managers after the scale apply: %s", names)
	}
	if _, err := deps.Patch(ctx, "web", types.ApplyPatchType, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`),
		metav1.PatchOptions{FieldManager: "hpa"}, "scale"); !apierrors.IsBadRequest(err) || err.Error() != "invalid object type: apps/v1, Kind=Deployment" {
		t.Fatalf("scale apply of a Deployment: %v", err)
	}
}
