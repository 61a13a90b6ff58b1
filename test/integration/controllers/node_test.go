package controllers

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/manager"
)

// TestLostNodeIsTaintedAndItsPodsReplaced stops a node's agent (its Lease
// stops), and expects the node tainted after the grace period and its pods
// running again on the other node.
func TestLostNodeIsTaintedAndItsPodsReplaced(t *testing.T) {
	c := start(t, nil)
	a := c.addNode("node-a")
	ctx := context.Background()
	d := newDeployment("web", 2, "busybox:1")
	// Evict one second after the taint rather than the 300 s default.
	d.Spec.Template.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](1)}}
	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitAvailable("web", 2)
	c.addNode("node-b")
	a.stop()

	waitFor(t, "node-a to be marked unreachable", func() (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready := v1.ConditionTrue
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady {
				ready = cond.Status
			}
		}
		tainted := false
		for _, tn := range n.Spec.Taints {
			if tn.Key == v1.TaintNodeUnreachable && tn.Effect == v1.TaintEffectNoExecute {
				tainted = true
			}
		}
		return ready == v1.ConditionUnknown && tainted, nil
	})
	waitFor(t, "the pods to run again on node-b", func() (bool, error) {
		_, live, ready := c.pods("web")
		if len(live) != 2 || len(ready) != 2 {
			return false, nil
		}
		for _, p := range live {
			if p.Spec.NodeName != "node-b" {
				return false, nil
			}
		}
		return true, nil
	})
	// As upstream, the evictions are reported by the taint eviction
	// controller, under its own name.
	waitFor(t, "a TaintManagerEviction event from taint-eviction-controller", func() (bool, error) {
		evs, err := c.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "TaintManagerEviction" && e.InvolvedObject.Kind == "Pod" &&
				e.Message == "Marking for deletion Pod "+ns+"/"+e.InvolvedObject.Name {
				if e.Source.Component != "taint-eviction-controller" {
					return false, fmt.Errorf("event %q from %q", e.Message, e.Source.Component)
				}
				return true, nil
			}
		}
		return false, nil
	})
	// node-b keeps its Lease fresh, so it stays untainted.
	n, err := c.client.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Taints) != 0 {
		t.Errorf("healthy node-b tainted: %v", n.Spec.Taints)
	}
}

func TestNodeIPAMGivesDistinctCIDRs(t *testing.T) {
	c := start(t, func(o *manager.Options) {
		o.AllocateNodeCIDRs = true
		o.ClusterCIDR = "10.244.0.0/16"
	})
	for _, name := range []string{"n1", "n2", "n3"} {
		c.addNode(name)
	}
	ctx := context.Background()
	waitFor(t, "every node to get a podCIDR", func() (bool, error) {
		list, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen := map[string]string{}
		for _, n := range list.Items {
			if n.Spec.PodCIDR == "" {
				return false, nil
			}
			if other, dup := seen[n.Spec.PodCIDR]; dup {
				t.Fatalf("nodes %s and %s share %s", other, n.Name, n.Spec.PodCIDR)
			}
			seen[n.Spec.PodCIDR] = n.Name
		}
		return len(seen) == 3, nil
	})
}
