package controllers

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeploymentReachesAvailable(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, newDeployment("web", 5, "busybox:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitAvailable("web", 5)
	d := c.deployment("web")
	if got := d.Annotations["deployment.kubernetes.io/revision"]; got != "1" {
		t.Errorf("revision annotation %q, want 1", got)
	}
	var available, progressing string
	for _, cond := range d.Status.Conditions {
		switch cond.Type {
		case appsv1.DeploymentAvailable:
			available = string(cond.Status) + "/" + cond.Reason
		case appsv1.DeploymentProgressing:
			progressing = string(cond.Status) + "/" + cond.Reason
		}
	}
	if available != "True/MinimumReplicasAvailable" {
		t.Errorf("Available = %s", available)
	}
	if progressing != "True/NewReplicaSetAvailable" {
		t.Errorf("Progressing = %s", progressing)
	}
	_, live, ready := c.pods("web")
	if len(live) != 5 || len(ready) != 5 {
		t.Errorf("%d live, %d ready pods, want 5 and 5", len(live), len(ready))
	}
}
