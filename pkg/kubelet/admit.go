package kubelet

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// admit decides whether a new pod fits this node's allocatable beside the
// pods already admitted; a pod the runtime already runs (adopted after a
// restart) is always admitted.
func (kl *Kubelet) admit(pod *v1.Pod, rp *runtimePod) (reason, message string) {
	if !rp.empty() || pod.Status.Phase == v1.PodRunning {
		return "", ""
	}
	alloc := kl.allocatable()
	active := kl.activePods()
	if len(active) >= kl.cfg.MaxPods {
		return "OutOfpods", fmt.Sprintf("Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", len(active), kl.cfg.MaxPods)
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		want := podRequest(pod, name)
		if want.IsZero() {
			continue
		}
		used := resource.Quantity{}
		for _, p := range active {
			if p.UID != pod.UID {
				r := podRequest(p, name)
				used.Add(r)
			}
		}
		capacity := alloc[name]
		total := used.DeepCopy()
		total.Add(want)
		if total.Cmp(capacity) > 0 {
			if name == v1.ResourceCPU {
				return "OutOfcpu", fmt.Sprintf("Pod was rejected: Node didn't have enough resource: cpu, requested: %d, used: %d, capacity: %d",
					want.MilliValue(), used.MilliValue(), capacity.MilliValue())
			}
			return "OutOfmemory", fmt.Sprintf("Pod was rejected: Node didn't have enough resource: memory, requested: %d, used: %d, capacity: %d",
				want.Value(), used.Value(), capacity.Value())
		}
	}
	return "", ""
}

// podRequest is the pod's effective request: the larger of the sum over
// app containers and the largest init container.
func podRequest(pod *v1.Pod, name v1.ResourceName) resource.Quantity {
	sum := resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Requests[name]; ok {
			sum.Add(q)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if q, ok := c.Resources.Requests[name]; ok && q.Cmp(sum) > 0 {
			sum = q.DeepCopy()
		}
	}
	for name2, q := range pod.Spec.Overhead {
		if name2 == name {
			sum.Add(q)
		}
	}
	return sum
}
