package fieldmanager_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kube-lite/kube-lite/pkg/apiserver/fieldmanager"
)

// The manager of a write that names none comes from the client's user
// agent, as upstream derives it.
func TestManagerOrUserAgent(t *testing.T) {
	long := strings.Repeat("abcdefgh", 20)
	cases := []struct{ manager, agent, want string }{
		{"mine", "kubectl/v1.36.3 (linux/amd64) kubernetes/abc", "mine"},
		{"", "kubectl/v1.36.3 (linux/amd64) kubernetes/abc", "kubectl"},
		{"", "kubectl-client-side-apply/v1.36.3", "kubectl-client-side-apply"},
		{"", "kube-lite-controller-manager/v0.1 (linux/amd64)", "kube-lite-controller-manager"},
		{"", "ab\x01c/1", "abc"},
		{"", "", ""},
		{"", long, long[:128]},
	}
	for _, tc := range cases {
		if got := fieldmanager.ManagerOrUserAgent(tc.manager, tc.agent); got != tc.want {
			t.Errorf("ManagerOrUserAgent(%q, %q) = %q, want %q", tc.manager, tc.agent, got, tc.want)
		}
	}
}

// Managers whose schemas cannot be read keep no managedFields and refuse
// apply, instead of keeping what a client sent unchecked.
func TestManagersWithoutSchemas(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	m := fieldmanager.New(func() (map[string]*spec.Schema, error) { return nil, errors.New("no schemas") },
		[]fieldmanager.Kind{{GVK: gvk, New: func() runtime.Object { return &corev1.ConfigMap{} }}})
	if err := m.Warm(); err == nil {
		t.Fatal("Warm: no error")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "forged"}}}}
	if got := m.Update(gvk, fieldmanager.Main, &corev1.ConfigMap{}, cm, "m"); len(got.(*corev1.ConfigMap).ManagedFields) != 0 {
		t.Fatalf("managedFields kept: %+v", got.(*corev1.ConfigMap).ManagedFields)
	}
	if _, err := m.Apply(gvk, fieldmanager.Main, &corev1.ConfigMap{}, &unstructured.Unstructured{}, "m", false); err == nil {
		t.Fatal("Apply: no error")
	}
}
