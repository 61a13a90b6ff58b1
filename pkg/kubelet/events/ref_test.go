package events

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestContainerRefNamesTheContainersField(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "7"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "setup"}},
			Containers:     []v1.Container{{Name: "app"}},
		},
	}
	for name, want := range map[string]string{"app": "spec.containers{app}", "setup": "spec.initContainers{setup}"} {
		ref, ok := ContainerRef(pod, name).(*v1.ObjectReference)
		if !ok {
			t.Fatalf("%s: got %T, want an ObjectReference", name, ContainerRef(pod, name))
		}
		if ref.FieldPath != want || ref.Kind != "Pod" || ref.APIVersion != "v1" || ref.Name != "p" || ref.Namespace != "ns" || ref.UID != "u1" {
			t.Errorf("%s: reference %+v, want pod ns/p (u1) at %s", name, ref, want)
		}
	}
}
