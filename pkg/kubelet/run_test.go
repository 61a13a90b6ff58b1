package kubelet

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	crifake "github.com/kube-lite/kube-lite/pkg/kubelet/cri/fake"
	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

// TestRunRegistersTheNodeAndRunsItsPods wires the whole kubelet (watch,
// workers, status manager, node status, lease) against a fake API and runtime.
func TestRunRegistersTheNodeAndRunsItsPods(t *testing.T) {
	client := fake.NewSimpleClientset()
	rt := crifake.New(clock.RealClock{}, testImage)
	kl, err := New(Config{NodeName: "node-1", NodeIP: "192.168.1.10", PodCIDR: "10.244.0.0/24", RootDir: t.TempDir()}, Deps{
		Client: client, Runtime: rt, Network: HostNetwork{},
		Volumes: &volume.Manager{Root: t.TempDir(), Source: NewAPISource(client, nil)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- kl.Run(ctx) }()
	defer func() { cancel(); <-done }()

	if _, err := client.CoreV1().Pods("default").Create(ctx, testPod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Not a timing assertion: poll until the kubelet reports, the test timeout bounds it.
	for {
		p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err == nil && p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The Node turns Ready once the kubelet reports after its network is
	// up; poll for it (the test timeout bounds the wait).
	var node *v1.Node
	for {
		node, err = client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if nodeReady(node) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if node.Spec.PodCIDR != "10.244.0.0/24" || node.Labels[v1.LabelHostname] != "node-1" || node.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Fatalf("node = %+v", node)
	}
	for {
		if _, err := client.CoordinationV1().Leases(nodeLeaseNamespace).Get(ctx, "node-1", metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func nodeReady(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue && c.Reason == "KubeletReady" {
			return true
		}
	}
	return false
}
