// Package podgc removes pods nobody else will: pods bound to Nodes that no
// longer exist, terminating pods that were never scheduled, and finished
// pods beyond --terminated-pod-gc-threshold.
package podgc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// Name is the controller's name in --controllers.
const Name = "podgc"

// Config holds the controller's knobs.
type Config struct {
	// TerminatedThreshold is how many finished pods may exist before the
	// oldest are deleted; 0 keeps them all.
	TerminatedThreshold int
	// Quarantine is how long a Node must be missing before its pods are
	// removed, so a Node that is being re-registered keeps them.
	Quarantine time.Duration
	// Period is how often to look.
	Period time.Duration
}

// Controller collects pods.
type Controller struct {
	client     kubernetes.Interface
	podLister  corelisters.PodLister
	nodeLister corelisters.NodeLister
	synced     []cache.InformerSynced
	clock      clock.Clock
	cfg        Config

	mu      sync.Mutex
	missing map[string]time.Time // node name -> when first seen missing
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer, cfg Config, clk clock.Clock) *Controller {
	return &Controller{
		client:     client,
		podLister:  pods.Lister(),
		nodeLister: nodes.Lister(),
		synced:     []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced},
		clock:      clk,
		cfg:        cfg,
		missing:    map[string]time.Time{},
	}
}

// Run collects every Period until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	if !controllerutil.WaitForSync(ctx, Name, c.synced...) {
		return
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.gc(ctx); err != nil {
			slog.Warn("pod gc", "err", err)
		}
	}, c.cfg.Period)
}

func (c *Controller) gc(ctx context.Context) error {
	pods, err := c.podLister.List(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	if err := c.gcTerminated(ctx, pods); err != nil {
		errs = append(errs, err)
	}
	if err := c.gcOrphaned(ctx, pods); err != nil {
		errs = append(errs, err)
	}
	for _, p := range pods {
		// Nothing will ever run the graceful part of an unscheduled pod.
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			if err := c.failAndDelete(ctx, p, nil, "unscheduled and terminating"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

func (c *Controller) gcTerminated(ctx context.Context, pods []*corev1.Pod) error {
	if c.cfg.TerminatedThreshold <= 0 {
		return nil
	}
	var done []*corev1.Pod
	for _, p := range pods {
		if (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) && p.DeletionTimestamp == nil {
			done = append(done, p)
		}
	}
	extra := len(done) - c.cfg.TerminatedThreshold
	if extra <= 0 {
		return nil
	}
	sort.SliceStable(done, func(i, j int) bool { return done[i].CreationTimestamp.Before(&done[j].CreationTimestamp) })
	for _, p := range done[:extra] {
		if err := c.forceDelete(ctx, p, "above the terminated pod threshold"); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) gcOrphaned(ctx context.Context, pods []*corev1.Pod) error {
	now := c.clock.Now()
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	c.mu.Lock()
	for name := range c.missing {
		if _, ok := byNode[name]; !ok {
			delete(c.missing, name)
		}
	}
	c.mu.Unlock()
	for name, podsOnNode := range byNode {
		if _, err := c.nodeLister.Get(name); err == nil {
			c.mu.Lock()
			delete(c.missing, name)
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		since, seen := c.missing[name]
		if !seen {
			c.missing[name] = now
		}
		c.mu.Unlock()
		if !seen || now.Sub(since) < c.cfg.Quarantine {
			continue
		}
		// The cache may lag a re-created Node; only the server is sure.
		_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("check node %s: %w", name, err)
		}
		for _, p := range podsOnNode {
			gone := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists", LastTransitionTime: metav1.NewTime(now)}
			if err := c.failAndDelete(ctx, p, gone, "bound to deleted node "+name); err != nil {
				return err
			}
		}
	}
	return nil
}

// failAndDelete marks a pod nothing will ever run again Failed (with cond,
// when not nil) before deleting it, as upstream: with no kubelet to finish
// it, it would otherwise end in the phase it had, and a Job's
// podFailurePolicy could not tell a lost node from a failure of its own.
func (c *Controller) failAndDelete(ctx context.Context, p *corev1.Pod, cond *corev1.PodCondition, why string) error {
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		status := map[string]any{"phase": corev1.PodFailed}
		if cond != nil {
			status["conditions"] = []corev1.PodCondition{*cond}
		}
		body, err := json.Marshal(map[string]any{"status": status})
		if err != nil {
			return fmt.Errorf("encode patch: %w", err)
		}
		_, err = c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mark pod %s/%s failed: %w", p.Namespace, p.Name, err)
		}
	}
	return c.forceDelete(ctx, p, why)
}

func (c *Controller) forceDelete(ctx context.Context, p *corev1.Pod, why string) error {
	zero := int64(0)
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	slog.Info("garbage-collected pod", "pod", p.Namespace+"/"+p.Name, "why", why)
	return nil
}
