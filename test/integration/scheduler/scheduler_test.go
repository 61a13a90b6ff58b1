package scheduler

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

type clientset = kubernetes.Interface

func TestResourcesExhaustedThenNewNode(t *testing.T) {
	c := start(t)
	createNode(t, c, "small", "1")
	createNode(t, c, "tainted", "8", taint("dedicated", "gpu"))
	createPod(t, c, newPod("big", "2"))

	want := "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}. " +
		"preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod., 1 Preemption is not helpful for scheduling."
	waitFor(t, "FailedScheduling event", func() (bool, error) {
		for _, e := range events(t, c, "big", "FailedScheduling") {
			if e.Message == want && e.Type == v1.EventTypeWarning && e.Source.Component == "default-scheduler" {
				return true, nil
			}
		}
		return false, nil
	})
	waitFor(t, "PodScheduled=False/Unschedulable", func() (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(context.Background(), "big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse && cond.Reason == v1.PodReasonUnschedulable && cond.Message == want {
				return true, nil
			}
		}
		return false, nil
	})

	createNode(t, c, "large", "4")
	if node := waitBound(t, c, "big"); node != "large" {
		t.Fatalf("bound to %s, want large", node)
	}
	waitFor(t, "Scheduled event", func() (bool, error) {
		for _, e := range events(t, c, "big", "Scheduled") {
			if e.Message == "Successfully assigned default/big to large" && e.Type == v1.EventTypeNormal {
				return true, nil
			}
		}
		return false, nil
	})
}

func TestPlacement(t *testing.T) {
	antiWeb := func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: v1.LabelHostname}}}}
	}
	tests := []struct {
		name     string
		nodes    func(t *testing.T, c clientset)
		existing []*v1.Pod // already bound
		pods     []*v1.Pod // to schedule, in order
		check    func(t *testing.T, placed map[string]string)
	}{
		{
			name: "nodeSelector",
			nodes: func(t *testing.T, c clientset) {
				createNode(t, c, "hdd", "4")
				createNode(t, c, "ssd", "4", labels("disk", "ssd"))
			},
			pods:  []*v1.Pod{newPod("p", "100m", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })},
			check: want(map[string]string{"p": "ssd"}),
		},
		{
			name: "required node affinity",
			nodes: func(t *testing.T, c clientset) {
				createNode(t, c, "za", "4", labels("zone", "a"))
				createNode(t, c, "zb", "4", labels("zone", "b"))
			},
			pods: []*v1.Pod{newPod("p", "100m", func(p *v1.Pod) {
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpNotIn, Values: []string{"a"}}}}}}}}
			})},
			check: want(map[string]string{"p": "zb"}),
		},
		{
			name: "taints",
			nodes: func(t *testing.T, c clientset) {
				createNode(t, c, "tainted", "4", taint("k", "v"))
				createNode(t, c, "clean", "1")
			},
			pods: []*v1.Pod{
				newPod("plain", "100m"),
				newPod("tolerant", "100m", func(p *v1.Pod) {
					p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpEqual, Value: "v", Effect: v1.TaintEffectNoSchedule}}
					p.Spec.NodeSelector = map[string]string{v1.LabelHostname: "tainted"}
				}),
			},
			check: want(map[string]string{"plain": "clean", "tolerant": "tainted"}),
		},
		{
			name: "pod affinity",
			nodes: func(t *testing.T, c clientset) {
				createNode(t, c, "n1", "4")
				createNode(t, c, "n2", "4")
			},
			existing: []*v1.Pod{newPod("db", "100m", podLabels("app", "db"), onNode("n2"))},
			pods: []*v1.Pod{newPod("web", "100m", func(p *v1.Pod) {
				p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: v1.LabelHostname}}}}
			})},
			check: want(map[string]string{"web": "n2"}),
		},
		{
			name: "pod anti-affinity spreads replicas one per node",
			nodes: func(t *testing.T, c clientset) {
				for i := range 3 {
					createNode(t, c, fmt.Sprintf("n%d", i), "4")
				}
			},
			pods: []*v1.Pod{
				newPod("web-0", "100m", podLabels("app", "web"), antiWeb),
				newPod("web-1", "100m", podLabels("app", "web"), antiWeb),
				newPod("web-2", "100m", podLabels("app", "web"), antiWeb),
			},
			check: func(t *testing.T, placed map[string]string) {
				seen := map[string]bool{}
				for pod, node := range placed {
					if seen[node] {
						t.Errorf("%s shares node %s with another replica: %v", pod, node, placed)
					}
					seen[node] = true
				}
			},
		},
		{
			name: "topology spread across zones",
			nodes: func(t *testing.T, c clientset) {
				createNode(t, c, "a1", "4", labels("zone", "a"))
				createNode(t, c, "a2", "4", labels("zone", "a"))
				createNode(t, c, "b1", "4", labels("zone", "b"))
			},
			existing: []*v1.Pod{
				newPod("w1", "100m", podLabels("app", "web"), onNode("a1")),
				newPod("w2", "100m", podLabels("app", "web"), onNode("a2")),
			},
			pods: []*v1.Pod{newPod("w3", "100m", podLabels("app", "web"), func(p *v1.Pod) {
				p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone",
					WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
			})},
			check: want(map[string]string{"w3": "b1"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, runScheduler := startAPIServer(t)
			tt.nodes(t, c)
			// Bound pods exist before the scheduler lists them, so that its
			// first decision sees them (as it would after any resync).
			for _, p := range tt.existing {
				createPod(t, c, p)
			}
			runScheduler()
			placed := map[string]string{}
			// One at a time, so that each placement sees the previous ones.
			for _, p := range tt.pods {
				createPod(t, c, p)
				placed[p.Name] = waitBound(t, c, p.Name)
			}
			tt.check(t, placed)
		})
	}
}

func want(expected map[string]string) func(*testing.T, map[string]string) {
	return func(t *testing.T, placed map[string]string) {
		for pod, node := range expected {
			if placed[pod] != node {
				t.Errorf("%s on %q, want %q", pod, placed[pod], node)
			}
		}
	}
}

func TestFiftyPodsAtOnceNoOvercommit(t *testing.T) {
	c := start(t)
	for i := range 5 {
		createNode(t, c, fmt.Sprintf("n%d", i), "1") // room for 10 pods of 100m each
	}
	for i := range 50 {
		createPod(t, c, newPod(fmt.Sprintf("p%02d", i), "100m"))
	}
	perNode := map[string]int{}
	waitFor(t, "50 pods bound", func() (bool, error) {
		list, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		clear(perNode)
		bound := 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				bound++
				perNode[p.Spec.NodeName]++
			}
		}
		return bound == 50, nil
	})
	for node, n := range perNode {
		if n != 10 {
			t.Errorf("node %s has %d pods, want exactly 10 (room for 10)", node, n)
		}
	}
	createPod(t, c, newPod("one-too-many", "100m"))
	waitFor(t, "one-too-many rejected", func() (bool, error) {
		for _, e := range events(t, c, "one-too-many", "FailedScheduling") {
			if e.Message == "0/5 nodes are available: 5 Insufficient cpu. preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod.." {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestPreemption fills a node with a low-priority pod; a high-priority pod
// evicts it, as upstream's DefaultPreemption does, and binds there once the
// victim is gone.
func TestPreemption(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	for name, value := range map[string]int32{"low": 10, "high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := c.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createNode(t, c, "n1", "2")
	createPod(t, c, newPod("victim", "1500m", func(p *v1.Pod) { p.Spec.PriorityClassName = "low" }))
	waitBound(t, c, "victim")
	createPod(t, c, newPod("preemptor", "1", func(p *v1.Pod) { p.Spec.PriorityClassName = "high" }))

	waitFor(t, "victim marked and terminating", func() (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.DisruptionTarget && cond.Status == v1.ConditionTrue && cond.Reason == v1.PodReasonPreemptionByScheduler &&
				cond.Message == "default-scheduler: preempting to accommodate a higher priority pod" {
				return p.DeletionTimestamp != nil, nil
			}
		}
		return false, nil
	})
	waitFor(t, "preemptor nominated to n1", func() (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "preemptor", metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == "n1" && p.Spec.NodeName == "", err
	})
	preemptor, err := c.CoreV1().Pods(ns).Get(ctx, "preemptor", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Preempted event", func() (bool, error) {
		for _, e := range events(t, c, "victim", "Preempted") {
			if e.Message == fmt.Sprintf("Preempted by pod %s on node n1", preemptor.UID) && e.Type == v1.EventTypeNormal {
				return true, nil
			}
		}
		return false, nil
	})

	// The kubelet would finish the victim's termination.
	zero := int64(0)
	if err := c.CoreV1().Pods(ns).Delete(ctx, "victim", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if node := waitBound(t, c, "preemptor"); node != "n1" {
		t.Errorf("preemptor bound to %s, want n1", node)
	}
}

// TestPinnedPodWaitsForItsNode: a pod pinned by metadata.name matchFields
// (as a DaemonSet pod is) to a node that does not exist yet reports the
// others as upstream does, and goes there once the node registers.
func TestPinnedPodWaitsForItsNode(t *testing.T) {
	c := start(t)
	createNode(t, c, "other", "4")
	createPod(t, c, newPod("pinned", "100m", func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
				{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"later"}}}}}}}}
	}))
	want := "0/1 nodes are available: 1 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
		"preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	waitFor(t, "FailedScheduling event", func() (bool, error) {
		for _, e := range events(t, c, "pinned", "FailedScheduling") {
			if e.Message == want {
				return true, nil
			}
		}
		return false, nil
	})
	createNode(t, c, "later", "4")
	if node := waitBound(t, c, "pinned"); node != "later" {
		t.Fatalf("bound to %s, want later", node)
	}
}
