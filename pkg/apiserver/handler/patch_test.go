package handler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An update applies its patch again on every attempt: each application of
// a strategic merge patch gives the same object, directives included.
func TestStrategicPatchAppliesAlikeOnEveryAttempt(t *testing.T) {
	cur := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "a", Image: "old"}, {Name: "b", Image: "old"},
		}},
	}
	cases := []struct{ name, patch string }{
		{"setElementOrder", `{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"image":"new","name":"b"}]}}`},
		{"retainKeys", `{"spec":{"containers":[{"name":"b","image":"new"}],"volumes":[{"name":"v","emptyDir":{},"$retainKeys":["name","emptyDir"]}]}}`},
		{"deleteFromPrimitiveList", `{"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]},"spec":{"containers":[{"name":"b","image":"new"}]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := parsePatch("application/strategic-merge-patch+json", []byte(tc.patch), metav1.FieldValidationIgnore)
			if p.err != nil {
				t.Fatal(p.err)
			}
			for attempt := 1; attempt <= 2; attempt++ {
				out, err := applyStrategic(p, cur.DeepCopy(), &corev1.Pod{})
				if err != nil {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
				got := out.(*corev1.Pod).Spec.Containers
				if len(got) != 2 || got[0].Image != "old" || got[1].Name != "b" || got[1].Image != "new" {
					t.Fatalf("attempt %d: containers %+v", attempt, got)
				}
			}
		})
	}
}
