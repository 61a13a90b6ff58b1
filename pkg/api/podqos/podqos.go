// Package podqos works out a pod's quality of service class, which the
// apiserver records in status.qosClass and the kubelet places cgroups by.
package podqos

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Class computes the pod's quality of service class from its containers'
// cpu and memory requests and limits, as the kubelet and upstream do:
// Guaranteed when every container limits both and requests equal limits,
// BestEffort when nothing is requested or limited, Burstable otherwise.
func Class(pod *corev1.Pod) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	all := append(append([]corev1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...)
	// Pod-level resources, when given, decide alone.
	if r := pod.Spec.Resources; r != nil && (hasQOSResource(r.Requests) || hasQOSResource(r.Limits)) {
		all = []corev1.Container{{Resources: *r}}
	}
	for _, c := range all {
		for name, q := range c.Resources.Requests {
			if qosResource(name) && q.Sign() > 0 {
				add(requests, name, q)
			}
		}
		limited := map[corev1.ResourceName]bool{}
		for name, q := range c.Resources.Limits {
			if qosResource(name) && q.Sign() > 0 {
				limited[name] = true
				add(limits, name, q)
			}
		}
		if !limited[corev1.ResourceCPU] || !limited[corev1.ResourceMemory] {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func hasQOSResource(l corev1.ResourceList) bool {
	for name := range l {
		if qosResource(name) {
			return true
		}
	}
	return false
}

func qosResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

func add(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	sum := list[name]
	sum.Add(q)
	list[name] = sum
}
