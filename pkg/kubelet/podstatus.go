package kubelet

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/api/podrestart"
	"github.com/kube-lite/kube-lite/pkg/kubelet/prober"
)

const containerIDPrefix = "containerd://"

// computeStatus derives a pod's API status from what the runtime holds, the
// reasons containers wait and the probe results, like upstream's
// generateAPIPodStatus.
func (kl *Kubelet) computeStatus(pod *v1.Pod, rp *runtimePod, st *podState) v1.PodStatus {
	prev := kl.lastStatus(pod)
	now := metav1.NewTime(kl.clock.Now()).Rfc3339Copy()
	s := v1.PodStatus{
		HostIP:   kl.cfg.NodeIP,
		QOSClass: qosClass(pod),
	}
	if kl.cfg.NodeIP != "" {
		s.HostIPs = []v1.HostIP{{IP: kl.cfg.NodeIP}}
	}
	s.StartTime = prev.StartTime
	if s.StartTime == nil {
		t := metav1.NewTime(st.firstSeen).Rfc3339Copy()
		s.StartTime = &t
	}
	ip := rp.podIP()
	if pod.Spec.HostNetwork && rp.readySandbox() != nil {
		ip = kl.cfg.NodeIP
	}
	if ip != "" {
		s.PodIP = ip
		s.PodIPs = []v1.PodIP{{IP: ip}}
	} else if len(rp.Sandboxes) > 0 && prev.PodIP != "" {
		// A stopped sandbox keeps the address it had in the status, as upstream does.
		s.PodIP, s.PodIPs = prev.PodIP, prev.PodIPs
	}

	// As upstream, a pod restarting all its containers in place shows those
	// the runtime no longer has as restarting, and each carries what it
	// showed then until it ends again.
	restartAll := podrestart.MayRestartAll(&pod.Spec)
	restarting := restartAll && allRestarting(pod, rp, prev)
	var lastStatuses map[string]*v1.ContainerStatus
	if restartAll {
		lastStatuses = statusesByName(prev)
	}
	status := func(c *v1.Container, defaultWaiting string) v1.ContainerStatus {
		return kl.containerStatus(pod, c, rp, st, defaultWaiting, lastStatuses[c.Name], restarting)
	}

	// notInit are the init containers the pod waits for: plain ones until
	// they succeed, sidecars until they start; notReady the sidecars and
	// app containers that are not ready, as upstream lists them.
	var notInit, notReady []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := status(c, reasonPodInitializing)
		switch {
		case isSidecar(c):
			if !*cs.Started {
				notInit = append(notInit, cs.Name)
			}
			if !cs.Ready {
				notReady = append(notReady, cs.Name)
			}
		case cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0:
			notInit = append(notInit, cs.Name)
		default:
			// Upstream reports a plain init container that succeeded ready.
			cs.Ready = true
		}
		s.InitContainerStatuses = append(s.InitContainerStatuses, cs)
	}
	// As upstream, an app container not yet created in a pod with init
	// containers waits with PodInitializing, even once they are done (while
	// its image is pulled, say): what kubectl shows then.
	defaultWaiting := reasonContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		defaultWaiting = reasonPodInitializing
	}
	for i := range pod.Spec.Containers {
		cs := status(&pod.Spec.Containers[i], defaultWaiting)
		if !cs.Ready {
			notReady = append(notReady, cs.Name)
		}
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
	}
	// As upstream, a pod whose app containers ran has initialized, whatever
	// its sidecars do since.
	if anyAppStarted(s.ContainerStatuses) {
		notInit = nil
	}
	// A deleted pod's status is computed only once its containers are
	// stopped for good (terminatePod): its phase is terminal whatever its
	// restart policy.
	s.Phase = podPhase(pod, s.InitContainerStatuses, s.ContainerStatuses, pod.DeletionTimestamp != nil)
	if f := st.failure; f != nil {
		s.Phase, s.Reason, s.Message = v1.PodFailed, f.reason, f.message
	}

	sandboxUp := rp.readySandbox() != nil && (ip != "" || pod.Spec.HostNetwork)
	// since keeps the last transition time of a condition whose status
	// did not change.
	since := func(c v1.PodCondition) v1.PodCondition {
		c.LastTransitionTime = now
		for _, p := range prev.Conditions {
			if p.Type == c.Type && p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		return c
	}
	cond := func(t v1.PodConditionType, ok bool, reason, msg string) v1.PodCondition {
		c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: pod.Generation}
		if ok {
			c.Status, c.Reason, c.Message = v1.ConditionTrue, "", ""
		}
		return since(c)
	}
	// As upstream, a terminal pod's containers are not ready, with the
	// phase as the reason; a Succeeded pod is Initialized (PodCompleted).
	terminal := isTerminal(s.Phase)
	readyReason, readyMsg := "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(notReady, " "))
	switch s.Phase {
	case v1.PodSucceeded:
		readyReason, readyMsg = "PodCompleted", ""
	case v1.PodFailed:
		readyReason, readyMsg = "PodFailed", ""
	}
	// As upstream, a pod that initialized stays so while its init
	// containers run again (restarted in place with all its containers).
	initialized := cond(v1.PodInitialized, len(notInit) == 0 || s.Phase == v1.PodSucceeded || conditionTrue(prev, v1.PodInitialized),
		"ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " ")))
	if s.Phase == v1.PodSucceeded {
		initialized.Reason = "PodCompleted"
	}
	containersReady := len(notReady) == 0 && !terminal
	podReady, podReason, podMsg := containersReady, readyReason, readyMsg
	if containersReady {
		podReason, podMsg = readinessGates(pod)
		podReady = podReason == ""
	}
	// In upstream's order, which describe shows as it is.
	s.Conditions = []v1.PodCondition{
		cond(v1.PodReadyToStartContainers, sandboxUp, "", ""),
		initialized,
		cond(v1.PodReady, podReady, podReason, podMsg),
		cond(v1.ContainersReady, containersReady, readyReason, readyMsg),
	}
	// Conditions others own (PodScheduled, readiness gates, DisruptionTarget)
	// are kept as the API has them: the status patch replaces the whole list.
	scheduled := false
	if f := st.failure; f != nil && f.disruption {
		s.Conditions = append(s.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
			Reason: v1.PodReasonTerminationByKubelet, Message: f.message, LastTransitionTime: now, ObservedGeneration: pod.Generation})
	}
	for _, p := range pod.Status.Conditions {
		if kubeletCondition(p.Type) || (p.Type == v1.DisruptionTarget && st.failure != nil && st.failure.disruption) {
			continue
		}
		scheduled = scheduled || p.Type == v1.PodScheduled
		s.Conditions = append(s.Conditions, p)
	}
	if !scheduled {
		s.Conditions = append(s.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: now})
	}
	if restartAll {
		s.Conditions = append(s.Conditions, since(restartingCondition(s.Phase, restarting, rp)))
	}
	if pod.Status.NominatedNodeName != "" {
		s.NominatedNodeName = pod.Status.NominatedNodeName
	}
	return s
}

// lastStatus is the pod's status as the kubelet last set it, else as the
// API has it (before a kubelet restart).
func (kl *Kubelet) lastStatus(pod *v1.Pod) v1.PodStatus {
	if s, ok := kl.statuses.Status(pod.UID); ok {
		return s
	}
	return pod.Status
}

// conditionTrue reports whether s has condition t, true.
func conditionTrue(s v1.PodStatus, t v1.PodConditionType) bool {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// kubeletCondition reports whether the kubelet computes condition t.
func kubeletCondition(t v1.PodConditionType) bool {
	switch t {
	case v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.AllContainersRestarting:
		return true
	}
	return false
}

// readinessGates is why the pod's readiness gates keep it from being Ready,
// in upstream's words; an empty reason means they all pass.
func readinessGates(pod *v1.Pod) (reason, msg string) {
	var unready []string
	for _, g := range pod.Spec.ReadinessGates {
		var found *v1.PodCondition
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == g.ConditionType {
				found = &pod.Status.Conditions[i]
			}
		}
		switch {
		case found == nil:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case found.Status != v1.ConditionTrue:
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, found.Status))
		}
	}
	if len(unready) == 0 {
		return "", ""
	}
	return "ReadinessGatesNotReady", strings.Join(unready, ", ")
}

// containerStatus is container c's status from its instances in the
// runtime; last is its previous status in a pod that may restart all its
// containers in place (restarting: now), nil otherwise.
func (kl *Kubelet) containerStatus(pod *v1.Pod, c *v1.Container, rp *runtimePod, st *podState, defaultWaiting string, last *v1.ContainerStatus, restarting bool) v1.ContainerStatus {
	cur, prev := rp.latest(c.Name)
	f := false
	cs := v1.ContainerStatus{Name: c.Name, Image: c.Image, VolumeMounts: volumeMountStatuses(c), Started: &f}
	if cur == nil && restarting && last != nil && last.State.Waiting == nil {
		return removedByRestart(cs, *last)
	}
	// Removed by a restart of the whole pod, with no instance since that
	// ended and was kept: the restart is its last termination, and its
	// count goes on from there.
	if prev == nil && restartedByAll(last) {
		cs.RestartCount = last.RestartCount
		cs.LastTerminationState = last.LastTerminationState
	}
	waiting := st.waiting[c.Name]
	if cur == nil {
		if waiting == nil {
			waiting = &v1.ContainerStateWaiting{Reason: defaultWaiting}
		}
		cs.State.Waiting = waiting
		return cs
	}
	cs.RestartCount = max(cs.RestartCount, int32(cur.Metadata.GetAttempt()))
	// As upstream since in-place resize: a container that exists reports
	// the resources it was given (its spec's, `resources: {}` without any),
	// running or not, and its requests as allocatedResources.
	cs.Resources = c.Resources.DeepCopy()
	cs.AllocatedResources = c.Resources.Requests.DeepCopy()
	cs.ContainerID = containerIDPrefix + cur.Id
	cs.ImageID = cur.ImageRef
	if cur.Image != nil && cur.Image.Image != "" && !strings.HasPrefix(cur.Image.Image, "sha256:") {
		cs.Image = cur.Image.Image
	}
	switch cur.State {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: nanoTime(cur.StartedAt)}
		started := true
		if r, ok := kl.probes.Result(cur.Id, prober.Startup); ok && r != prober.Success {
			started = false
		}
		cs.Started = &started
		cs.Ready = started
		if c.ReadinessProbe != nil {
			r, _ := kl.probes.Result(cur.Id, prober.Readiness)
			cs.Ready = started && r == prober.Success
		}
		if prev != nil && prev.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			cs.LastTerminationState.Terminated = kl.terminated(st, c, prev)
		}
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		if waiting != nil {
			cs.State.Waiting = waiting
			cs.LastTerminationState.Terminated = kl.terminated(st, c, cur)
		} else {
			cs.State.Terminated = kl.terminated(st, c, cur)
			if prev != nil && prev.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				cs.LastTerminationState.Terminated = kl.terminated(st, c, prev)
			}
		}
	default:
		if waiting == nil {
			waiting = &v1.ContainerStateWaiting{Reason: reasonContainerCreating}
		}
		cs.State.Waiting = waiting
		if prev != nil && prev.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			cs.LastTerminationState.Terminated = kl.terminated(st, c, prev)
		}
	}
	return cs
}

// volumeMountStatuses lists the container's mounts as upstream reports
// them; kube-lite makes no recursively read-only mounts.
func volumeMountStatuses(c *v1.Container) []v1.VolumeMountStatus {
	var out []v1.VolumeMountStatus
	for _, m := range c.VolumeMounts {
		vs := v1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			rro := v1.RecursiveReadOnlyDisabled
			vs.RecursiveReadOnly = &rro
		}
		out = append(out, vs)
	}
	return out
}

func (kl *Kubelet) terminated(st *podState, spec *v1.Container, c *runtimeapi.ContainerStatus) *v1.ContainerStateTerminated {
	reason := c.Reason
	if reason == "" {
		reason = "Error"
		if c.ExitCode == 0 {
			reason = "Completed"
		}
	}
	return &v1.ContainerStateTerminated{
		ExitCode: c.ExitCode,
		Reason:   reason,
		Message:  kl.terminationMessage(st, spec, c),
		// As upstream, the runtime's time even when it never started (a
		// StartError's 0 reads 1970-01-01T00:00:00Z), not a null.
		StartedAt:   metav1.NewTime(time.Unix(0, c.StartedAt)).Rfc3339Copy(),
		FinishedAt:  nanoTime(c.FinishedAt),
		ContainerID: containerIDPrefix + c.Id,
	}
}

func nanoTime(ns int64) metav1.Time {
	if ns == 0 {
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(0, ns)).Rfc3339Copy()
}

// podPhase is upstream's getPhase: an init container failed for good (its
// own restart policy and rules, else the pod's, do not run it again) fails
// the pod, waiting containers (sidecars not yet started included) keep it
// Pending, running sidecars keep it Running, and the restart policy decides
// what stopped containers mean, unless the pod is terminal (deleted and its
// containers stopped for good): then none restarts whatever the policy.
func podPhase(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, terminal bool) v1.PodPhase {
	pendingInit, failedInit, failedForGood, pendingSidecars := 0, 0, 0, 0
	running, waiting, stopped, succeeded := 0, 0, 0, 0
	for i, cs := range initStatuses {
		spec := specAt(pod.Spec.InitContainers, i)
		if spec != nil && isSidecar(spec) {
			// A sidecar keeps the pod Running while it runs; one that ended
			// counts for nothing (it is stopped when the app containers end).
			switch {
			case cs.State.Running != nil:
				running++
				if cs.Started == nil || !*cs.Started {
					pendingSidecars++
				}
			case cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil:
				pendingSidecars++
				waiting++
			}
			continue
		}
		var failed *v1.ContainerStateTerminated
		switch {
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failed = cs.State.Terminated
			}
		case cs.State.Waiting != nil && restartedByAll(&cs):
			// Removed by a restart of the whole pod: it runs again, and
			// until then neither holds the pod back nor failed it.
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 0:
			failed = cs.LastTerminationState.Terminated
		default:
			pendingInit++
		}
		if failed == nil {
			continue
		}
		failedInit++
		// The init container's own restartPolicyRules and restartPolicy,
		// else the pod's, say whether it runs again (upstream's
		// ContainerRestartRules): one that does not fails the pod.
		if !runsAgain(pod, spec, failed) {
			failedForGood++
		}
	}
	if failedForGood > 0 {
		return v1.PodFailed
	}
	if pendingInit > 0 || failedInit > 0 || (pendingSidecars > 0 && !anyAppStarted(statuses)) {
		return v1.PodPending
	}
	// notRestartable: stopped containers that stay down (upstream's
	// ContainerShouldRestart: their own rules and policy, else the pod's).
	notRestartable := 0
	for i, cs := range statuses {
		var last *v1.ContainerStateTerminated
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			last = cs.State.Terminated
			if last.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			last = cs.LastTerminationState.Terminated
		default:
			waiting++
		}
		if last != nil {
			stopped++
			if !runsAgain(pod, specAt(pod.Spec.Containers, i), last) {
				notRestartable++
			}
		}
	}
	switch {
	case waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case stopped > 0:
		if !terminal && stopped != notRestartable {
			return v1.PodRunning // some restart
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		return v1.PodFailed
	}
	return v1.PodPending
}

// runsAgain reports whether container spec (nil if no longer in the pod's
// spec), ended as t says, runs again: a restart of the whole pod runs it
// again, else upstream's ContainerShouldRestart decides.
func runsAgain(pod *v1.Pod, spec *v1.Container, t *v1.ContainerStateTerminated) bool {
	return t.Reason == reasonRestartingAllContainers || podrestart.AfterExit(spec, &pod.Spec, t.ExitCode)
}

// specAt is specs[i], nil past its end.
func specAt(specs []v1.Container, i int) *v1.Container {
	if i < len(specs) {
		return &specs[i]
	}
	return nil
}

// anyAppStarted reports, as upstream's HasAnyRegularContainerStarted,
// whether an app container left its waiting state.
func anyAppStarted(statuses []v1.ContainerStatus) bool {
	for _, cs := range statuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return true
		}
	}
	return false
}
