package kubelet

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/kubelet/prober"
)

// isSidecar reports whether c is a sidecar: an init container with
// restartPolicy Always, which runs beside the app containers once started.
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// sidecarIndex is the position of the sidecar called name among the pod's
// init containers, or -1 if it is none.
func sidecarIndex(pod *v1.Pod, name string) int {
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == name && isSidecar(c) {
			return i
		}
	}
	return -1
}

func hasSidecars(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// appStartedIn reports whether an app container ran in sandbox sandboxID:
// the pod initialized there, so its sidecars no longer gate anything.
func appStartedIn(pod *v1.Pod, rp *runtimePod, sandboxID string) bool {
	for _, c := range pod.Spec.Containers {
		if cur, _ := rp.latest(c.Name); cur != nil && rp.sandboxOf[cur.Id] == sandboxID {
			return true
		}
	}
	return false
}

// appsDone reports whether every app container exited for good under the
// pod's restart policy: as upstream, the sidecars then do not keep the pod
// alive.
func appsDone(pod *v1.Pod, rp *runtimePod) bool {
	for _, c := range pod.Spec.Containers {
		cur, _ := rp.latest(c.Name)
		if cur == nil || cur.State != runtimeapi.ContainerState_CONTAINER_EXITED || shouldRestart(pod.Spec.RestartPolicy, cur) {
			return false
		}
	}
	return len(pod.Spec.Containers) > 0
}

// containerStarted reports whether a running container is past its startup
// probe (if it has one): what a sidecar must be before the next init
// container starts.
func (kl *Kubelet) containerStarted(c *v1.Container, cur *runtimeapi.ContainerStatus) bool {
	if cur.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return false
	}
	if c.StartupProbe == nil {
		return true
	}
	r, _ := kl.probes.Result(cur.Id, prober.Startup)
	return r == prober.Success
}

// syncSidecar keeps sidecar c running: started if it never ran or exited
// (whatever the pod's restart policy, with the crash back-off), restarted
// when its liveness or startup probe fails. It reports when to look again,
// whether it changed anything, and whether the sidecar has started.
func (kl *Kubelet) syncSidecar(ctx context.Context, pod *v1.Pod, c *v1.Container, cur *runtimeapi.ContainerStatus, env *startEnv) (time.Duration, bool, bool) {
	switch {
	case cur != nil && cur.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
		if kl.killUnhealthy(ctx, pod, c, cur) {
			return 0, true, false
		}
		return 0, false, kl.containerStarted(c, cur)
	case cur != nil && cur.State == runtimeapi.ContainerState_CONTAINER_CREATED:
		// Created by a sync that died before starting it.
		return 0, kl.runtime.StartContainer(ctx, cur.Id) == nil, false
	}
	after, started := kl.startOrBackOff(ctx, pod, c, cur, env)
	return after, started, false
}

// killUnhealthy stops a running container whose liveness or startup probe
// failed, to be restarted, and reports whether it did.
func (kl *Kubelet) killUnhealthy(ctx context.Context, pod *v1.Pod, c *v1.Container, cur *runtimeapi.ContainerStatus) bool {
	if r, ok := kl.probes.Result(cur.Id, prober.Liveness); ok && r == prober.Failure {
		_ = kl.stopContainer(ctx, pod, cur, probeGracePeriod(pod, c.LivenessProbe), fmt.Sprintf("Container %s failed liveness probe, will be restarted", c.Name))
		return true
	}
	if r, ok := kl.probes.Result(cur.Id, prober.Startup); ok && r == prober.Failure {
		_ = kl.stopContainer(ctx, pod, cur, probeGracePeriod(pod, c.StartupProbe), fmt.Sprintf("Container %s failed startup probe, will be restarted", c.Name))
		return true
	}
	return false
}

// stopInOrder stops the running containers, as upstream orders a pod's
// termination: app (and plain init) containers together first, then the
// sidecars one after another, the last started first, so that each sidecar
// outlives what may use it. All share one grace period: each stop gets what
// is left of it (at least upstream's minimal window, which stopContainer
// applies).
func (kl *Kubelet) stopInOrder(ctx context.Context, pod *v1.Pod, running []*runtimeapi.ContainerStatus, grace int64) error {
	var others []*runtimeapi.ContainerStatus
	sidecars := make([]*runtimeapi.ContainerStatus, len(pod.Spec.InitContainers))
	for _, c := range running {
		if i := sidecarIndex(pod, c.Metadata.GetName()); i >= 0 {
			sidecars[i] = c
			continue
		}
		others = append(others, c)
	}
	begin := kl.clock.Now()
	err := kl.stopParallel(ctx, pod, others, grace)
	for i := len(sidecars) - 1; i >= 0; i-- {
		if sidecars[i] == nil {
			continue
		}
		left := grace - int64(kl.clock.Since(begin).Seconds())
		if e := kl.stopContainer(ctx, pod, sidecars[i], left, ""); e != nil && err == nil {
			err = e
		}
	}
	return err
}
