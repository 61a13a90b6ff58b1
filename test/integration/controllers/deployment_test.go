package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
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
	// Recording the revision is not a change of spec: as upstream, a new
	// Deployment stays at generation 1.
	if d.Generation != 1 || d.Status.ObservedGeneration != 1 {
		t.Errorf("generation %d, observedGeneration %d, want 1 and 1", d.Generation, d.Status.ObservedGeneration)
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
	// kubectl describe shows what the controllers did.
	waitFor(t, "a ScalingReplicaSet event", func() (bool, error) {
		evs, err := c.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=ScalingReplicaSet"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Deployment" && e.Source.Component == "deployment-controller" && strings.HasPrefix(e.Message, "Scaled up replica set web-") {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestRollingUpdateBoundsAndUndo rolls a new image out while watching every
// pod change, then rolls back the way `kubectl rollout undo` does.
func TestRollingUpdateBoundsAndUndo(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	d := newDeployment("web", 5, "busybox:1")
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitAvailable("web", 5)

	violations := c.watchBounds("web", 6, 4)
	setImage := func(image string) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d := c.deployment("web")
			d.Spec.Template.Spec.Containers[0].Image = image
			_, err := c.client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setImage("busybox:2")
	c.waitAvailable("web", 5)
	c.waitImage("web", "busybox:2")
	if v := violations(); len(v) > 0 {
		t.Fatalf("rollout left the bounds: %v", v)
	}
	if got := c.deployment("web").Annotations["deployment.kubernetes.io/revision"]; got != "2" {
		t.Errorf("revision %q after the update, want 2", got)
	}

	// kubectl rollout undo: copy revision 1's template back.
	rss, err := c.client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var rev1 *appsv1.ReplicaSet
	for i := range rss.Items {
		if rss.Items[i].Annotations["deployment.kubernetes.io/revision"] == "1" {
			rev1 = &rss.Items[i]
		}
	}
	if rev1 == nil {
		t.Fatalf("no ReplicaSet with revision 1 among %d", len(rss.Items))
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := c.deployment("web")
		d.Spec.Template = *rev1.Spec.Template.DeepCopy()
		delete(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		_, err := c.client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c.waitAvailable("web", 5)
	c.waitImage("web", "busybox:1")
	if v := violations(); len(v) > 0 {
		t.Fatalf("undo left the bounds: %v", v)
	}
	if got := c.deployment("web").Annotations["deployment.kubernetes.io/revision"]; got != "3" {
		t.Errorf("revision %q after undo, want 3", got)
	}
	back, err := c.client.AppsV1().ReplicaSets(ns).Get(ctx, rev1.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Annotations["deployment.kubernetes.io/revision"]; got != "3" || *back.Spec.Replicas != 5 {
		t.Errorf("old ReplicaSet back with revision %q and %d replicas, want 3 and 5", got, *back.Spec.Replicas)
	}
}

func TestKilledPodIsReplaced(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, newDeployment("web", 3, "busybox:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitAvailable("web", 3)
	_, live, _ := c.pods("web")
	victim := live[0]
	if err := c.client.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a replacement pod", func() (bool, error) {
		_, live, ready := c.pods("web")
		if len(live) != 3 || len(ready) != 3 {
			return false, nil
		}
		for _, p := range live {
			if p.UID == victim.UID {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitImage waits until every live pod runs image.
func (c *cluster) waitImage(app, image string) {
	c.t.Helper()
	waitFor(c.t, "pods running "+image, func() (bool, error) {
		all, _, _ := c.pods(app)
		for _, p := range all {
			if p.Spec.Containers[0].Image != image {
				return false, nil
			}
		}
		return len(all) > 0, nil
	})
}

// watchBounds checks after every pod change that at most maxLive pods are
// live and at least minReady ready; it returns a func reporting violations.
func (c *cluster) watchBounds(app string, maxLive, minReady int) func() []string {
	f := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=" + app }))
	inf := f.Core().V1().Pods().Informer()
	var mu sync.Mutex
	var violations []string
	check := func(any) {
		live, ready := 0, 0
		for _, obj := range inf.GetStore().List() {
			p := obj.(*v1.Pod)
			if p.DeletionTimestamp != nil || p.Status.Phase == v1.PodFailed || p.Status.Phase == v1.PodSucceeded {
				continue
			}
			live++
			for _, cond := range p.Status.Conditions {
				if cond.Type == v1.PodReady && cond.Status == v1.ConditionTrue {
					ready++
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if live > maxLive || ready < minReady {
			violations = append(violations, fmt.Sprintf("live=%d ready=%d", live, ready))
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, obj any) { check(obj) },
		DeleteFunc: check,
	})
	stop := make(chan struct{})
	f.Start(stop)
	c.t.Cleanup(func() { close(stop); f.Shutdown() })
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		c.t.Fatal("pod informer did not sync")
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), violations...)
	}
}

// TestRecreateNeverRunsBothTemplates: with the Recreate strategy no new pod
// exists while an old one is still there.
func TestRecreateNeverRunsBothTemplates(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	d := newDeployment("web", 3, "busybox:1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitAvailable("web", 3)

	f := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }))
	inf := f.Core().V1().Pods().Informer()
	var mu sync.Mutex
	var mixed []string
	check := func(any) {
		images := map[string]bool{}
		for _, obj := range inf.GetStore().List() {
			images[obj.(*v1.Pod).Spec.Containers[0].Image] = true
		}
		if len(images) > 1 {
			mu.Lock()
			mixed = append(mixed, fmt.Sprint(images))
			mu.Unlock()
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: check, UpdateFunc: func(_, o any) { check(o) }, DeleteFunc: check})
	stop := make(chan struct{})
	defer func() { close(stop); f.Shutdown() }()
	f.Start(stop)
	cache.WaitForCacheSync(stop, inf.HasSynced)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := c.deployment("web")
		d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
		_, err := c.client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c.waitAvailable("web", 3)
	c.waitImage("web", "busybox:2")
	mu.Lock()
	defer mu.Unlock()
	if len(mixed) > 0 {
		t.Fatalf("old and new pods existed together: %v", mixed[0])
	}
}

func TestPauseHoldsTheRolloutUntilResume(t *testing.T) {
	c := start(t, nil)
	c.addNode("node-a")
	ctx := context.Background()
	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, newDeployment("web", 2, "busybox:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitAvailable("web", 2)
	update := func(f func(d *appsv1.Deployment)) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d := c.deployment("web")
			f(d)
			_, err := c.client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	update(func(d *appsv1.Deployment) { d.Spec.Paused = true })
	update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "busybox:2" })
	waitFor(t, "the controller to see the paused template change", func() (bool, error) {
		d := c.deployment("web")
		if d.Status.ObservedGeneration < d.Generation {
			return false, nil
		}
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentProgressing && cond.Reason == "DeploymentPaused" {
				return true, nil
			}
		}
		return false, nil
	})
	rss, err := c.client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rss.Items) != 1 {
		t.Fatalf("%d ReplicaSets while paused, want the old one only", len(rss.Items))
	}
	update(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	c.waitAvailable("web", 2)
	c.waitImage("web", "busybox:2")
}
