package nodename

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"no node name", Pod("p"), ""},
		{"this node", Pod("p", On("n")), ""},
		{"another node", Pod("p", On("other")), "UnschedulableAndUnresolvable: node(s) didn't match the requested node name"},
	}
	pl, _ := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Outcome(Filter(t, pl, tt.pod, NodeInfo(Node("n")))["n"]); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
