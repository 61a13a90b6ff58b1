package nodeports

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func port(ip string, proto v1.Protocol, p int32) func(*v1.Pod) {
	return func(pod *v1.Pod) {
		pod.Spec.Containers[0].Ports = append(pod.Spec.Containers[0].Ports, v1.ContainerPort{HostIP: ip, Protocol: proto, HostPort: p, ContainerPort: p})
	}
}

func TestFilter(t *testing.T) {
	const conflict = "Unschedulable: node(s) didn't have free ports for the requested pod ports"
	tests := []struct {
		name     string
		existing *v1.Pod
		pod      *v1.Pod
		want     string
	}{
		{"no host ports", Pod("e", port("", "", 80)), Pod("p"), ""},
		{"same port, default ip and protocol", Pod("e", port("", "", 80)), Pod("p", port("", "", 80)), conflict},
		{"same port, other protocol", Pod("e", port("", v1.ProtocolTCP, 80)), Pod("p", port("", v1.ProtocolUDP, 80)), ""},
		{"other port", Pod("e", port("", "", 80)), Pod("p", port("", "", 81)), ""},
		{"distinct specific ips", Pod("e", port("10.0.0.1", "", 80)), Pod("p", port("10.0.0.2", "", 80)), ""},
		{"wildcard against specific ip", Pod("e", port("10.0.0.1", "", 80)), Pod("p", port("0.0.0.0", "", 80)), conflict},
	}
	pl, _ := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := NodeInfo(Node("n"), tt.existing)
			if got := Outcome(Filter(t, pl, tt.pod, ni)["n"]); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
