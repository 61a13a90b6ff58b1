package kubelet

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/kubelet/server"
)

// ContainerLog finds the CRI log file of a container of a pod on this node.
func (kl *Kubelet) ContainerLog(ctx context.Context, namespace, podName, container string, previous bool) (string, func() bool, error) {
	var uid string
	kl.mu.Lock()
	for u, st := range kl.pods {
		if st.pod != nil && st.pod.Namespace == namespace && st.pod.Name == podName {
			uid = string(u)
		}
	}
	kl.mu.Unlock()
	if uid == "" {
		return "", nil, fmt.Errorf("pod %s/%s is not on this node: %w", namespace, podName, server.ErrNotFound)
	}
	_, pod := kl.state(types.UID(uid))
	if pod == nil || findContainer(pod, container) == nil {
		return "", nil, fmt.Errorf("container %s is not valid for pod %s: %w", container, podName, server.ErrNotFound)
	}
	rp, err := kl.runtimePod(ctx, types.UID(uid))
	if err != nil {
		return "", nil, err
	}
	cur, prev := rp.latest(container)
	target := cur
	if previous {
		target = prev
	}
	// Upstream's words, answered as 400 Bad Request: the request names a
	// container that exists but has no log (yet) to give.
	if target == nil {
		if previous {
			return "", nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, podName)
		}
		return "", nil, fmt.Errorf("container %q in pod %q is waiting to start: %s", container, podName, kl.waitingReason(types.UID(uid), container))
	}
	id := target.Id
	running := func() bool {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := kl.runtime.ContainerStatus(sctx, id)
		return err == nil && (st.State == runtimeapi.ContainerState_CONTAINER_RUNNING || st.State == runtimeapi.ContainerState_CONTAINER_CREATED)
	}
	return target.LogPath, running, nil
}

// Healthy reports whether the kubelet's loops and runtime work.
func (kl *Kubelet) Healthy() error {
	if ok, last := kl.pleg.Healthy(3 * time.Minute); !ok && !last.IsZero() {
		return fmt.Errorf("PLEG is not healthy: last relist %s ago", kl.clock.Since(last).Round(time.Second))
	}
	return nil
}

// Metrics returns the kubelet's metrics.
func (kl *Kubelet) Metrics() *Metrics { return kl.metrics }

// waitingReason is why a container without an instance waits, from the
// status last computed for its pod (ContainerCreating until there is one).
func (kl *Kubelet) waitingReason(uid types.UID, container string) string {
	s, ok := kl.statuses.Status(uid)
	if ok {
		for _, cs := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
			if cs.Name == container && cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
				return cs.State.Waiting.Reason
			}
		}
	}
	return reasonContainerCreating
}
