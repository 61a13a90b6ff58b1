package apiserver_test

import (
	"testing"

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
