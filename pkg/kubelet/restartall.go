package kubelet

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/api/podrestart"
)

// Upstream's words for a pod restarted in place by a RestartAllContainers
// rule (KEP-5532, beta and on by default in 1.36).
const (
	// reasonRestartingAllContainers marks a container removed by the
	// restart: its waiting state and the termination it shows until it ends
	// again.
	reasonRestartingAllContainers  = "RestartingAllContainers"
	messageRestartingAllContainers = "The container is removed because RestartAllContainers in place"
	// The AllContainersRestarting condition while the containers are killed
	// and removed.
	reasonRestartAllContainersStarted  = "RestartAllContainersStarted"
	messageRestartAllContainersStarted = "container exited with restart policy rule"
	// restartAllKillMessage is the Killing event's message for a container
	// still running when the pod restarts, upstream's as it is.
	restartAllKillMessage = "killing"
)

// restartsAll reports whether spec, ended with exitCode, restarts all the
// pod's containers.
func restartsAll(spec *v1.Container, exitCode int32) bool {
	rule, ok := podrestart.MatchingRule(spec, exitCode)
	return ok && rule.Action == v1.ContainerRestartRuleActionRestartAllContainers
}

// allRestarting is upstream's ShouldAllContainersRestart: the last status
// says the pod restarts (a kubelet restarted midway carries on), or a
// container's latest instance, in the runtime or in that status, ended as
// one of its RestartAllContainers rules says.
func allRestarting(pod *v1.Pod, rp *runtimePod, last v1.PodStatus) bool {
	if conditionTrue(last, v1.AllContainersRestarting) {
		return true
	}
	lastStatuses := statusesByName(last)
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			if cur, _ := rp.latest(c.Name); cur != nil && cur.State == runtimeapi.ContainerState_CONTAINER_EXITED && restartsAll(c, cur.ExitCode) {
				return true
			}
			if l := lastStatuses[c.Name]; l != nil && l.State.Terminated != nil && restartsAll(c, l.State.Terminated.ExitCode) {
				return true
			}
		}
	}
	return false
}

// statusesByName indexes the init and app container statuses of s by name.
func statusesByName(s v1.PodStatus) map[string]*v1.ContainerStatus {
	out := make(map[string]*v1.ContainerStatus, len(s.InitContainerStatuses)+len(s.ContainerStatuses))
	for _, l := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for i := range l {
			out[l[i].Name] = &l[i]
		}
	}
	return out
}

// restartingCondition is the pod's AllContainersRestarting condition, as
// upstream's: True while containers of a restarting pod are still to be
// removed, False otherwise (with the phase as the reason once it ended).
func restartingCondition(phase v1.PodPhase, restarting bool, rp *runtimePod) v1.PodCondition {
	c := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}
	switch {
	case phase == v1.PodSucceeded:
		c.Reason = "PodCompleted"
	case phase == v1.PodFailed:
		c.Reason = "PodFailed"
	case restarting && len(rp.Containers) > 0:
		c.Status, c.Reason, c.Message = v1.ConditionTrue, reasonRestartAllContainersStarted, messageRestartAllContainersStarted
	}
	return c
}

// removedByRestart is cs, the status of a container with no instance,
// removed from the runtime by a restart of the whole pod, whose last status
// was last: waiting to start again, its last termination the restart's,
// counted as a restart.
func removedByRestart(cs v1.ContainerStatus, last v1.ContainerStatus) v1.ContainerStatus {
	cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reasonRestartingAllContainers, Message: messageRestartingAllContainers}}
	cs.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		Reason: reasonRestartingAllContainers, Message: messageRestartingAllContainers, ExitCode: 137}}
	cs.RestartCount = last.RestartCount + 1
	return cs
}

// restartedByAll reports whether last, a container's last status, shows it
// removed by a restart of the whole pod, with no termination of its own
// since: what it carries over until the runtime has an earlier instance.
func restartedByAll(last *v1.ContainerStatus) bool {
	return last != nil && last.LastTerminationState.Terminated != nil &&
		last.LastTerminationState.Terminated.Reason == reasonRestartingAllContainers
}

// resetContainers restarts the pod in place as upstream does on a
// RestartAllContainers rule: every instance of its containers is removed
// (logs kept, so attempts count on), the running ones killed first without
// a grace period (and so without preStop hooks); the app containers go
// before the init containers, those that ended by the rule last. The
// sandbox and the volumes stay.
func (kl *Kubelet) resetContainers(ctx context.Context, st *podState, pod *v1.Pod, rp *runtimePod) error {
	var appTargets, initTargets, appSources, initSources []*runtimeapi.ContainerStatus
	split := func(specs []v1.Container, targets, sources *[]*runtimeapi.ContainerStatus) {
		for i := range specs {
			for _, c := range rp.Containers {
				if c.Metadata.GetName() != specs[i].Name {
					continue
				}
				if c.State == runtimeapi.ContainerState_CONTAINER_EXITED && restartsAll(&specs[i], c.ExitCode) {
					*sources = append(*sources, c)
				} else {
					*targets = append(*targets, c)
				}
			}
		}
	}
	split(pod.Spec.Containers, &appTargets, &appSources)
	split(pod.Spec.InitContainers, &initTargets, &initSources)
	for _, group := range [][]*runtimeapi.ContainerStatus{appTargets, initTargets, appSources, initSources} {
		for _, c := range group {
			if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
				if err := kl.stopContainer(ctx, pod, c, 0, restartAllKillMessage); err != nil {
					return fmt.Errorf("kill container %s: %w", c.Metadata.GetName(), err)
				}
			}
			if err := kl.removeContainer(ctx, st, pod, c); err != nil {
				return fmt.Errorf("remove container %s: %w", c.Metadata.GetName(), err)
			}
		}
	}
	return nil
}
