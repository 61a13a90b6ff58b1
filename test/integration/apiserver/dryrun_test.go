package apiserver_test

import (
	"encoding/json"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

// A server dry-run PATCH answers what the same PATCH really does, minus the
// storage step: for every patch type, and for the strategic merge patch
// `kubectl diff` sends ($setElementOrder directives and a changed image).
// Nothing of the dry run is stored.
func TestDryRunPatchIsRealPatchWithoutStorage(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	deps := s.Client.AppsV1().Deployments("default")
	cases := []struct {
		name  string
		pt    types.PatchType
		patch string
	}{
		{"json patch", types.JSONPatchType, `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"kube-lite.local/busybox:1.36"},{"op":"add","path":"/metadata/labels/x","value":"y"}]`},
		{"merge patch", types.MergePatchType, `{"metadata":{"labels":{"x":"y"}},"spec":{"replicas":3}}`},
		{"strategic merge patch", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"kube-lite.local/busybox:1.36"}]}}}}`},
		// What kubectl diff sends for a changed image of the second container.
		{"kubectl diff strategic merge patch", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"image":"kube-lite.local/busybox:1.36","name":"b"}]}}}}`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("d%d", i)
			created, err := deps.Create(ctx, testDeployment(name), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dry, err := deps.Patch(ctx, name, tc.pt, []byte(tc.patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatalf("dry-run patch: %v", err)
			}
			stored, err := deps.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if stored.ResourceVersion != created.ResourceVersion || !equality.Semantic.DeepEqual(stored.Spec, created.Spec) || !equality.Semantic.DeepEqual(stored.Labels, created.Labels) {
				t.Fatalf("the dry run was stored: %s", toJSON(stored))
			}
			real, err := deps.Patch(ctx, name, tc.pt, []byte(tc.patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			if equality.Semantic.DeepEqual(real.Spec, created.Spec) && equality.Semantic.DeepEqual(real.Labels, created.Labels) {
				t.Fatalf("the patch changed nothing: %s", toJSON(real))
			}
			// What persistence alone sets: the new resourceVersion and
			// generation, and the managedFields' timestamps.
			want := real.DeepCopy()
			want.ResourceVersion, want.Generation = dry.ResourceVersion, dry.Generation
			for i := range want.ManagedFields {
				if i < len(dry.ManagedFields) {
					want.ManagedFields[i].Time = dry.ManagedFields[i].Time
				}
			}
			if !equality.Semantic.DeepEqual(dry, want) {
				t.Fatalf("the dry run answered\n%s\nthe patch\n%s", toJSON(dry), toJSON(real))
			}
		})
	}
}

func testDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "a", Image: "kube-lite.local/busybox:1.35"},
					{Name: "b", Image: "kube-lite.local/busybox:1.35"},
				}},
			},
		},
	}
}

func toJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}
