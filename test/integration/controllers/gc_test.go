package controllers

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/manager"
)

// TestDeletePropagation deletes a Deployment with each policy and checks
// that what remains is what upstream leaves.
func TestDeletePropagation(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	tests := []struct {
		policy     metav1.DeletionPropagation
		wantOrphan bool // ReplicaSet and pods stay, without an owner
	}{
		{policy: metav1.DeletePropagationBackground},
		{policy: metav1.DeletePropagationForeground},
		{policy: metav1.DeletePropagationOrphan, wantOrphan: true},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			name := "web-" + lower(string(tt.policy))
			if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, newDeployment(name, 2, "busybox:1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			c.waitAvailable(name, 2)
			if tt.wantOrphan {
				// Orphaning strips the owner from the dependents the
				// collector has seen, as upstream's does: make sure it has
				// seen the ReplicaSet before its owner goes.
				c.waitCollectorSawReplicaSets(t)
			}
			policy := tt.policy
			if err := c.client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
				t.Fatal(err)
			}
			if tt.policy == metav1.DeletePropagationForeground {
				// Foreground: the Deployment stays, marked, until its
				// dependents are gone, so it is never seen without them.
				d, err := c.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
				if err == nil && d.DeletionTimestamp == nil {
					t.Fatalf("foreground-deleted Deployment has no deletionTimestamp")
				}
			}
			waitFor(t, "the deployment to go", func() (bool, error) {
				_, err := c.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, nil
				}
				return false, err
			})
			if tt.wantOrphan {
				waitFor(t, "orphaned ReplicaSet and pods", func() (bool, error) {
					rss, err := c.client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					if err != nil || len(rss.Items) != 1 {
						return false, err
					}
					if len(rss.Items[0].OwnerReferences) != 0 {
						return false, nil
					}
					_, live, _ := c.pods(name)
					return len(live) == 2, nil
				})
				return
			}
			waitFor(t, "ReplicaSets and pods deleted", func() (bool, error) {
				rss, err := c.client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
				if err != nil {
					return false, err
				}
				all, _, _ := c.pods(name)
				return len(rss.Items) == 0 && len(all) == 0, nil
			})
		})
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}

func TestNamespaceDeletionEmptiesIt(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := newDeployment("web", 2, "busybox:1")
	d.Namespace = "doomed"
	if _, err := c.client.AppsV1().Deployments("doomed").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("doomed").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deployment's pods", func() (bool, error) {
		pods, err := c.client.CoreV1().Pods("doomed").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 2, err
	})
	if err := c.client.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the namespace to go", func() (bool, error) {
		_, err := c.client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	for what, n := range map[string]func() (int, error){
		"pods": func() (int, error) {
			l, err := c.client.CoreV1().Pods("doomed").List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		},
		"configmaps": func() (int, error) {
			l, err := c.client.CoreV1().ConfigMaps("doomed").List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		},
		"replicasets": func() (int, error) {
			l, err := c.client.AppsV1().ReplicaSets("doomed").List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		},
	} {
		if got, err := n(); err != nil || got != 0 {
			t.Errorf("%d %s left (err %v)", got, what, err)
		}
	}
}

// TestGarbageCollectsAnyKind: ownership works across kinds the collector
// knows only through discovery, including a cluster-scoped owner.
func TestGarbageCollectsAnyKind(t *testing.T) {
	c := start(t, func(o *manager.Options) { o.Controllers = []string{"garbagecollector"} })
	ctx := context.Background()
	owner, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := c.client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "owner-node"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string]metav1.OwnerReference{
		"owned-by-configmap": {APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID},
		"owned-by-node":      {APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID},
	}
	for name, ref := range deps {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ref}}}
		if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A dependent whose owner never existed goes too.
	ghost := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned-by-ghost", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "00000000-0000-0000-0000-000000000000"}}}}
	if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, ghost, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := func(name string) func() (bool, error) {
		return func() (bool, error) {
			_, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
	}
	waitFor(t, "the ghost's dependent to go", gone("owned-by-ghost"))
	for name := range deps {
		if _, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("%s went while its owner lives: %v", name, err)
		}
	}
	if err := c.client.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for name := range deps {
		waitFor(t, name+" to go", gone(name))
	}
}

// waitCollectorSawReplicaSets returns once the garbage collector has
// observed every ReplicaSet created so far. It creates one whose owner does
// not exist and waits until the collector deletes it: one informer delivers
// a resource's changes in order, so by then it has delivered all earlier
// ones. (Upstream's tests look into the collector's graph instead.)
func (c *cluster) waitCollectorSawReplicaSets(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	name := "gc-probe-" + string(uuid.NewUUID())[:8]
	labels := map[string]string{"app": name}
	probe := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "gone", UID: uuid.NewUUID()}}},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}},
			},
		},
	}
	if _, err := c.client.AppsV1().ReplicaSets(ns).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the collector to delete a ReplicaSet whose owner is gone", func() (bool, error) {
		_, err := c.client.AppsV1().ReplicaSets(ns).Get(ctx, probe.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// TestOwnerOfAnotherNamespaceIsReported: a dependent naming an owner of
// another namespace gets upstream's OwnerRefInvalidNamespace warning from
// the garbage-collector-controller, which `kubectl describe` shows next to
// the dependent (which goes, as the reference resolves to nothing).
func TestOwnerOfAnotherNamespaceIsReported(t *testing.T) {
	c := start(t, func(o *manager.Options) { o.Controllers = []string{"garbagecollector"} })
	ctx := context.Background()
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	if _, err := c.client.CoreV1().ConfigMaps("elsewhere").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`ownerRef [v1/ConfigMap, namespace: elsewhere, name: owner, uid: %s] does not exist in namespace "elsewhere"`, owner.UID)
	waitFor(t, "the OwnerRefInvalidNamespace event", func() (bool, error) {
		evs, err := c.client.CoreV1().Events("elsewhere").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=dependent,reason=OwnerRefInvalidNamespace"})
		if err != nil || len(evs.Items) == 0 {
			return false, err
		}
		e := evs.Items[0]
		if e.Type != v1.EventTypeWarning || e.Source.Component != "garbage-collector-controller" || e.Message != want || e.InvolvedObject.Kind != "ConfigMap" {
			return false, fmt.Errorf("event %s %s from %q about %s: %q, want Warning from garbage-collector-controller: %q",
				e.Type, e.Reason, e.Source.Component, e.InvolvedObject.Kind, e.Message, want)
		}
		return true, nil
	})
}
