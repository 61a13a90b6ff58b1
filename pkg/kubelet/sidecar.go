package kubelet

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/api/podrestart"
	"github.com/kube-lite/kube-lite/pkg/kubelet/prober"
)

// isSidecar reports whether c is a sidecar: an init container with
// restartPolicy Always, which runs beside the app containers once started.
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// sidecarIndex is the position of the sidecar called name among the pod's
// init containers, or -1 if it is none (or pod is nil, an orphan).
func sidecarIndex(pod *v1.Pod, name string) int {
	if pod == nil {
		return -1
	}
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
	for i := range pod.Spec.Containers {
		cur, _ := rp.latest(pod.Spec.Containers[i].Name)
		if cur == nil || cur.State != runtimeapi.ContainerState_CONTAINER_EXITED || shouldRestart(pod, &pod.Spec.Containers[i], cur) {
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

// killUnhealthy stops a running container whose liveness or startup probe
// failed, to be restarted, and reports whether it did.
func (kl *Kubelet) killUnhealthy(ctx context.Context, pod *v1.Pod, c *v1.Container, cur *runtimeapi.ContainerStatus) bool {
	// As upstream, the Killing event says it will restart only if the
	// container's restart policy (else the pod's) restarts a failed one.
	restart := podrestart.ByPolicy(c, &pod.Spec, true)
	why := func(probe string) string {
		msg := fmt.Sprintf("Container %s failed %s probe", c.Name, probe)
		if restart {
			msg += ", will be restarted"
		}
		return msg
	}
	if r, ok := kl.probes.Result(cur.Id, prober.Liveness); ok && r == prober.Failure {
		_ = kl.stopContainer(ctx, pod, cur, probeGracePeriod(pod, c.LivenessProbe), why("liveness"))
		return true
	}
	if r, ok := kl.probes.Result(cur.Id, prober.Startup); ok && r == prober.Failure {
		_ = kl.stopContainer(ctx, pod, cur, probeGracePeriod(pod, c.StartupProbe), why("startup"))
		return true
	}
	return false
}

// stopRunning stops the running containers in parallel, each with grace
// seconds, in upstream's termination order: each is told (Killing event,
// preStop hook) at once, but a sidecar gets SIGTERM only once the app (and
// plain init) containers and the sidecars after it have stopped, or its grace
// period ran out waiting, so that it outlives what may use it.
func (kl *Kubelet) stopRunning(ctx context.Context, pod *v1.Pod, running []*runtimeapi.ContainerStatus, grace int64) error {
	done := make(map[string]chan struct{}, len(running))
	for _, c := range running {
		done[c.Metadata.GetName()] = make(chan struct{})
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(running))
	for _, c := range running {
		name := c.Metadata.GetName()
		var turn func(time.Duration) time.Duration
		if i := sidecarIndex(pod, name); i >= 0 {
			var before []chan struct{}
			for _, o := range running {
				if j := sidecarIndex(pod, o.Metadata.GetName()); j < 0 || j > i {
					before = append(before, done[o.Metadata.GetName()])
				}
			}
			turn = func(left time.Duration) time.Duration {
				begin := kl.clock.Now()
				timeout := kl.clock.After(left)
				for _, ch := range before {
					select {
					case <-ch:
					case <-timeout:
						return kl.clock.Since(begin)
					case <-ctx.Done():
						return kl.clock.Since(begin)
					}
				}
				return kl.clock.Since(begin)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[name])
			if err := kl.stopContainerInTurn(ctx, pod, c, grace, "", turn); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
