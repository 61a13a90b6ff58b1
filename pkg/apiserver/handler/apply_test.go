package handler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An update whose only change is the time of managedFields entries keeps
// the old times, so that it writes nothing; any other change keeps the
// new ones.
func TestKeepManagedFieldsTimes(t *testing.T) {
	old, later := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0))
	entry := func(tm metav1.Time, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &tm,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	cm := func(tm metav1.Time, fields, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "5", ManagedFields: []metav1.ManagedFieldsEntry{entry(tm, fields)}},
			Data:       map[string]string{"k": value},
		}
	}
	cases := []struct {
		name     string
		obj      *corev1.ConfigMap
		wantTime metav1.Time
	}{
		{"only the time moved", cm(later, `{"f:data":{"f:k":{}}}`, "v"), old},
		{"the object changed", cm(later, `{"f:data":{"f:k":{}}}`, "w"), later},
		{"the fields changed", cm(later, `{"f:data":{}}`, "v"), later},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := cm(old, `{"f:data":{"f:k":{}}}`, "v")
			tc.obj.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			keepManagedFieldsTimes(tc.obj, cur)
			if got := *tc.obj.ManagedFields[0].Time; !got.Equal(&tc.wantTime) {
				t.Fatalf("time %v, want %v", got, tc.wantTime)
			}
			if cur.Kind != "" {
				t.Fatalf("the current object's kind was left at %q", cur.Kind)
			}
		})
	}
}
