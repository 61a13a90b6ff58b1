package replicaset

import (
	"cmp"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-lite/kube-lite/pkg/controller/controllerutil"
)

// podsToDelete picks the n of active to delete as upstream's ReplicaSet
// controller ranks them: unscheduled, pending and not-ready pods first; then
// a lower pod-deletion-cost; then pods on nodes crowded with pods of this
// ReplicaSet and of its siblings (same owner, e.g. a Deployment's old and
// new ReplicaSets), so that a rollout spreads out; then controllerutil's
// order (ready for less time, restarted more, newer).
func (c *Controller) podsToDelete(rs *appsv1.ReplicaSet, active, all []*corev1.Pod, n int) []*corev1.Pod {
	if n >= len(active) {
		return active
	}
	onNode := map[string]int{}
	for _, p := range c.relatedPods(rs, all) {
		if controllerutil.IsPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	byCost := func(a, b *corev1.Pod) int { return cmp.Compare(deletionCost(a), deletionCost(b)) }
	byCrowding := func(a, b *corev1.Pod) int { return cmp.Compare(onNode[b.Spec.NodeName], onNode[a.Spec.NodeName]) }
	return controllerutil.PodsToDelete(active, n, byCost, byCrowding)
}

// relatedPods are the pods of rs and of the ReplicaSets sharing its owner;
// none when rs has no owner, as upstream.
func (c *Controller) relatedPods(rs *appsv1.ReplicaSet, all []*corev1.Pod) []*corev1.Pod {
	ref := controllerutil.ControllerRef(rs)
	if ref == nil {
		return nil
	}
	siblings, err := c.rsLister.ReplicaSets(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	uids := map[types.UID]bool{rs.UID: true}
	for _, s := range siblings {
		if r := controllerutil.ControllerRef(s); r != nil && r.UID == ref.UID {
			uids[s.UID] = true
		}
	}
	var out []*corev1.Pod
	for _, p := range all {
		if r := controllerutil.ControllerRef(p); r != nil && uids[r.UID] {
			out = append(out, p)
		}
	}
	return out
}

// deletionCost is the pod's pod-deletion-cost annotation, which lets users
// say which pods go first on scale-down (lower cost first); a missing or
// malformed one counts as 0.
func deletionCost(p *corev1.Pod) int32 {
	n, err := strconv.ParseInt(p.Annotations[corev1.PodDeletionCost], 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}
