package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/prometheus/client_golang/prometheus"
)

func testNode(name, cpu string, pods int64, taints ...v1.Taint) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Spec:       v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(cpu),
			v1.ResourceMemory: resource.MustParse("8Gi"),
			v1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
		}},
	}
}

func testPod(name, cpu string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

// bindingReactor gives the fake clientset pods/binding semantics: set
// spec.nodeName, refuse pods that are already bound.
func bindingReactor(t *testing.T, client *fake.Clientset, binds *sync.Map) {
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := action.(clienttesting.CreateAction).GetObject().(*v1.Binding)
		obj, err := client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" {
			return true, nil, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName)
		}
		pod.Spec.NodeName = b.Target.Name
		if binds != nil {
			binds.Store(b.Name, b.Target.Name)
		}
		return true, nil, client.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace)
	})
}

func startScheduler(t *testing.T, client *fake.Clientset, reg *prometheus.Registry) context.CancelFunc {
	t.Helper()
	s, err := New(Config{Client: client, Registerer: reg, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	return func() { cancel(); <-done }
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func eventsFor(t *testing.T, client *fake.Clientset, pod, reason string) []v1.Event {
	evs, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Event
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == pod && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func TestUnschedulableThenNewNode(t *testing.T) {
	taint := v1.Taint{Key: "k", Value: "v", Effect: v1.TaintEffectNoSchedule}
	client := fake.NewClientset(
		testNode("small", "1", 110),
		testNode("tainted-a", "8", 110, taint),
		testNode("tainted-b", "8", 110, taint),
		testPod("big", "2"),
	)
	bindingReactor(t, client, nil)
	reg := prometheus.NewRegistry()
	stop := startScheduler(t, client, reg)
	defer stop()

	want := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {k: v}. " +
		"preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod., 2 Preemption is not helpful for scheduling."
	waitFor(t, "FailedScheduling event", func() (bool, error) {
		evs := eventsFor(t, client, "big", "FailedScheduling")
		return len(evs) > 0 && evs[0].Message == want && evs[0].Type == v1.EventTypeWarning &&
			evs[0].Source.Component == "default-scheduler", nil
	})
	waitFor(t, "PodScheduled=False", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable && c.Message == want {
				return true, nil
			}
		}
		return false, nil
	})

	if _, err := client.CoreV1().Nodes().Create(context.Background(), testNode("big-node", "4", 110), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod bound to big-node", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "big", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "big-node", err
	})
	waitFor(t, "Scheduled event", func() (bool, error) {
		evs := eventsFor(t, client, "big", "Scheduled")
		return len(evs) == 1 && evs[0].Message == "Successfully assigned default/big to big-node", nil
	})
	waitFor(t, "scheduled attempt counted", func() (bool, error) {
		return counterValue(t, reg, "scheduled") == 1, nil
	})
	if got := counterValue(t, reg, "unschedulable"); got < 1 {
		t.Errorf("unschedulable attempts = %v, want at least 1", got)
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "scheduler_schedule_attempts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// Pods created at once onto nodes with room for exactly that many must all
// bind without over-committing any node, although bindings run while later
// pods are being scheduled.
func TestNoOvercommit(t *testing.T) {
	objs := []runtime.Object{}
	for i := range 5 {
		objs = append(objs, testNode(fmt.Sprintf("n%d", i), "1", 110)) // 4 pods of 250m each
	}
	for i := range 20 {
		objs = append(objs, testPod(fmt.Sprintf("p%02d", i), "250m"))
	}
	client := fake.NewClientset(objs...)
	var binds sync.Map
	bindingReactor(t, client, &binds)
	stop := startScheduler(t, client, prometheus.NewRegistry())
	defer stop()

	waitFor(t, "20 bindings", func() (bool, error) {
		n := 0
		binds.Range(func(_, _ any) bool { n++; return true })
		return n == 20, nil
	})
	perNode := map[string]int{}
	binds.Range(func(_, node any) bool { perNode[node.(string)]++; return true })
	for node, n := range perNode {
		if n > 4 {
			t.Errorf("node %s got %d pods, room for 4", node, n)
		}
	}

	// One more pod cannot fit anywhere.
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), testPod("extra", "250m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "extra rejected", func() (bool, error) {
		evs := eventsFor(t, client, "extra", "FailedScheduling")
		return len(evs) > 0 && strings.HasPrefix(evs[0].Message, "0/5 nodes are available: 5 Insufficient cpu."), nil
	})
}

// A failed binding must give the node's room back (forget) and retry the
// pod, which then binds.
func TestBindingFailureForgetsAndRetries(t *testing.T) {
	client := fake.NewClientset(testNode("only", "1", 110), testPod("p", "1"))
	var binds sync.Map
	bindingReactor(t, client, &binds)
	var failed sync.Once
	failedOnce := make(chan struct{})
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		handled := false
		failed.Do(func() { handled = true; close(failedOnce) })
		if handled {
			return true, nil, fmt.Errorf("injected: etcd unavailable")
		}
		return false, nil, nil
	})
	stop := startScheduler(t, client, prometheus.NewRegistry())
	defer stop()
	<-failedOnce
	// The pod needs the whole node: it can only bind if the failed
	// attempt's reservation was forgotten.
	waitFor(t, "pod bound after the failed binding", func() (bool, error) {
		node, ok := binds.Load("p")
		return ok && node == "only", nil
	})
	// The failure is told in upstream's words.
	waitFor(t, "FailedScheduling event", func() (bool, error) {
		evs := eventsFor(t, client, "p", "FailedScheduling")
		return len(evs) > 0 && evs[0].Message == `running Bind plugin "DefaultBinder": injected: etcd unavailable`, nil
	})
}

// pinTo pins pod to nodes through metadata.name matchFields, as a DaemonSet
// pod is pinned: one term per argument, ORed, each with one requirement per
// (one-name) list, ANDed.
func pinTo(pod *v1.Pod, terms ...[][]string) *v1.Pod {
	var sel []v1.NodeSelectorTerm
	for _, reqs := range terms {
		var t v1.NodeSelectorTerm
		for _, names := range reqs {
			t.MatchFields = append(t.MatchFields, v1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: names})
		}
		sel = append(sel, t)
	}
	pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: sel}}}
	return pod
}

func TestFailedSchedulingMessages(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"pinned to a node without room", pinTo(testPod("pinned", "2"), [][]string{{"small"}}),
			"0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
				"preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod., 2 Preemption is not helpful for scheduling."},
		{"pinned to a node that does not exist", pinTo(testPod("gone", "1"), [][]string{{"no-such-node"}}),
			"0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
				"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."},
		{"a PreFilter rejection", pinTo(testPod("conflict", "1"), [][]string{{"small"}, {"big-a"}}),
			"0/3 nodes are available: pod affinity terms conflict. " +
				"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."},
	}
	objs := []runtime.Object{testNode("small", "1", 110), testNode("big-a", "8", 110), testNode("big-b", "8", 110)}
	for _, tt := range tests {
		objs = append(objs, tt.pod)
	}
	client := fake.NewClientset(objs...)
	bindingReactor(t, client, nil)
	stop := startScheduler(t, client, prometheus.NewRegistry())
	defer stop()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			waitFor(t, "FailedScheduling event", func() (bool, error) {
				evs := eventsFor(t, client, tt.pod.Name, "FailedScheduling")
				return len(evs) > 0 && evs[0].Message == tt.want, nil
			})
		})
	}
}

func TestPinnedPodGoesToItsNode(t *testing.T) {
	client := fake.NewClientset(testNode("a", "8", 110), testNode("b", "8", 110), testNode("c", "8", 110),
		pinTo(testPod("ds", "1"), [][]string{{"b"}}))
	var binds sync.Map
	bindingReactor(t, client, &binds)
	stop := startScheduler(t, client, prometheus.NewRegistry())
	defer stop()
	waitFor(t, "binding", func() (bool, error) {
		n, ok := binds.Load("ds")
		return ok && n == "b", nil
	})
}

// A pending pod being deleted (held by a finalizer) is not scheduled, and
// says so as upstream does.
func TestDeletingPodIsNotScheduled(t *testing.T) {
	pod := testPod("going", "1")
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.Finalizers = []string{"example.com/hold"}
	client := fake.NewClientset(testNode("only", "4", 110), pod)
	var binds sync.Map
	bindingReactor(t, client, &binds)
	stop := startScheduler(t, client, prometheus.NewRegistry())
	defer stop()
	waitFor(t, "FailedScheduling event", func() (bool, error) {
		evs := eventsFor(t, client, "going", "FailedScheduling")
		return len(evs) > 0 && evs[0].Message == "skip schedule deleting pod: default/going" && evs[0].Type == v1.EventTypeWarning, nil
	})
	if _, ok := binds.Load("going"); ok {
		t.Error("a pod being deleted was bound")
	}
}
