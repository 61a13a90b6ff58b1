package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
)

// addInformers wires three informers: pending pods (field selector
// spec.nodeName=) feed the queue; bound pods and nodes feed the cache and
// wake unschedulable pods that a change may help.
func (s *Scheduler) addInformers() {
	s.unscheduledFactory = informers.NewSharedInformerFactoryWithOptions(s.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" }))
	s.assignedFactory = informers.NewSharedInformerFactoryWithOptions(s.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName!=" }))
	s.nodeFactory = informers.NewSharedInformerFactory(s.client, 0)
	// Preemption spares the pods PodDisruptionBudgets protect.
	s.pdbs = s.nodeFactory.Policy().V1().PodDisruptionBudgets().Lister()

	s.register(s.unscheduledFactory.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*v1.Pod); ok && s.responsibleFor(pod) && !s.cache.HasPod(pod) {
				s.nominator.set(pod)
				s.queue.Add(pod)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldPod, _ := oldObj.(*v1.Pod)
			pod, ok := newObj.(*v1.Pod)
			if !ok || s.cache.HasPod(pod) {
				return
			}
			if !s.responsibleFor(pod) {
				s.nominator.forget(pod.UID)
				s.queue.Delete(pod)
				return
			}
			s.nominator.set(pod)
			s.queue.Update(oldPod, pod)
		},
		DeleteFunc: func(obj any) {
			if pod := podOf(obj); pod != nil {
				s.nominator.forget(pod.UID)
				s.queue.Delete(pod)
			}
		},
	}))

	s.register(s.assignedFactory.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			pod, ok := obj.(*v1.Pod)
			if !ok || pod.Spec.NodeName == "" || terminal(pod) {
				return
			}
			s.cache.AddPod(pod)
			s.queue.MoveAllToActiveOrBackoffQueue(pluginsHelpedBy(assignedPodAdd))
		},
		UpdateFunc: func(_, newObj any) {
			pod, ok := newObj.(*v1.Pod)
			if !ok || pod.Spec.NodeName == "" {
				return
			}
			if terminal(pod) {
				// A finished pod's requests no longer hold its node.
				s.cache.RemovePod(pod)
				s.queue.MoveAllToActiveOrBackoffQueue(pluginsHelpedBy(assignedPodDelete))
				return
			}
			s.cache.UpdatePod(pod)
		},
		DeleteFunc: func(obj any) {
			if pod := podOf(obj); pod != nil {
				s.cache.RemovePod(pod)
				s.queue.MoveAllToActiveOrBackoffQueue(pluginsHelpedBy(assignedPodDelete))
			}
		},
	}))

	s.register(s.nodeFactory.Core().V1().Nodes().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if node, ok := obj.(*v1.Node); ok {
				s.cache.AddNode(node)
				s.queue.MoveAllToActiveOrBackoffQueue(pluginsHelpedBy(nodeAdd))
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldNode, _ := oldObj.(*v1.Node)
			node, ok := newObj.(*v1.Node)
			if !ok {
				return
			}
			s.cache.UpdateNode(node)
			if oldNode == nil {
				return
			}
			for _, ev := range nodeChanges(oldNode, node) {
				s.queue.MoveAllToActiveOrBackoffQueue(pluginsHelpedBy(ev))
			}
		},
		DeleteFunc: func(obj any) {
			var node *v1.Node
			switch t := obj.(type) {
			case *v1.Node:
				node = t
			case toolscache.DeletedFinalStateUnknown:
				node, _ = t.Obj.(*v1.Node)
			}
			if node != nil {
				s.cache.RemoveNode(node)
				s.queue.MoveAllToActiveOrBackoffQueue(pluginsHelpedBy(nodeDelete))
			}
		},
	}))
}

// nodeChanges lists the scheduling-relevant changes of a node update;
// status heartbeats yield none.
func nodeChanges(old, cur *v1.Node) []clusterEvent {
	var evs []clusterEvent
	if !equality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable) {
		evs = append(evs, nodeAllocatable)
	}
	if !equality.Semantic.DeepEqual(old.Labels, cur.Labels) {
		evs = append(evs, nodeLabel)
	}
	if !equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) {
		evs = append(evs, nodeTaint)
	}
	if old.Spec.Unschedulable != cur.Spec.Unschedulable {
		evs = append(evs, nodeSpecUnschedulable)
	}
	return evs
}

func (s *Scheduler) responsibleFor(pod *v1.Pod) bool {
	name := pod.Spec.SchedulerName
	if name == "" {
		name = DefaultSchedulerName
	}
	return name == s.name && pod.Spec.NodeName == "" && !terminal(pod)
}

func terminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

func podOf(obj any) *v1.Pod {
	switch t := obj.(type) {
	case *v1.Pod:
		return t
	case toolscache.DeletedFinalStateUnknown:
		p, _ := t.Obj.(*v1.Pod)
		return p
	}
	return nil
}

// setPodScheduledFalse records why the pod is pending in its PodScheduled
// condition, with a strategic merge patch of pods/status (conditions merge
// by type, leaving others alone). It skips the write when nothing changed.
func (s *Scheduler) setPodScheduledFalse(ctx context.Context, pod *v1.Pod, reason, msg string, nominated *string) error {
	if nominated == nil {
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == reason && c.Message == msg {
				return nil
			}
		}
	}
	cond := v1.PodCondition{
		Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(s.clock.Now().Truncate(time.Second)),
	}
	status := map[string]any{"conditions": []v1.PodCondition{cond}}
	if nominated != nil {
		// null removes the field in a merge patch.
		status["nominatedNodeName"] = nil
		if *nominated != "" {
			status["nominatedNodeName"] = *nominated
		}
	}
	err := s.patchStatus(ctx, pod, status)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patch %s/%s status: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// patchStatus sends pod's status the strategic merge patch
// {"status": status}.
func (s *Scheduler) patchStatus(ctx context.Context, pod *v1.Pod, status map[string]any) error {
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}

// register keeps a handler's registration: an informer counts as synced
// once it has listed, but the queue and the cache are only complete once
// the handlers have seen every listed object.
func (s *Scheduler) register(reg toolscache.ResourceEventHandlerRegistration, err error) {
	if err == nil {
		s.handlers = append(s.handlers, reg)
	}
}
