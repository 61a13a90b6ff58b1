package controllers

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRestartMidRollout stops the controller manager while a Deployment's
// pods are being created and starts a fresh one: it must pick up where the
// first left off, never running more pods than asked for.
func TestRestartMidRollout(t *testing.T) {
	c := startWithoutManager(t)
	c.addNode("node-a")
	ctx := context.Background()
	stop := c.runManager(nil)
	over := c.watchBounds("web", 5, 0)
	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, newDeployment("web", 5, "busybox:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first pods", func() (bool, error) {
		all, _, _ := c.pods("web")
		return len(all) > 0, nil
	})
	stop()
	c.runManager(nil)
	c.waitAvailable("web", 5)
	if v := over(); len(v) > 0 {
		t.Fatalf("more pods than replicas across the restart: %v", v)
	}
	rss, err := c.client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rss.Items) != 1 {
		t.Fatalf("%d ReplicaSets after the restart, want 1", len(rss.Items))
	}
	all, _, _ := c.pods("web")
	if len(all) != 5 {
		t.Fatalf("%d pods, want 5", len(all))
	}
}
