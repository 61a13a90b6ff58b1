package scheduler

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/kube-lite/kube-lite/pkg/scheduler/framework"
)

// nominator remembers the pending pods that preemption nominated to a node
// (status.nominatedNodeName), so that the room their victims free is kept
// for them: pods of lower priority are filtered as if the nominated pods
// already ran there, as upstream does.
type nominator struct {
	mu   sync.Mutex
	pods map[types.UID]*framework.PodInfo
}

// set records pod's nomination, or forgets it when the pod has none.
func (n *nominator) set(pod *v1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if pod.Status.NominatedNodeName == "" {
		delete(n.pods, pod.UID)
		return
	}
	if old, ok := n.pods[pod.UID]; ok && old.Pod.Status.NominatedNodeName == pod.Status.NominatedNodeName &&
		corev1helpers.PodPriority(old.Pod) == corev1helpers.PodPriority(pod) {
		return
	}
	if n.pods == nil {
		n.pods = map[types.UID]*framework.PodInfo{}
	}
	n.pods[pod.UID] = framework.NewPodInfo(pod)
}

// forget drops the pod's nomination (it was bound, assumed or deleted).
func (n *nominator) forget(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pods, uid)
}

// forPod lists, by node, the nominated pods that pod must leave room for:
// other pods of at least its priority. nil when there are none.
func (n *nominator) forPod(pod *v1.Pod) map[string][]*framework.PodInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pods) == 0 {
		return nil
	}
	prio := corev1helpers.PodPriority(pod)
	var out map[string][]*framework.PodInfo
	for uid, pi := range n.pods {
		if uid == pod.UID || corev1helpers.PodPriority(pi.Pod) < prio {
			continue
		}
		if out == nil {
			out = map[string][]*framework.PodInfo{}
		}
		node := pi.Pod.Status.NominatedNodeName
		out[node] = append(out[node], pi)
	}
	return out
}

// dropLowerOn forgets the nominations to node of pods with a priority
// below prio, and returns those pods.
func (n *nominator) dropLowerOn(node string, prio int32) []*v1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*v1.Pod
	for uid, pi := range n.pods {
		if pi.Pod.Status.NominatedNodeName == node && corev1helpers.PodPriority(pi.Pod) < prio {
			out = append(out, pi.Pod)
			delete(n.pods, uid)
		}
	}
	return out
}
