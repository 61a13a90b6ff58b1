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

// podRequest is the pod's effective request, as upstream's PodRequests:
// the app containers and sidecars (which run beside them) together, or, if
// more, the largest plain init container plus the sidecars started before
// it; pod-level resources replace it, and the overhead comes on top.
func podRequest(pod *v1.Pod, name v1.ResourceName) resource.Quantity {
	sum := resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Requests[name]; ok {
			sum.Add(q)
		}
	}
	sidecars, initMax := resource.Quantity{}, resource.Quantity{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		q := c.Resources.Requests[name]
		q = q.DeepCopy() // the spec's own is not to change
		if isSidecar(c) {
			sum.Add(q)
			sidecars.Add(q)
			q = sidecars.DeepCopy()
		} else {
			q.Add(sidecars)
		}
		if q.Cmp(initMax) > 0 {
			initMax = q.DeepCopy()
		}
	}
	if initMax.Cmp(sum) > 0 {
		sum = initMax
	}
	if pod.Spec.Resources != nil && (name == v1.ResourceCPU || name == v1.ResourceMemory) {
		if q, ok := pod.Spec.Resources.Requests[name]; ok {
			sum = q.DeepCopy()
		}
	}
	if q, ok := pod.Spec.Overhead[name]; ok {
		sum.Add(q)
	}
	return sum
}
