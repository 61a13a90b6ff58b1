package controllers

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/manager"
	"github.com/kube-lite/kube-lite/pkg/scheduler"
	"github.com/kube-lite/kube-lite/test/integration/framework"
)

const ns = "default"

type cluster struct {
	t      *testing.T
	cfg    *rest.Config
	client kubernetes.Interface
}

// start runs an apiserver, the scheduler, and a controller manager running
// the given controllers (all when none are named).
func start(t *testing.T, mutate func(*manager.Options)) *cluster {
	t.Helper()
	c := startWithoutManager(t)
	c.runManager(mutate)
	return c
}

// startWithoutManager runs the apiserver and the scheduler only.
func startWithoutManager(t *testing.T) *cluster {
	t.Helper()
	srv := framework.StartAPIServer(t)
	c := &cluster{t: t, cfg: srv.Config, client: srv.Client}
	c.runScheduler()
	return c
}

func (c *cluster) runScheduler() {
	s, err := scheduler.New(scheduler.Config{Client: c.client, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		c.t.Fatal(err)
	}
	c.goUntilCleanup("scheduler", func(ctx context.Context) error { return s.Run(ctx) })
}

func testOptions() *manager.Options {
	o := manager.NewOptions()
	o.LeaderElection.Enabled = false
	o.NodeMonitorGracePeriod = 3 * time.Second
	o.NodeMonitorPeriod = 200 * time.Millisecond
	o.JobPodFailureBackoff = 0
	return o
}

// runManager starts a controller manager; the returned func stops it.
func (c *cluster) runManager(mutate func(*manager.Options)) context.CancelFunc {
	o := testOptions()
	if mutate != nil {
		mutate(o)
	}
	m, err := manager.New(o, c.cfg, prometheus.NewRegistry())
	if err != nil {
		c.t.Fatal(err)
	}
	return c.goUntilCleanup("controller-manager", m.Run)
}

// goUntilCleanup runs f until the test ends.
func (c *cluster) goUntilCleanup(what string, f func(ctx context.Context) error) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := f(ctx); err != nil && ctx.Err() == nil {
			c.t.Errorf("%s: %v", what, err)
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	c.t.Cleanup(stop)
	return stop
}

// node is a fake kubelet: it registers a Node, renews its Lease, marks the
// pods bound to it Running and Ready, and finishes their graceful deletion.
type node struct {
	name string
	stop context.CancelFunc
}

func (c *cluster) addNode(name string) *node {
	c.t.Helper()
	ctx := context.Background()
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		},
	}
	if _, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("create node %s: %v", name, err)
	}
	// Status is a subresource: write the Ready condition through it too, in
	// case create drops status. Controllers (IPAM) may write the Node too.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = n.Status
		_, err = c.client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		c.t.Fatalf("node %s status: %v", name, err)
	}
	agent := &node{name: name}
	agent.stop = c.goUntilCleanup("node "+name, func(ctx context.Context) error { return c.runAgent(ctx, name) })
	return agent
}

func (c *cluster) runAgent(ctx context.Context, name string) error {
	f := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", name).String()
	}))
	pods := f.Core().V1().Pods().Informer()
	work := make(chan *v1.Pod, 1000)
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { work <- obj.(*v1.Pod) },
		UpdateFunc: func(_, obj any) { work <- obj.(*v1.Pod) },
	})
	f.Start(ctx.Done())
	defer f.Shutdown()
	renew := time.NewTicker(500 * time.Millisecond)
	defer renew.Stop()
	c.renewLease(ctx, name)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-renew.C:
			c.renewLease(ctx, name)
		case p := <-work:
			c.reconcilePod(ctx, p)
		}
	}
}

func (c *cluster) renewLease(ctx context.Context, name string) {
	leases := c.client.CoordinationV1().Leases(v1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, _ = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
		}, metav1.CreateOptions{})
		return
	}
	if err != nil {
		return
	}
	l.Spec.RenewTime = &now
	_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
}

// exitCode, when a pod carries it as an annotation, makes the fake kubelet
// finish the pod (Succeeded for 0, Failed otherwise) instead of running it.
const exitCodeAnnotation = "test.kube-lite.io/exit-code"

func (c *cluster) reconcilePod(ctx context.Context, p *v1.Pod) {
	if p.DeletionTimestamp != nil {
		_ = c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
		return
	}
	if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed || p.Status.Phase == v1.PodRunning {
		return
	}
	p = p.DeepCopy()
	now := metav1.Now()
	if code, ok := p.Annotations[exitCodeAnnotation]; ok {
		p.Status.Phase = v1.PodFailed
		if code == "0" {
			p.Status.Phase = v1.PodSucceeded
		}
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, LastTransitionTime: now}}
	} else {
		p.Status.Phase = v1.PodRunning
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now}}
	}
	p.Status.StartTime = &now
	_, _ = c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true,
		func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func newDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: image}}},
			},
		},
	}
}

func (c *cluster) deployment(name string) *appsv1.Deployment {
	c.t.Helper()
	d, err := c.client.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

// pods lists the pods with label app=name, split by state.
func (c *cluster) pods(app string) (all, live, ready []v1.Pod) {
	c.t.Helper()
	list, err := c.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, p := range list.Items {
		all = append(all, p)
		if p.DeletionTimestamp != nil || p.Status.Phase == v1.PodFailed || p.Status.Phase == v1.PodSucceeded {
			continue
		}
		live = append(live, p)
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.PodReady && cond.Status == v1.ConditionTrue {
				ready = append(ready, p)
			}
		}
	}
	return all, live, ready
}

func (c *cluster) waitAvailable(name string, n int32) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("deployment %s to have %d available", name, n), func() (bool, error) {
		d := c.deployment(name)
		return d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == n && d.Status.UpdatedReplicas == n && d.Status.Replicas == n, nil
	})
}
