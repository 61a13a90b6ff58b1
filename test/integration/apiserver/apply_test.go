package apiserver_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func managers(m metav1.Object) map[string]metav1.ManagedFieldsEntry {
	out := map[string]metav1.ManagedFieldsEntry{}
	for _, e := range m.GetManagedFields() {
		out[e.Manager+"/"+string(e.Operation)+"/"+e.Subresource] = e
	}
	return out
}

func managerNames(m metav1.Object) []string {
	var out []string
	for _, e := range m.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation)+"/"+e.Subresource)
	}
	return out
}

// managedFields follow an object from its create through an update and
// the applies of two managers to a conflict, refused in upstream's words
// until forced.
func TestServerSideApplyOwnership(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}},
		metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := managers(created)["creator/Update/"]
	if !ok || len(created.ManagedFields) != 1 || e.APIVersion != "v1" || e.FieldsType != "FieldsV1" || e.Time == nil ||
		string(e.FieldsV1.Raw) != `{"f:data":{".":{},"f:k":{}}}` {
		t.Fatalf("managedFields after create: %s", toJSON(created.ManagedFields))
	}

	created.Data["u"] = "1"
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{FieldManager: "updater"})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(updated)["updater/Update/"]; string(got.FieldsV1.Raw) != `{"f:data":{"f:u":{}}}` {
		t.Fatalf("managedFields after update: %s", toJSON(updated.ManagedFields))
	}

	apply := func(manager, body string, force bool) (*corev1.ConfigMap, error) {
		return cms.Patch(ctx, "a", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: manager, Force: ptr.To(force)})
	}
	one, err := apply("one", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"1","y":"1"}}`, false)
	if err != nil {
		t.Fatalf("apply one: %v", err)
	}
	if one.Data["k"] != "v" || one.Data["u"] != "1" || one.Data["x"] != "1" {
		t.Fatalf("apply one: %v", one.Data)
	}
	if got := managers(one)["one/Apply/"]; string(got.FieldsV1.Raw) != `{"f:data":{"f:x":{},"f:y":{}}}` {
		t.Fatalf("managedFields after apply: %s", toJSON(one.ManagedFields))
	}
	_, err = apply("two", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"2","k":"2"}}`, false)
	want := `Apply failed with 2 conflicts: conflicts with "creator" using v1:` + "\n- .data.k\nconflicts with \"one\":\n- .data.x"
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Fatalf("conflicting apply: want 409 %q, got %v", want, err)
	}
	two, err := apply("two", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"2","k":"2"}}`, true)
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if two.Data["x"] != "2" || two.Data["k"] != "2" {
		t.Fatalf("forced apply: %v", two.Data)
	}
	if got := managers(two)["one/Apply/"]; string(got.FieldsV1.Raw) != `{"f:data":{"f:y":{}}}` {
		t.Fatalf("one after the forced apply: %s", toJSON(two.ManagedFields))
	}
	// The creator keeps only the data map itself.
	if got := managers(two)["creator/Update/"]; string(got.FieldsV1.Raw) != `{"f:data":{}}` {
		t.Fatalf("creator after the forced apply: %s", toJSON(two.ManagedFields))
	}
	// A field one stops applying is removed: nobody else owns it.
	again, err := apply("one", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{}}`, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Data["y"]; ok || again.Data["x"] != "2" {
		t.Fatalf("after one stopped applying y: %v", again.Data)
	}
	if got := managers(again)["one/Apply/"]; string(got.FieldsV1.Raw) != `{"f:data":{}}` {
		t.Fatalf("one after it stopped applying y: %s", toJSON(again.ManagedFields))
	}
}

// applyStep is one write of a scenario: an apply by manager (force when
// set), or an update of the stored object by manager through mutate.
type applyStep struct {
	manager string
	apply   string // the applied configuration, JSON
	force   bool
	update  func(*appsv1.Deployment)
	// wantErr is the start of the error's text; empty: no error.
	wantErr string
	check   func(t *testing.T, d *appsv1.Deployment)
}

const applyHead = `"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"`

func deploymentApply(spec string) string {
	return `{` + applyHead + `},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":` + spec + `}}}`
}

func ownedBy(t *testing.T, d *appsv1.Deployment, manager, op, fieldJSON string) {
	t.Helper()
	for _, e := range d.ManagedFields {
		if e.Manager == manager && string(e.Operation) == op {
			if !strings.Contains(string(e.FieldsV1.Raw), fieldJSON) {
				t.Fatalf("%s (%s) does not own %s: %s", manager, op, fieldJSON, e.FieldsV1.Raw)
			}
			return
		}
	}
	t.Fatalf("no entry of %s (%s): %v", manager, op, managerNames(d))
}

func notOwnedBy(t *testing.T, d *appsv1.Deployment, manager, fieldJSON string) {
	t.Helper()
	for _, e := range d.ManagedFields {
		if e.Manager == manager && strings.Contains(string(e.FieldsV1.Raw), fieldJSON) {
			t.Fatalf("%s still owns %s: %s", manager, fieldJSON, e.FieldsV1.Raw)
		}
	}
}

// The behaviour upstream documents for server-side apply
// (https://kubernetes.io/docs/reference/using-api/server-side-apply/), one
// scenario per documented rule, on a Deployment: associative lists merged
// by key, shared ownership, giving a field up, conflicts and force,
// updates taking ownership without conflicts, transferring ownership.
func TestServerSideApplyDocumentedBehaviour(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	deps := s.Client.AppsV1().Deployments("default")
	twoContainers := deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:1"},{"name":"b","image":"kube-lite.local/busybox:1"}]}`)
	cases := []struct {
		name  string
		steps []applyStep
	}{
		{"apply creates, and a second manager adds an item to an associative list", []applyStep{
			{manager: "one", apply: deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:1"}]}`), check: func(t *testing.T, d *appsv1.Deployment) {
				if d.UID == "" || len(d.Spec.Template.Spec.Containers) != 1 || *d.Spec.Replicas != 1 {
					t.Fatalf("created: %s", toJSON(d.Spec))
				}
				ownedBy(t, d, "one", "Apply", `"k:{\"name\":\"a\"}"`)
				// A label selector is atomic (+structType=atomic): owned whole.
				ownedBy(t, d, "one", "Apply", `"f:selector":{}`)
			}},
			{manager: "two", apply: deploymentApply(`{"containers":[{"name":"sidecar","image":"kube-lite.local/busybox:2"}]}`), check: func(t *testing.T, d *appsv1.Deployment) {
				if c := d.Spec.Template.Spec.Containers; len(c) != 2 || c[0].Name != "a" || c[1].Name != "sidecar" {
					t.Fatalf("containers: %s", toJSON(c))
				}
				ownedBy(t, d, "two", "Apply", `"k:{\"name\":\"sidecar\"}"`)
				notOwnedBy(t, d, "two", `"k:{\"name\":\"a\"}"`)
			}},
		}},
		{"the same value applied by two managers is shared; changing it then conflicts; omitting it gives it up", []applyStep{
			{manager: "one", apply: twoContainers},
			{manager: "two", apply: deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:1"}]}`), check: func(t *testing.T, d *appsv1.Deployment) {
				ownedBy(t, d, "one", "Apply", `"k:{\"name\":\"a\"}":{".":{},"f:image":{}`)
				ownedBy(t, d, "two", "Apply", `"k:{\"name\":\"a\"}":{".":{},"f:image":{}`)
			}},
			{manager: "two", apply: deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:2"}]}`),
				wantErr: `Apply failed with 1 conflict: conflict with "one": .spec.template.spec.containers[name="a"].image`},
			{manager: "two", apply: deploymentApply(`{"containers":[]}`), check: func(t *testing.T, d *appsv1.Deployment) {
				// two gave up container a; one still holds it, so it stays.
				if len(d.Spec.Template.Spec.Containers) != 2 {
					t.Fatalf("containers: %s", toJSON(d.Spec.Template.Spec.Containers))
				}
				notOwnedBy(t, d, "two", `"k:{\"name\":\"a\"}"`)
			}},
			{manager: "one", apply: deploymentApply(`{"containers":[{"name":"b","image":"kube-lite.local/busybox:1"}]}`), check: func(t *testing.T, d *appsv1.Deployment) {
				// Nobody else holds container a: it goes.
				if c := d.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Name != "b" {
					t.Fatalf("containers: %s", toJSON(c))
				}
			}},
		}},
		{"an update never conflicts and takes the fields it changes; apply then conflicts with it until forced", []applyStep{
			{manager: "one", apply: twoContainers},
			{manager: "editor", update: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "kube-lite.local/busybox:9" }, check: func(t *testing.T, d *appsv1.Deployment) {
				ownedBy(t, d, "editor", "Update", `"k:{\"name\":\"a\"}":{"f:image":{}}`)
				notOwnedBy(t, d, "one", `"k:{\"name\":\"a\"}":{".":{},"f:image":{}`)
			}},
			{manager: "one", apply: twoContainers,
				wantErr: `Apply failed with 1 conflict: conflict with "editor" using apps/v1: .spec.template.spec.containers[name="a"].image`},
			{manager: "one", apply: twoContainers, force: true, check: func(t *testing.T, d *appsv1.Deployment) {
				if d.Spec.Template.Spec.Containers[0].Image != "kube-lite.local/busybox:1" {
					t.Fatalf("forced apply: %s", toJSON(d.Spec.Template.Spec.Containers))
				}
				for _, e := range d.ManagedFields {
					if e.Manager == "editor" {
						t.Fatalf("editor keeps an entry with nothing in it: %s", e.FieldsV1.Raw)
					}
				}
			}},
		}},
		{"transferring ownership: a field the applier drops after another manager took it stays", []applyStep{
			{manager: "one", apply: `{` + applyHead + `},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"a","image":"kube-lite.local/busybox:1"}]}}}}`},
			{manager: "autoscaler", update: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }},
			{manager: "one", apply: deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:1"}]}`), check: func(t *testing.T, d *appsv1.Deployment) {
				if *d.Spec.Replicas != 5 {
					t.Fatalf("replicas %d, want the autoscaler's 5", *d.Spec.Replicas)
				}
				ownedBy(t, d, "autoscaler", "Update", `"f:replicas"`)
			}},
		}},
		{"a field nobody else holds, dropped from the configuration, is reset to its default", []applyStep{
			{manager: "one", apply: `{` + applyHead + `},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"a","image":"kube-lite.local/busybox:1"}]}}}}`},
			{manager: "one", apply: deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:1"}]}`), check: func(t *testing.T, d *appsv1.Deployment) {
				if *d.Spec.Replicas != 1 {
					t.Fatalf("replicas %d, want the default 1", *d.Spec.Replicas)
				}
			}},
		}},
		{"list items keyed by a field with a default may leave it out (ports without protocol)", []applyStep{
			{manager: "one", apply: deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:1","ports":[{"containerPort":80},{"containerPort":53,"protocol":"UDP"}]}]}`), check: func(t *testing.T, d *appsv1.Deployment) {
				p := d.Spec.Template.Spec.Containers[0].Ports
				if len(p) != 2 || p[0].Protocol != corev1.ProtocolTCP || p[1].Protocol != corev1.ProtocolUDP {
					t.Fatalf("ports: %s", toJSON(p))
				}
				ownedBy(t, d, "one", "Apply", `"k:{\"containerPort\":80,\"protocol\":\"TCP\"}"`)
			}},
			// Applied again, the defaulted item is the same item.
			{manager: "one", apply: deploymentApply(`{"containers":[{"name":"a","image":"kube-lite.local/busybox:1","ports":[{"containerPort":80},{"containerPort":53,"protocol":"UDP"}]}]}`), check: func(t *testing.T, d *appsv1.Deployment) {
				if p := d.Spec.Template.Spec.Containers[0].Ports; len(p) != 2 {
					t.Fatalf("ports: %s", toJSON(p))
				}
			}},
		}},
		{"an apply body of another kind is refused", []applyStep{
			{manager: "one", apply: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"}}`, wantErr: `invalid object type: /v1, Kind=ConfigMap`},
		}},
		{"an apply body with managedFields is refused", []applyStep{
			{manager: "one", apply: `{` + applyHead + `,"managedFields":[{"manager":"x"}]}}`, wantErr: `metadata.managedFields must be nil`},
		}},
		{"an apply body naming another object is refused", []applyStep{
			{manager: "one", apply: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"other"}}`, wantErr: `the name of the object (other) does not match the name on the URL (web)`},
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("apply-%d", i)
			if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			deps = s.Client.AppsV1().Deployments(ns)
			for j, st := range tc.steps {
				var d *appsv1.Deployment
				var err error
				if st.update != nil {
					d, err = deps.Get(ctx, "web", metav1.GetOptions{})
					if err == nil {
						st.update(d)
						d, err = deps.Update(ctx, d, metav1.UpdateOptions{FieldManager: st.manager})
					}
				} else {
					d, err = deps.Patch(ctx, "web", types.ApplyPatchType, []byte(st.apply), metav1.PatchOptions{FieldManager: st.manager, Force: ptr.To(st.force)})
				}
				if st.wantErr != "" {
					if err == nil || !strings.HasPrefix(err.Error(), st.wantErr) {
						t.Fatalf("step %d: want error %q, got %v", j, st.wantErr, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: %v", j, err)
				}
				if st.check != nil {
					st.check(t, d)
				}
			}
		})
	}
}
