package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/pkg/scheduler"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

const ns = "default"

// start runs an apiserver and a scheduler on it for the test.
func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, run := startAPIServer(t)
	run()
	return c
}

// startAPIServer runs an apiserver; the returned func starts the scheduler
// (tests that need objects in place before the scheduler's first look
// create them in between).
func startAPIServer(t *testing.T) (kubernetes.Interface, func()) {
	t.Helper()
	srv := framework.StartAPIServer(t)
	// The scheduler talks protobuf, as the command does.
	cfg := rest.CopyConfig(srv.Config)
	cfg.ContentType = scheduler.ProtobufContentType
	cfg.AcceptContentTypes = scheduler.ProtobufContentType + ",application/json"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv.Client, func() { runScheduler(t, client) }
}

func runScheduler(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	s, err := scheduler.New(scheduler.Config{Client: client, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil {
			t.Errorf("scheduler: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

type nodeOpt func(*v1.Node)

func labels(kv ...string) nodeOpt {
	return func(n *v1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func taint(k, v string) nodeOpt {
	return func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: k, Value: v, Effect: v1.TaintEffectNoSchedule})
	}
}

func createNode(t *testing.T, c kubernetes.Interface, name, cpu string, opts ...nodeOpt) {
	t.Helper()
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	if _, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
}

type podOpt func(*v1.Pod)

func podLabels(kv ...string) podOpt {
	return func(p *v1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func onNode(n string) podOpt { return func(p *v1.Pod) { p.Spec.NodeName = n } }

func newPod(name, cpu string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func createPod(t *testing.T, c kubernetes.Interface, p *v1.Pod) {
	t.Helper()
	if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true,
		func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitBound waits for the pod to be bound and returns its node.
func waitBound(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	var node string
	waitFor(t, fmt.Sprintf("pod %s bound", name), func() (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	return node
}

func events(t *testing.T, c kubernetes.Interface, pod, reason string) []v1.Event {
	t.Helper()
	list, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + pod + ",reason=" + reason})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
