package defaulttolerationseconds

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-lite/kube-lite/pkg/apiserver/admission"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

func seconds(n int64) *int64 { return &n }

func TestAdmit(t *testing.T) {
	pods := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "pods", Namespaced: true}
	mine := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds(10)}
	tests := []struct {
		name string
		op   admission.Operation
		in   []corev1.Toleration
		want map[string]int64
	}{
		{"none given", admission.Create, nil, map[string]int64{corev1.TaintNodeNotReady: 300, corev1.TaintNodeUnreachable: 300}},
		{"user's own kept", admission.Create, []corev1.Toleration{mine}, map[string]int64{corev1.TaintNodeNotReady: 10, corev1.TaintNodeUnreachable: 300}},
		// As upstream: an update that dropped the defaults gets them back
		// (the pod's update would otherwise be refused for removing them).
		{"update gets them back", admission.Update, nil, map[string]int64{corev1.TaintNodeNotReady: 300, corev1.TaintNodeUnreachable: 300}},
		// A toleration of every taint (empty key) leaves nothing to bound.
		{"tolerates everything", admission.Create, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, map[string]int64{}},
		{"update keeps the user's", admission.Update, []corev1.Toleration{mine}, map[string]int64{corev1.TaintNodeNotReady: 10, corev1.TaintNodeUnreachable: 300}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tt.in}}
			if err := New().Admit(context.Background(), &admission.Attributes{Operation: tt.op, Resource: pods, Object: pod}); err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, tol := range pod.Spec.Tolerations {
				if tol.Key == "" {
					continue
				}
				if tol.Effect != corev1.TaintEffectNoExecute || tol.TolerationSeconds == nil {
					t.Errorf("toleration %+v: want NoExecute with seconds", tol)
					continue
				}
				got[tol.Key] = *tol.TolerationSeconds
			}
			if len(got) != len(tt.want) {
				t.Fatalf("tolerations %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s: %d s, want %d", k, got[k], v)
				}
			}
		})
	}
}
