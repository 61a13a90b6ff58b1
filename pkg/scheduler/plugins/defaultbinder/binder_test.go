package defaultbinder

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func TestBindPostsBinding(t *testing.T) {
	tests := []struct {
		name     string
		reject   bool
		wantCode framework.Code
	}{
		{"accepted", false, framework.Success},
		{"rejected by the server", true, framework.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			var got *v1.Binding
			client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "binding" {
					return false, nil, nil
				}
				got = a.(clienttesting.CreateAction).GetObject().(*v1.Binding)
				if tt.reject {
					return true, nil, context.DeadlineExceeded
				}
				return true, nil, nil
			})
			pl, _ := Factory(client)(nil)
			pod := Pod("p")
			st := pl.(framework.BindPlugin).Bind(context.Background(), nil, pod, "n1")
			if st.Code() != tt.wantCode {
				t.Fatalf("code %v, want %v (%v)", st.Code(), tt.wantCode, st.AsError())
			}
			if got == nil || got.Name != "p" || got.Namespace != "default" || got.UID != pod.UID || got.Target.Kind != "Node" || got.Target.Name != "n1" {
				t.Errorf("binding = %+v", got)
			}
		})
	}
}
