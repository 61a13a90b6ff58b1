package controllers

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/manager"
)

// TestDisruptionBudgetOfAnyController: the controller-manager's disruption
// controller takes a budget's percentage of the scale subresource of the
// pods' controller whatever its kind (here a Deployment owning a pod
// itself, no Deployment controller running), and fails a budget over Job
// pods with upstream's message, Jobs having no scale subresource.
func TestDisruptionBudgetOfAnyController(t *testing.T) {
	c := start(t, func(o *manager.Options) { o.Controllers = []string{"disruption"} })
	ctx := context.Background()
	d, err := c.client.AppsV1().Deployments(ns).Create(ctx, newDeployment("scaled", 4, "busybox:1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]metav1.OwnerReference{
		"scaled": {APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)},
		"batch":  {APIVersion: "batch/v1", Kind: "Job", Name: "batch", UID: "00000000-0000-0000-0000-000000000001", Controller: ptr.To(true)},
	}
	for app, owner := range owners {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: app, Labels: map[string]string{"pdb": app}, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}}}
		if _, err := c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: app}, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromString("50%")), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pdb": app}}}}
		if _, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the Deployment's scale to count", func() (bool, error) {
		pdb, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pdb.Status.ExpectedPods == 4 && pdb.Status.DesiredHealthy == 2 && pdb.Status.ObservedGeneration == pdb.Generation, nil
	})
	waitFor(t, "the Job pods' budget to fail its sync", func() (bool, error) {
		pdb, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "batch", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == policyv1.SyncFailedReason &&
			cond.Message == "jobs.batch does not implement the scale subresource", nil
	})
}
