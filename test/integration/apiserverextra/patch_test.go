package apiserverextra

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func TestPatchTypes(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := testCtx(t)
	pods := s.Client.CoreV1().Pods("default")

	cases := []struct {
		name  string
		typ   types.PatchType
		patch string
		check func(t *testing.T, p *corev1.Pod)
	}{
		{
			name:  "json patch adds a label and replaces an image",
			typ:   types.JSONPatchType,
			patch: `[{"op":"add","path":"/metadata/labels/tier","value":"front"},{"op":"replace","path":"/spec/containers/1/image","value":"kube-lite.local/busybox:1.36"}]`,
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Labels["tier"] != "front" || p.Labels["app"] != "web" {
					t.Errorf("labels = %v, want app=web and tier=front", p.Labels)
				}
				if got := p.Spec.Containers[1].Image; got != "kube-lite.local/busybox:1.36" {
					t.Errorf("sidecar image = %q", got)
				}
			},
		},
		{
			name:  "merge patch null removes a label, list replaced whole",
			typ:   types.MergePatchType,
			patch: `{"metadata":{"labels":{"app":null,"tier":"back"}}}`,
			check: func(t *testing.T, p *corev1.Pod) {
				if _, ok := p.Labels["app"]; ok || p.Labels["tier"] != "back" {
					t.Errorf("labels = %v, want only tier=back", p.Labels)
				}
			},
		},
		{
			name:  "strategic merge patch merges containers by name",
			typ:   types.StrategicMergePatchType,
			patch: `{"spec":{"containers":[{"name":"sidecar","image":"kube-lite.local/busybox:1.37"}]}}`,
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.Containers) != 2 {
					t.Fatalf("containers = %d, want 2 (merged by name, not replaced)", len(p.Spec.Containers))
				}
				if p.Spec.Containers[0].Image != "kube-lite.local/busybox:1.35" || p.Spec.Containers[1].Image != "kube-lite.local/busybox:1.37" {
					t.Errorf("images = %q, %q", p.Spec.Containers[0].Image, p.Spec.Containers[1].Image)
				}
			},
		},
		{
			name:  "strategic merge patch null removes a map key",
			typ:   types.StrategicMergePatchType,
			patch: `{"metadata":{"labels":{"app":null}}}`,
			check: func(t *testing.T, p *corev1.Pod) {
				if _, ok := p.Labels["app"]; ok {
					t.Errorf("labels = %v, want app removed", p.Labels)
				}
			},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("patch-" + string(rune('a'+i)))
			created, err := pods.Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := pods.Patch(ctx, p.Name, tc.typ, []byte(tc.patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			tc.check(t, got)
			if got.ResourceVersion == created.ResourceVersion {
				t.Errorf("resourceVersion unchanged after patch: %s", got.ResourceVersion)
			}
			again, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, again)
		})
	}

	t.Run("bad patches are 4xx", func(t *testing.T) {
		if _, err := pods.Create(ctx, newPod("patch-bad"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bad := []struct {
			name  string
			typ   types.PatchType
			patch string
			why   string // in the Status message: the user learns what was wrong
		}{
			{"json patch test op fails", types.JSONPatchType, `[{"op":"test","path":"/metadata/name","value":"other"}]`, "/metadata/name"},
			{"json patch removes what is not there", types.JSONPatchType, `[{"op":"remove","path":"/metadata/labels/nokey"}]`, "/metadata/labels/nokey"},
			{"json patch not a list", types.JSONPatchType, `{"op":"add"}`, "invalid JSON patch"},
			{"merge patch not json", types.MergePatchType, `{"metadata":`, "invalid patch"},
			{"strategic patch changes an immutable field", types.StrategicMergePatchType, `{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80}]}]}}`, "spec"},
		}
		for _, b := range bad {
			_, err := pods.Patch(ctx, "patch-bad", b.typ, []byte(b.patch), metav1.PatchOptions{})
			if err == nil {
				t.Errorf("%s: patch accepted", b.name)
				continue
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsConflict(err) {
				t.Errorf("%s: err = %v, want 400, 409 or 422", b.name, err)
			}
			if !strings.Contains(err.Error(), b.why) {
				t.Errorf("%s: err = %q, want it to say %q", b.name, err, b.why)
			}
		}
	})
}
