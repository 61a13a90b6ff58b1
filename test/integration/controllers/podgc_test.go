package controllers

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/controller/podgc"
)

// TestPodOfDeletedNodeEndsFailed: through the apiserver, pod GC marks a
// running pod of a node that no longer exists Failed with DisruptionTarget
// DeletionByPodGC before deleting it, as upstream; the last state watchers
// saw was Running.
func TestPodOfDeletedNodeEndsFailed(t *testing.T) {
	c := startWithoutManager(t)
	ctx := context.Background()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: ns},
		Spec: v1.PodSpec{NodeName: "gone", Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}}}
	created, err := c.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = v1.PodRunning
	if created, err = c.client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := c.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=orphan", ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	f := informers.NewSharedInformerFactory(c.client, 0)
	gc := podgc.New(c.client, f.Core().V1().Pods(), f.Core().V1().Nodes(), podgc.Config{Period: 100 * time.Millisecond}, clock.RealClock{})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	f.Start(stop)
	c.goUntilCleanup("podgc", func(ctx context.Context) error { gc.Run(ctx); return nil })

	var last *v1.Pod
	for deadline := time.After(60 * time.Second); ; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the pod watch ended early")
			}
			last, _ = ev.Object.(*v1.Pod)
			if ev.Type != watch.Deleted {
				continue
			}
		case <-deadline:
			t.Fatal("orphan pod not collected after 60s")
		}
		break
	}
	var cond string
	for _, pc := range last.Status.Conditions {
		if pc.Type == v1.DisruptionTarget {
			cond = string(pc.Status) + " " + pc.Reason + ": " + pc.Message
		}
	}
	if want := "True DeletionByPodGC: PodGC: node no longer exists"; last.Status.Phase != v1.PodFailed || cond != want {
		t.Errorf("deleted pod: phase %s, DisruptionTarget %q; want Failed and %q", last.Status.Phase, cond, want)
	}
}
