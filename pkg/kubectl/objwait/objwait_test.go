package objwait

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// delete --wait tells the deleted object from a new one of the same name by
// UID, which a DELETE answers either with the object or in a Success Status.
func TestUIDOfWhatADeleteAnswered(t *testing.T) {
	status := &unstructured.Unstructured{Object: map[string]any{
		"kind": "Status", "apiVersion": "v1", "status": "Success",
		"details": map[string]any{"name": "cm", "kind": "configmaps", "uid": "u-status"},
	}}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"kind": "Pod", "apiVersion": "v1", "metadata": map[string]any{"name": "p", "uid": "u-pod"},
	}}
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want types.UID
	}{
		{"unstructured Status", status, "u-status"},
		{"typed Status", &metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{UID: "u-typed"}}, "u-typed"},
		{"Status without details", &metav1.Status{Status: metav1.StatusSuccess}, ""},
		{"the object", pod, "u-pod"},
		{"a typed object", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "u-cm"}}, "u-cm"},
	} {
		if got := UIDOf(tc.obj); got != tc.want {
			t.Errorf("%s: UID %q, want %q", tc.name, got, tc.want)
		}
	}
}
