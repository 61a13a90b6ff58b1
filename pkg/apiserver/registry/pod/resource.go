package pod

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

// Resource describes pods; c is the clock the table's AGE column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "pods",
		Singular:     "pod",
		Kind:         "Pod",
		Namespaced:   true,
		ShortNames:   []string{"po"},
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &corev1.Pod{} },
		NewList:      func() runtime.Object { return &corev1.PodList{} },
		Strategy:     strategy{},
		Status:       statusStrategy{},
		Table:        table(c),
		Attrs:        Attrs,
		Deletion:     Deletion{},
		// As upstream's pods: a DELETE answers with the pod.
		ReturnDeletedObject: true,
		ExtraSubresources: []registry.Subresource{
			{Name: "binding", Kind: "Binding", Verbs: []string{"create"}},
			{Name: "log", Kind: "Pod", Verbs: []string{"get"}},
			{Name: "eviction", Kind: "Eviction", Group: "policy", Version: "v1", Verbs: []string{"create"}},
		},
	}
}

// Attrs returns a pod's labels and the fields a field selector may use.
func Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod: %T", obj)
	}
	podIP := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	return labels.Set(pod.Labels), fields.Set{
		"metadata.name":            pod.Name,
		"metadata.namespace":       pod.Namespace,
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}, nil
}
