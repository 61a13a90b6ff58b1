package kubelet

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
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
	wants := podRequests(pod)
	var useds v1.ResourceList // of the other pods, summed once a request needs it
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		want := wants[name]
		if want.IsZero() {
			continue
		}
		if useds == nil {
			useds = v1.ResourceList{}
			for _, p := range active {
				if p.UID != pod.UID {
					for n, q := range podRequests(p) {
						sum := useds[n]
						sum.Add(q)
						useds[n] = sum
					}
				}
			}
		}
		used := useds[name]
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

// podRequests is the pod's effective requests, as upstream's admission
// counts them: its sidecars beside the app containers and under the init
// containers started after them, pod-level resources over the containers',
// and the overhead on top.
func podRequests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}
