package kubelet

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Upstream's words for a container the kubelet cannot find when the pod ends.
const (
	reasonContainerStatusUnknown  = "ContainerStatusUnknown"
	messageContainerStatusUnknown = "The container could not be located when the pod was terminated"
)

// reportTerminalStatus publishes the status of a deleted pod whose containers
// are stopped, and returns once the API server has it. As upstream (since
// 1.27) a pod reaches Failed or Succeeded, with its containers' terminated
// states, before its final delete: controllers that act on a terminal phase
// (a Job's podFailurePolicy or podReplacementPolicy: Failed) see one.
func (kl *Kubelet) reportTerminalStatus(ctx context.Context, st *podState, pod *v1.Pod, rp *runtimePod) error {
	kl.statuses.SetPodStatus(pod, kl.terminalStatus(pod, rp, st))
	if err := kl.statuses.Send(ctx, pod.UID); err != nil {
		return fmt.Errorf("report the terminal status: %w", err)
	}
	return nil
}

// terminalStatus is the last status of a deleted pod, as upstream's
// generateAPIPodStatus for a terminal pod followed by its status manager's
// TerminatePod.
func (kl *Kubelet) terminalStatus(pod *v1.Pod, rp *runtimePod, st *podState) v1.PodStatus {
	if st.rejected != nil {
		return *st.rejected.DeepCopy()
	}
	prev := kl.lastStatus(pod)
	s := kl.computeStatus(pod, rp, st)
	// A container removed since (an earlier attempt of this sync got that
	// far) keeps the terminated state last reported.
	keepTerminated(s.InitContainerStatuses, prev.InitContainerStatuses)
	keepTerminated(s.ContainerStatuses, prev.ContainerStatuses)
	// A terminal phase never changes; its reason and message stay with it.
	if isTerminal(prev.Phase) {
		s.Phase = prev.Phase
	}
	if s.Phase == prev.Phase && s.Reason == "" {
		s.Reason, s.Message = prev.Reason, prev.Message
	}

	// Once the pod has initialized, a container that never ran is reported
	// as failed: nothing shows it succeeded.
	if hasPodInitialized(pod) {
		markUnknown(s.ContainerStatuses)
	}
	markUnknown(startedInitContainers(s.InitContainerStatuses))
	if !isTerminal(s.Phase) {
		s.Phase = v1.PodFailed
	}
	return s
}

func isTerminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// keepTerminated gives each container of cur not found in the runtime (so
// waiting without a last state) the terminated state it had in prev.
func keepTerminated(cur, prev []v1.ContainerStatus) {
	for i := range cur {
		if cur[i].State.Waiting == nil || cur[i].ContainerID != "" {
			continue
		}
		for _, p := range prev {
			if p.Name == cur[i].Name && p.State.Terminated != nil {
				cur[i] = *p.DeepCopy()
			}
		}
	}
}

// markUnknown turns every not terminated container into upstream's
// ContainerStatusUnknown, exit code 137.
func markUnknown(statuses []v1.ContainerStatus) {
	for i := range statuses {
		if statuses[i].State.Terminated != nil {
			continue
		}
		statuses[i].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: reasonContainerStatusUnknown, Message: messageContainerStatusUnknown, ExitCode: 137}}
	}
}

// hasPodInitialized reports, as upstream's status manager, whether the API
// shows evidence the pod got past its init containers.
func hasPodInitialized(pod *v1.Pod) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.LastTerminationState.Terminated != nil || cs.State.Waiting == nil {
			return true
		}
	}
	if l := len(pod.Status.InitContainerStatuses); l > 0 {
		last := pod.Status.InitContainerStatuses[l-1]
		if l <= len(pod.Spec.InitContainers) && isSidecar(&pod.Spec.InitContainers[l-1]) {
			// A sidecar last has only to have started.
			return last.State.Running != nil && last.Started != nil && *last.Started
		}
		for _, t := range []*v1.ContainerStateTerminated{last.LastTerminationState.Terminated, last.State.Terminated} {
			if t != nil && t.ExitCode == 0 {
				return true
			}
		}
	}
	return false
}

// startedInitContainers are the init containers up to the last one with
// evidence of a start (at least the first), as upstream's
// initializedContainers: those after it never ran and stay waiting.
func startedInitContainers(statuses []v1.ContainerStatus) []v1.ContainerStatus {
	for i := len(statuses) - 1; i >= 0; i-- {
		if statuses[i].State.Waiting == nil || statuses[i].LastTerminationState.Terminated != nil {
			return statuses[:i+1]
		}
	}
	if len(statuses) > 0 {
		return statuses[:1]
	}
	return nil
}
