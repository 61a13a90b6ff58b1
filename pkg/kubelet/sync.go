package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/distribution/reference"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kube-lite/kube-lite/pkg/api/podrestart"
	"github.com/kube-lite/kube-lite/pkg/kubelet/events"
	"github.com/kube-lite/kube-lite/pkg/kubelet/prober"
	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

// Waiting reasons, as upstream reports them.
const (
	reasonContainerCreating   = "ContainerCreating"
	reasonPodInitializing     = "PodInitializing"
	reasonCrashLoopBackOff    = "CrashLoopBackOff"
	reasonErrImagePull        = "ErrImagePull"
	reasonImagePullBackOff    = "ImagePullBackOff"
	reasonErrImageNeverPull   = "ErrImageNeverPull"
	reasonInvalidImageName    = "InvalidImageName"
	reasonCreateConfigError   = "CreateContainerConfigError"
	reasonCreateContainerErr  = "CreateContainerError"
	reasonRunContainerError   = "RunContainerError"
	reasonPostStartHookError  = "PostStartHookError"
	defaultGracePeriodSeconds = 30
	// minStopGracePeriodSeconds is upstream's minimal shutdown window.
	minStopGracePeriodSeconds = 2
)

// syncPod makes the runtime match one pod; it is the pod worker's body.
func (kl *Kubelet) syncPod(ctx context.Context, key string) (time.Duration, bool) {
	start := kl.clock.Now()
	defer func() { kl.metrics.SyncDuration.Observe(kl.clock.Since(start).Seconds()) }()
	uid := types.UID(key)
	st, pod := kl.state(uid)
	rp, err := kl.runtimePod(ctx, uid)
	if err != nil {
		slog.Warn("read pod from runtime", "uid", uid, "err", err)
		return time.Second, false
	}
	if pod == nil {
		// Gone from the API (or never known: an orphan from before a
		// restart). As upstream, a pod the kubelet knew is killed as its
		// spec says even when force-deleted: preStop hooks, then the grace
		// period it last had; an orphan has no spec, so no hook to run.
		var last *v1.Pod
		if st != nil {
			kl.mu.Lock()
			last = st.removed
			kl.mu.Unlock()
		}
		grace := int64(1)
		if last != nil {
			grace = podWorkerGracePeriod(gracePeriod(last))
			kl.probes.RemovePod(uid)
		}
		if err := kl.killPod(ctx, last, rp, grace); err != nil {
			slog.Warn("clean up removed pod", "uid", uid, "err", err)
			return time.Second, false
		}
		if err := kl.cleanupPodFiles(uid, rp); err != nil {
			slog.Warn("clean up removed pod's files", "uid", uid, "err", err)
			return time.Second, false
		}
		kl.forget(uid)
		return 0, true
	}
	if pod.DeletionTimestamp != nil {
		return kl.terminatePod(ctx, st, pod, rp)
	}
	if !st.finished && isTerminal(pod.Status.Phase) {
		// Terminal in the API (e.g. before a kubelet restart): never run again.
		kl.mu.Lock()
		st.finished = true
		kl.mu.Unlock()
	}
	if st.finished {
		// Terminal: keep the containers for their logs but free the sandbox.
		// Containers still running (the kubelet restarted while it stopped
		// them) are stopped as any kill is, with preStop and grace period,
		// not by the sandbox's stop, which kills them at once.
		if len(rp.running()) > 0 {
			kl.probes.RemovePod(pod.UID)
			if err := kl.stopContainers(ctx, pod, rp, gracePeriod(pod)); err != nil {
				if ctx.Err() != nil {
					return 0, false
				}
				slog.Warn("stop containers of finished pod", "pod", podKey(pod), "err", err)
				return time.Second, false
			}
		}
		if sb := rp.readySandbox(); sb != nil {
			_ = kl.stopSandboxes(ctx, rp)
		}
		return 0, false
	}
	if st.rejected == nil && !st.admitted {
		if reason, msg := kl.admit(pod, rp); reason != "" {
			kl.recorder.Event(pod, v1.EventTypeWarning, reason, msg)
			s := pod.Status.DeepCopy()
			s.Phase = v1.PodFailed
			s.Reason = reason
			s.Message = msg
			st.rejected = s
		} else {
			kl.mu.Lock()
			st.admitted = true
			kl.mu.Unlock()
		}
	}
	if st.rejected != nil {
		kl.mu.Lock()
		st.finished = true
		kl.mu.Unlock()
		kl.statuses.SetPodStatus(pod, *st.rejected)
		return 0, false
	}
	retry := kl.syncRunning(ctx, st, pod, rp)
	return retry, false
}

// syncRunning drives an admitted, not deleted pod towards its spec and
// publishes its status; it returns when to look again.
func (kl *Kubelet) syncRunning(ctx context.Context, st *podState, pod *v1.Pod, rp *runtimePod) time.Duration {
	waiting := map[string]*v1.ContainerStateWaiting{}
	publish := func(rp *runtimePod) v1.PodStatus {
		st.waiting = waiting
		s := kl.computeStatus(pod, rp, st)
		kl.statuses.SetPodStatus(pod, s)
		if s.Phase == v1.PodRunning && !st.startReported {
			st.startReported = true
			kl.metrics.PodStartDuration.Observe(kl.clock.Since(st.firstSeen).Seconds())
		}
		return s
	}
	retry := kl.cfg.SyncPeriod
	if st.failure != nil {
		kl.failPod(ctx, st, pod, rp, publish)
		return 0
	}
	if left, ok := kl.activeDeadlineLeft(pod, st); ok {
		if left <= 0 {
			st.failure = &podFailure{reason: reasonDeadlineExceeded, message: messageDeadlineExceeded, eventType: v1.EventTypeNormal}
			kl.failPod(ctx, st, pod, rp, publish)
			return 0
		}
		retry = minDuration(retry, left)
	}

	mounts, err := kl.volumes.SetUp(ctx, pod)
	if ctx.Err() != nil {
		return 0 // interrupted: the pod is being deleted
	}
	if err != nil {
		kl.recorder.Eventf(pod, v1.EventTypeWarning, "FailedMount", "%v", err)
		publish(rp)
		return 2 * time.Second
	}
	if f := kl.emptyDirOverLimit(pod, st, mounts); f != nil {
		st.failure = f
		kl.failPod(ctx, st, pod, rp, publish)
		return 0
	}

	sandbox := rp.readySandbox()
	if sandbox == nil {
		canStart := kl.canStartSandbox(pod, rp)
		key := string(pod.UID) + "/sandbox"
		var inBackOff bool
		var left time.Duration
		if canStart {
			if !pod.Spec.HostNetwork {
				if ok, msg := kl.networkReady(); !ok {
					slog.Debug("pod waits for the network", "pod", podKey(pod), "reason", msg)
					publish(rp)
					return time.Second
				}
			}
			inBackOff, left = kl.crashBackoff.InBackOffSinceUpdate(key)
			if len(rp.Sandboxes) > 0 && !inBackOff {
				// Said before the kills it causes, as upstream.
				kl.recorder.Eventf(pod, v1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
			}
		}
		// Containers of a dead sandbox lost their network: as upstream they
		// are stopped, to start over in a new sandbox, or, for a pod not to
		// run again, so that it ends as they exit. No new sandbox while the
		// old one's containers run.
		if err := kl.stopDeadSandbox(ctx, st, pod, rp); err != nil {
			if ctx.Err() != nil {
				return 0 // interrupted: the pod is being deleted
			}
			slog.Warn("stop a dead sandbox", "pod", podKey(pod), "err", err)
			publish(rp)
			return time.Second
		}
		if !canStart {
			if fresh, err := kl.runtimePod(ctx, pod.UID); err == nil {
				rp = fresh
			}
			s := publish(rp)
			kl.finishIfTerminal(ctx, st, pod, s, rp)
			return 0
		}
		// As upstream, the new sandbox starts the pod over from its first
		// init container (what they set up may be gone with the old one):
		// those that ran in the old sandbox are removed.
		if kl.purgeInitContainers(ctx, st, pod, rp) {
			if fresh, err := kl.runtimePod(ctx, pod.UID); err == nil {
				rp = fresh
			}
		}
		if inBackOff {
			// Woken early (e.g. by PLEG seeing the failed sandbox): keep the back-off.
			publish(rp)
			return left
		}
		// The next attempt follows the newest sandbox's, not their count:
		// dead sandboxes are removed, and a reused attempt's name is still
		// reserved by the runtime.
		attempt := uint32(0)
		if len(rp.Sandboxes) > 0 {
			attempt = rp.Sandboxes[0].Metadata.GetAttempt() + 1
		}
		if err := kl.createSandbox(ctx, pod, attempt); err != nil {
			if ctx.Err() != nil {
				return 0
			}
			kl.recorder.Eventf(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %s", runtimeError(err))
			kl.crashBackoff.Next(key, kl.clock.Now())
			publish(rp)
			return kl.crashBackoff.Delay(key)
		}
		kl.crashBackoff.Forget(key)
		if rp, err = kl.runtimePod(ctx, pod.UID); err != nil {
			return time.Second
		}
		if sandbox = rp.readySandbox(); sandbox == nil {
			return time.Second
		}
	}
	if podrestart.MayRestartAll(&pod.Spec) && len(rp.Containers) > 0 && allRestarting(pod, rp, kl.lastStatus(pod)) {
		// Said before the kills (AllContainersRestarting), as upstream,
		// and sent at once, or it may never be seen when nothing runs to
		// be killed; the next status shows the containers removed, to
		// start again from the first init container in the same sandbox.
		publish(rp)
		if err := kl.statuses.Send(ctx, pod.UID); err != nil {
			slog.Info("send status of a pod restarting all its containers", "pod", podKey(pod), "err", err)
		}
		if err := kl.resetContainers(ctx, st, pod, rp); err != nil {
			if ctx.Err() != nil {
				return 0
			}
			slog.Warn("restart all containers", "pod", podKey(pod), "err", err)
			return time.Second
		}
		if rp, err = kl.runtimePod(ctx, pod.UID); err != nil {
			return time.Second
		}
		publish(rp)
	}
	// The sandbox's config is only needed to start or pull, which a steady
	// pod does not: built then, once per sync, it spares re-reading
	// resolv.conf (for a dnsConfig) and the hostname on every sync.
	sandboxAttempt := sandbox.Metadata.GetAttempt()
	sandboxCfg := sync.OnceValue(func() *runtimeapi.PodSandboxConfig { return kl.sandboxConfig(pod, sandboxAttempt) })
	podIP := rp.podIP()
	if pod.Spec.HostNetwork {
		podIP = kl.cfg.NodeIP
	}
	if st.pullErrs == nil {
		st.pullErrs = map[string]string{}
	}
	env := &startEnv{sandboxID: sandbox.Id, sandboxCfg: sandboxCfg, podIP: podIP, mounts: mounts, waiting: waiting,
		pullErrs: st.pullErrs, publish: func() { publish(rp) }}

	changed := false
	// Init containers, one at a time, each to success before the next; a
	// sidecar (restartPolicy Always) only has to start, and runs on beside
	// the app containers, restarted whenever it exits, until they are done
	// for good: then, as upstream, it no longer keeps the pod alive.
	initDone := true
	initialized := appStartedIn(pod, rp, sandbox.Id)
	if hasSidecars(pod) && appsDone(pod, rp) {
		if len(rp.running()) > 0 {
			if err := kl.stopRunning(ctx, pod, rp.running(), gracePeriod(pod)); err != nil && ctx.Err() == nil {
				slog.Warn("stop the sidecars of a pod whose containers ended", "pod", podKey(pod), "err", err)
			}
			changed = true
		}
	} else {
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			cur, _ := rp.latest(c.Name)
			if isSidecar(c) {
				// A sidecar restarts whenever it exits, whatever the pod's
				// restart policy.
				after, acted := kl.syncContainer(ctx, pod, c, cur, env, true)
				changed = changed || acted
				retry = minDuration(retry, after)
				if (!acted && cur != nil && kl.containerStarted(c, cur)) || initialized {
					continue
				}
				initDone = false
				break
			}
			if cur != nil && cur.State == runtimeapi.ContainerState_CONTAINER_EXITED && cur.ExitCode == 0 {
				continue
			}
			initDone = false
			if cur != nil && (cur.State == runtimeapi.ContainerState_CONTAINER_RUNNING || cur.State == runtimeapi.ContainerState_CONTAINER_CREATED) {
				break
			}
			if cur != nil && !initRestarts(pod, c, cur) {
				break // failed for good: the pod is Failed
			}
			after, started := kl.startOrBackOff(ctx, pod, c, cur, env)
			changed = changed || started
			retry = minDuration(retry, after)
			break
		}
	}
	if initDone {
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			cur, _ := rp.latest(c.Name)
			after, acted := kl.syncContainer(ctx, pod, c, cur, env, cur == nil || shouldRestart(pod, c, cur))
			changed = changed || acted
			retry = minDuration(retry, after)
		}
	}
	if changed {
		if fresh, err := kl.runtimePod(ctx, pod.UID); err == nil {
			rp = fresh
		}
	}
	if ctx.Err() != nil {
		// Interrupted: what this sync saw is stale, the next one says what happens.
		return 0
	}
	kl.pruneDeadContainers(ctx, st, pod, rp)

	var running []prober.Running
	for _, c := range rp.running() {
		running = append(running, prober.Running{Name: c.Metadata.GetName(), ID: c.Id, StartedAt: time.Unix(0, c.StartedAt)})
	}
	// Probe workers outlive this sync (which an interrupt may cancel): they
	// run until the kubelet stops or the pod's containers go.
	kl.probes.Sync(kl.lifetime(), pod, podIP, running)
	s := publish(rp)
	kl.finishIfTerminal(ctx, st, pod, s, rp)
	return retry
}

// stopDeadSandbox kills what runs in a pod whose sandbox died, as upstream
// kills a pod whose sandbox changed: each container like any other kill
// (preStop hook, the pod's grace period), then the sandboxes. A sandbox whose
// process died still holds its IP until it is stopped (the runtime's CNI
// teardown runs then): without this each lost sandbox would leak an address
// of the node's range. Each sandbox is stopped once: a stopped one looks like
// one that died (both not ready), so the kubelet remembers what it stopped,
// rather than have the runtime tear its network down again on every sync
// until a new sandbox runs and again at each later sandbox death.
func (kl *Kubelet) stopDeadSandbox(ctx context.Context, st *podState, pod *v1.Pod, rp *runtimePod) error {
	if err := kl.stopContainers(ctx, pod, rp, gracePeriod(pod)); err != nil {
		return err
	}
	for _, s := range rp.Sandboxes {
		if st.stoppedSandboxes[s.Id] {
			continue
		}
		err := kl.runtime.StopPodSandbox(ctx, s.Id)
		kl.metrics.op("stop_podsandbox", err)
		if err != nil {
			slog.Info("stopping a dead sandbox failed", "pod", podKey(pod), "sandbox", s.Id, "err", err)
			continue
		}
		if st.stoppedSandboxes == nil {
			st.stoppedSandboxes = map[string]bool{}
		}
		st.stoppedSandboxes[s.Id] = true
	}
	return nil
}

// Upstream's words for a pod past spec.activeDeadlineSeconds.
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// activeDeadlineLeft is how long the pod may still run under
// spec.activeDeadlineSeconds, counted from its start time; ok is false
// without a deadline.
func (kl *Kubelet) activeDeadlineLeft(pod *v1.Pod, st *podState) (time.Duration, bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return 0, false
	}
	start := st.firstSeen
	if s, ok := kl.statuses.Status(pod.UID); ok && s.StartTime != nil {
		start = s.StartTime.Time
	} else if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	deadline := start.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
	return deadline.Sub(kl.clock.Now()), true
}

// podFailure is why the kubelet failed a pod, in upstream's words.
type podFailure struct {
	reason, message string
	eventType       string
	reported        bool
	// disruption: an eviction, which upstream also marks with a
	// DisruptionTarget condition.
	disruption bool
}

// failPod carries out st.failure as upstream does: the status says Failed
// with the reason at once, then the containers are stopped (kept for their
// logs) and the sandbox released.
func (kl *Kubelet) failPod(ctx context.Context, st *podState, pod *v1.Pod, rp *runtimePod, publish func(*runtimePod) v1.PodStatus) {
	f := st.failure
	if !f.reported {
		f.reported = true
		kl.recorder.Event(pod, f.eventType, f.reason, f.message)
	}
	publish(rp)
	kl.probes.RemovePod(pod.UID)
	grace := gracePeriod(pod)
	if f.disruption {
		// Evictions for local storage do not wait for the grace period, yet
		// as upstream's pod worker give the preStop hooks a second.
		grace = podWorkerGracePeriod(0)
	}
	if err := kl.stopContainers(ctx, pod, rp, grace); err != nil {
		slog.Warn("stop containers of failed pod", "pod", podKey(pod), "reason", f.reason, "err", err)
	}
	if fresh, err := kl.runtimePod(ctx, pod.UID); err == nil {
		rp = fresh
	}
	kl.finishIfTerminal(ctx, st, pod, publish(rp), rp)
}

// storageCheckPeriod is how often emptyDir usage is measured, upstream's
// eviction monitoring period.
const storageCheckPeriod = 10 * time.Second

// emptyDirOverLimit measures the pod's disk-backed emptyDir volumes that
// have a sizeLimit, at most every storageCheckPeriod, and returns the
// eviction of a pod that uses more than a limit.
func (kl *Kubelet) emptyDirOverLimit(pod *v1.Pod, st *podState, mounts volume.Mounted) *podFailure {
	now := kl.clock.Now()
	if !st.storageChecked.IsZero() && now.Sub(st.storageChecked) < storageCheckPeriod {
		return nil
	}
	checked := false
	for _, v := range pod.Spec.Volumes {
		ed := v.EmptyDir
		// Memory-backed ones are tmpfs mounts of that size: they cannot grow past it.
		if ed == nil || ed.SizeLimit == nil || ed.Medium == v1.StorageMediumMemory || mounts[v.Name] == "" {
			continue
		}
		checked = true
		used, err := diskUsage(mounts[v.Name])
		if err != nil {
			slog.Warn("measure emptyDir usage", "pod", podKey(pod), "volume", v.Name, "err", err)
			continue
		}
		if used > ed.SizeLimit.Value() {
			return &podFailure{reason: "Evicted", eventType: v1.EventTypeWarning, disruption: true,
				message: fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", v.Name, ed.SizeLimit.String())}
		}
	}
	if checked {
		st.storageChecked = now
	}
	return nil
}

// diskUsage is the space the files under dir take on disk, like du.
func diskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walk
			}
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += fi.Size()
		}
		return nil
	})
	return total, err
}

// canStartSandbox is false for a pod that ran and must not run again: its
// sandbox is gone, and, as upstream decides, restartPolicy Never says stay
// down once any container was created, OnFailure once all succeeded. A
// container still running in the dead sandbox has not succeeded: under
// OnFailure it starts over in the new one.
func (kl *Kubelet) canStartSandbox(pod *v1.Pod, rp *runtimePod) bool {
	switch {
	case len(rp.Sandboxes) == 0 || pod.Spec.RestartPolicy == v1.RestartPolicyAlways:
		return true
	case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
		return len(rp.Containers) == 0
	}
	for _, c := range pod.Spec.Containers {
		cur, _ := rp.latest(c.Name)
		if cur == nil || cur.State != runtimeapi.ContainerState_CONTAINER_EXITED || cur.ExitCode != 0 {
			return true
		}
	}
	return false
}

// syncContainer keeps container c, whose latest instance is cur, as it
// should be: killed when running and its liveness or startup probe failed,
// started when created by a sync that died before starting it, and started
// (with the crash back-off) when it never ran or stopped if restart says
// so. It reports when to look again and whether it changed anything.
func (kl *Kubelet) syncContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, cur *runtimeapi.ContainerStatus, env *startEnv, restart bool) (time.Duration, bool) {
	switch {
	case cur != nil && cur.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
		return 0, kl.killUnhealthy(ctx, pod, c, cur)
	case cur != nil && cur.State == runtimeapi.ContainerState_CONTAINER_CREATED:
		return 0, kl.runtime.StartContainer(ctx, cur.Id) == nil
	case !restart:
		return 0, false
	}
	return kl.startOrBackOff(ctx, pod, c, cur, env)
}

func (kl *Kubelet) finishIfTerminal(ctx context.Context, st *podState, pod *v1.Pod, last v1.PodStatus, rp *runtimePod) {
	if !isTerminal(last.Phase) {
		return
	}
	kl.mu.Lock()
	st.finished = true
	kl.mu.Unlock()
	kl.probes.RemovePod(pod.UID)
	final := *last.DeepCopy()
	if len(rp.running()) > 0 {
		// Sidecars still run when an init container failed under
		// restartPolicy Never: stopped as any kill is (preStop, grace
		// period), not by the sandbox's stop, which kills them at once;
		// the status then shows them terminated.
		if err := kl.stopContainers(ctx, pod, rp, gracePeriod(pod)); err != nil {
			slog.Warn("stop containers of finished pod", "pod", podKey(pod), "err", err)
		}
		if fresh, err := kl.runtimePod(ctx, pod.UID); err == nil {
			rp = fresh
			final = kl.computeStatus(pod, rp, st)
			final.Phase, final.Reason, final.Message = last.Phase, last.Reason, last.Message
		}
	}
	// As upstream's status manager marks a pod that ended: a container that
	// never ran (the pod failed its deadline while it waited for its image)
	// is terminated with ContainerStatusUnknown, not left waiting.
	if hasPodInitialized(pod) {
		markUnknown(final.ContainerStatuses)
	}
	markUnknown(startedInitContainers(final.InitContainerStatuses))
	kl.statuses.SetPodStatus(pod, final)
	if err := kl.stopSandboxes(ctx, rp); err != nil {
		slog.Warn("stop sandbox of finished pod", "pod", podKey(pod), "err", err)
	}
}

// shouldRestart reports whether app container spec, exited as c says, is
// started again.
func shouldRestart(pod *v1.Pod, spec *v1.Container, c *runtimeapi.ContainerStatus) bool {
	if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		return false
	}
	return podrestart.AfterExit(spec, &pod.Spec, c.ExitCode)
}

// initRestarts reports whether init container spec, failed as c says, runs
// again: as upstream, its own restartPolicyRules and restartPolicy decide
// over the pod's (a Never pod may retry an OnFailure init container, an
// Always pod fails with a Never one). One in no known state has no exit
// code for the rules to weigh: only the policies do.
func initRestarts(pod *v1.Pod, spec *v1.Container, c *runtimeapi.ContainerStatus) bool {
	if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		return podrestart.AfterExit(spec, &pod.Spec, c.ExitCode)
	}
	return podrestart.ByPolicy(spec, &pod.Spec, true)
}

// startEnv is what starting any of a pod's containers needs in one sync.
type startEnv struct {
	sandboxID string
	// sandboxCfg builds the sandbox's config on first use.
	sandboxCfg func() *runtimeapi.PodSandboxConfig
	podIP      string
	mounts     volume.Mounted
	// waiting collects why containers wait, for the status.
	waiting map[string]*v1.ContainerStateWaiting
	// pullErrs keeps the last failed pull of each image, which the
	// back-off's message repeats (the pod's, kept across syncs).
	pullErrs map[string]string
	// publish sends the pod's status as it is now.
	publish func()
}

// startOrBackOff starts container c unless its restart is backed off,
// recording why it waits. It reports when to sync again and whether it started one.
func (kl *Kubelet) startOrBackOff(ctx context.Context, pod *v1.Pod, c *v1.Container, prev *runtimeapi.ContainerStatus, env *startEnv) (time.Duration, bool) {
	waiting := env.waiting
	key := string(pod.UID) + "/" + c.Name
	var attempt uint32
	if prev == nil {
		attempt = nextAttemptFromLogs(filepath.Join(kl.podLogDir(pod.Namespace, pod.Name, pod.UID), c.Name))
	} else {
		attempt = prev.Metadata.GetAttempt() + 1
		finished := time.Unix(0, prev.FinishedAt)
		if in, left := kl.crashBackoff.InBackOffSince(key, finished); in {
			msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", kl.crashBackoff.Delay(key), c.Name, podDesc(pod))
			waiting[c.Name] = &v1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff, Message: msg}
			kl.recorder.Eventf(events.ContainerRef(pod, c.Name), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, podDesc(pod))
			return left, false
		}
		kl.crashBackoff.Next(key, kl.clock.Now())
	}
	reason, msg, after := kl.ensureImage(ctx, pod, c, env)
	if reason != "" {
		waiting[c.Name] = &v1.ContainerStateWaiting{Reason: reason, Message: msg}
		return after, false
	}
	if err := kl.startContainer(ctx, pod, c, attempt, env.sandboxID, env.sandboxCfg(), env.podIP, env.mounts); err != nil {
		if ctx.Err() != nil {
			return 0, false // interrupted: nothing failed
		}
		var ce *containerError
		if errors.As(err, &ce) {
			waiting[c.Name] = &v1.ContainerStateWaiting{Reason: ce.reason, Message: runtimeDesc(ce.err)}
		}
		if ce == nil || ce.reason != reasonPostStartHookError {
			kl.recorder.Eventf(events.ContainerRef(pod, c.Name), v1.EventTypeWarning, "Failed", "Error: %s", runtimeDesc(err))
		}
		kl.crashBackoff.Next(key+"/start", kl.clock.Now())
		return kl.crashBackoff.Delay(key + "/start"), false
	}
	kl.crashBackoff.Forget(key + "/start")
	return kl.cfg.SyncPeriod, true
}

// nextAttemptFromLogs numbers a container the runtime has no record of: one
// past the newest log an earlier instance left in dir (0 if none). A runtime
// that lost its state (the node restarted, `make down`) would otherwise start
// again at 0, appending to the old log and resetting the restart count;
// upstream's kubelet reads the log directory the same way.
func nextAttemptFromLogs(dir string) uint32 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	next := uint32(0)
	for _, e := range entries {
		n, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		if a, err := strconv.ParseUint(n, 10, 32); err == nil && uint32(a) >= next {
			next = uint32(a) + 1
		}
	}
	return next
}

type containerError struct {
	reason string
	err    error
}

func (e *containerError) Error() string { return e.err.Error() }
func (e *containerError) Unwrap() error { return e.err }

// runtimeStatus is the runtime's own answer inside err: users read the
// runtime's words in events and statuses, as upstream shows them, without
// the kubelet's wrapping ("CRI PullImage ...:") that its logs keep.
func runtimeStatus(err error) (*status.Status, bool) {
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) && gs.GRPCStatus() != nil {
		return gs.GRPCStatus(), true
	}
	return nil, false
}

// runtimeError is err as the runtime gave it ("rpc error: code = ... desc = ..."),
// what upstream shows for failed pulls and sandboxes.
func runtimeError(err error) string {
	if s, ok := runtimeStatus(err); ok {
		return s.Err().Error()
	}
	return err.Error()
}

// runtimeDesc is the runtime's message alone, what upstream shows for
// containers that fail to be created or started.
func runtimeDesc(err error) string {
	if s, ok := runtimeStatus(err); ok {
		return s.Message()
	}
	return err.Error()
}

// ensureImage makes c's image present as its pull policy asks.
func (kl *Kubelet) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, env *startEnv) (reason, msg string, retry time.Duration) {
	ref := events.ContainerRef(pod, c.Name)
	// A name no registry could serve is refused before asking the runtime,
	// in upstream's words, and never retried with a back-off.
	named, err := reference.ParseNormalizedNamed(c.Image)
	if err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: %v", c.Image, c.Image, err)
		kl.recorder.Event(ref, v1.EventTypeWarning, "InspectFailed", msg)
		kl.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %s", reasonInvalidImageName)
		return reasonInvalidImageName, msg, kl.cfg.SyncPeriod
	}
	// As upstream, what is looked up and pulled, and what the pull's events
	// name, is the image with the default tag ("busybox:latest").
	image := c.Image
	tagged, isTagged := named.(reference.Tagged)
	_, digested := named.(reference.Digested)
	if !isTagged && !digested {
		image += ":latest"
	}
	policy := c.ImagePullPolicy
	if policy == "" {
		// As the API server defaults it: a moving tag (latest, or none) is
		// pulled every time, a digest or another tag only if missing.
		policy = v1.PullIfNotPresent
		if !digested && (!isTagged || tagged.Tag() == "latest") {
			policy = v1.PullAlways
		}
	}
	opBegin := kl.clock.Now()
	img, err := kl.runtime.ImageStatus(ctx, image)
	kl.metrics.timedOp("image_status", kl.clock.Since(opBegin), err)
	present := err == nil && img != nil
	if present && policy != v1.PullAlways {
		kl.recorder.Eventf(ref, v1.EventTypeNormal, "Pulled", "Container image %q already present on machine and can be accessed by the pod", c.Image)
		return "", "", 0
	}
	if policy == v1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		kl.recorder.Event(ref, v1.EventTypeWarning, reasonErrImageNeverPull, msg)
		kl.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %s", reasonErrImageNeverPull)
		return reasonErrImageNeverPull, msg, kl.cfg.SyncPeriod
	}
	key := string(pod.UID) + "/" + image
	if in, left := kl.pullBackoff.InBackOffSinceUpdate(key); in {
		msg := fmt.Sprintf("Back-off pulling image %q", image)
		kl.recorder.Event(ref, v1.EventTypeNormal, "BackOff", msg)
		kl.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %s", reasonImagePullBackOff)
		// The status also says why the last pull failed, as upstream's does.
		if last, ok := env.pullErrs[image]; ok {
			msg += ": " + last
		}
		return reasonImagePullBackOff, msg, left
	}
	kl.recorder.Eventf(ref, v1.EventTypeNormal, "Pulling", "Pulling image %q", image)
	// A pull may take minutes: until it ends the pod shows what it waits for
	// (ContainerCreating, its IP, conditions), as upstream's does.
	env.publish()
	begin := kl.clock.Now()
	_, err = kl.runtime.PullImage(ctx, image, env.sandboxCfg())
	kl.metrics.timedOp("pull_image", kl.clock.Since(begin), err)
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted (the pod is being deleted): the pull did not fail.
			return reasonContainerCreating, "", 0
		}
		kl.pullBackoff.Next(key, kl.clock.Now())
		msg := runtimeError(err)
		env.pullErrs[image] = reasonErrImagePull + ": " + msg
		kl.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Failed to pull image %q: %s", image, msg)
		kl.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %s", reasonErrImagePull)
		return reasonErrImagePull, msg, kl.pullBackoff.Delay(key)
	}
	kl.pullBackoff.Forget(key)
	delete(env.pullErrs, image)
	took := kl.clock.Since(begin).Truncate(time.Millisecond)
	var size uint64
	if img, err := kl.runtime.ImageStatus(ctx, image); err == nil && img != nil {
		size = img.GetSize()
	}
	kl.recorder.Eventf(ref, v1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", image, took, took, size)
	return "", "", 0
}

func (kl *Kubelet) createSandbox(ctx context.Context, pod *v1.Pod, attempt uint32) error {
	cfg, dnsWarnings, err := kl.checkedSandboxConfig(pod, attempt)
	if err != nil {
		return err
	}
	for _, w := range dnsWarnings {
		kl.recordDNSWarning(pod, w)
	}
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return fmt.Errorf("create log directory: %w", err)
	}
	opBegin := kl.clock.Now()
	_, err = kl.runtime.RunPodSandbox(ctx, cfg)
	kl.metrics.timedOp("run_podsandbox", kl.clock.Since(opBegin), err)
	return err
}

func (kl *Kubelet) startContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, attempt uint32, sandboxID string,
	sandboxCfg *runtimeapi.PodSandboxConfig, podIP string, mounts volume.Mounted) error {
	cfg, err := kl.containerConfig(ctx, pod, c, attempt, podIP, mounts)
	if err != nil {
		return &containerError{reasonCreateConfigError, err}
	}
	if err := os.MkdirAll(filepath.Join(sandboxCfg.LogDirectory, c.Name), 0o755); err != nil {
		return &containerError{reasonCreateContainerErr, err}
	}
	opBegin := kl.clock.Now()
	id, err := kl.runtime.CreateContainer(ctx, sandboxID, cfg, sandboxCfg)
	kl.metrics.timedOp("create_container", kl.clock.Since(opBegin), err)
	if err != nil {
		return &containerError{reasonCreateContainerErr, err}
	}
	ref := events.ContainerRef(pod, c.Name)
	kl.recorder.Event(ref, v1.EventTypeNormal, "Created", "Container created")
	opBegin = kl.clock.Now()
	err = kl.runtime.StartContainer(ctx, id)
	kl.metrics.timedOp("start_container", kl.clock.Since(opBegin), err)
	if err != nil {
		return &containerError{reasonRunContainerError, err}
	}
	kl.recorder.Event(ref, v1.EventTypeNormal, "Started", "Container started")
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		if msg, err := kl.runHook(ctx, pod, c, id, podIP, c.Lifecycle.PostStart, 30*time.Second); err != nil {
			// Like upstream, the event leaves out the hook's output (it may
			// hold secrets); the container's waiting message has it.
			kl.recorder.Event(ref, v1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
			// Killed like any container, its preStop hook first, as upstream.
			_ = kl.stopContainer(ctx, pod, &runtimeapi.ContainerStatus{Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: c.Name}},
				gracePeriod(pod), "FailedPostStartHook")
			return &containerError{reasonPostStartHookError, errors.New(msg)}
		}
	}
	return nil
}

// runHook runs a lifecycle handler against a container; on failure it
// returns upstream's description of what failed.
func (kl *Kubelet) runHook(ctx context.Context, pod *v1.Pod, c *v1.Container, id, podIP string, h *v1.LifecycleHandler, timeout time.Duration) (string, error) {
	probe := &v1.Probe{}
	kind, what := "", ""
	switch {
	case h.Exec != nil:
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		stdout, stderr, code, err := kl.runtime.ExecSync(hctx, id, h.Exec.Command, timeout)
		if err == nil && code != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), code, stderr)
		}
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, podDesc(pod), err, string(stdout)+string(stderr)), err
		}
		return "", nil
	case h.HTTPGet != nil:
		probe.HTTPGet = h.HTTPGet
		kind, what = "HTTP", h.HTTPGet.Path
	case h.TCPSocket != nil:
		probe.TCPSocket = h.TCPSocket
		kind, what = "TCP", h.TCPSocket.Port.String()
	case h.Sleep != nil:
		select {
		case <-ctx.Done():
		case <-kl.clock.After(time.Duration(h.Sleep.Seconds) * time.Second):
		}
		return "", nil
	default:
		return "", nil
	}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, out := prober.NewNetRunner(kl.runtime).Run(hctx, prober.Target{Pod: pod, Container: c, ContainerID: id, PodIP: podIP}, probe)
	if r != prober.Success {
		err := errors.New(out)
		return fmt.Sprintf("%s lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", kind, what, c.Name, podDesc(pod), err), err
	}
	return "", nil
}

// podDesc names a pod the way upstream's messages do: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// stopContainer runs preStop and stops the container with grace seconds.
func (kl *Kubelet) stopContainer(ctx context.Context, pod *v1.Pod, c *runtimeapi.ContainerStatus, grace int64, why string) error {
	return kl.stopContainerInTurn(ctx, pod, c, grace, why, nil)
}

// stopContainerInTurn is stopContainer for a container whose stop waits,
// after its preStop hook, for what must stop before it: turn waits at most
// the grace period left and returns how long it waited.
func (kl *Kubelet) stopContainerInTurn(ctx context.Context, pod *v1.Pod, c *runtimeapi.ContainerStatus, grace int64, why string,
	turn func(left time.Duration) time.Duration) error {
	name := c.Metadata.GetName()
	if pod != nil {
		if why == "" {
			why = "Stopping container " + name
		}
		kl.recorder.Eventf(events.ContainerRef(pod, name), v1.EventTypeNormal, "Killing", "%s", why)
		if spec := findContainer(pod, name); spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil && grace > 0 {
			begin := kl.clock.Now()
			if msg, err := kl.runHook(ctx, pod, spec, c.Id, pod.Status.PodIP, spec.Lifecycle.PreStop, time.Duration(grace)*time.Second); err != nil {
				slog.Info("preStop hook failed", "pod", podKey(pod), "container", name, "err", msg)
				kl.recorder.Event(events.ContainerRef(pod, name), v1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
			}
			grace -= int64(kl.clock.Since(begin).Seconds())
		}
	}
	if turn != nil && grace > 0 {
		grace -= int64(turn(time.Duration(grace) * time.Second).Seconds())
	}
	// As upstream, SIGTERM always comes some time before SIGKILL, whatever
	// the grace period left, so that no container is killed unwarned.
	grace = max(grace, minStopGracePeriodSeconds)
	err := kl.runtime.StopContainer(ctx, c.Id, grace)
	kl.metrics.op("stop_container", err)
	return err
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// pruneDeadContainers keeps, per container name, the newest instance and
// the one before it (for `logs --previous`), removing older dead ones with
// their termination message files, and then the dead sandboxes (all but the
// newest) that no longer hold a container, as upstream's container GC: each
// lost sandbox would otherwise stay in the runtime for the pod's lifetime.
func (kl *Kubelet) pruneDeadContainers(ctx context.Context, st *podState, pod *v1.Pod, rp *runtimePod) {
	seen := map[string]int{}
	used := map[string]bool{}
	for _, c := range rp.Containers {
		name := c.Metadata.GetName()
		seen[name]++
		if seen[name] <= 2 || c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			used[rp.sandboxOf[c.Id]] = true
			continue
		}
		if err := kl.removeContainer(ctx, st, pod, c); err != nil {
			used[rp.sandboxOf[c.Id]] = true
		}
	}
	for i, s := range rp.Sandboxes {
		if i == 0 || s.State == runtimeapi.PodSandboxState_SANDBOX_READY || used[s.Id] {
			continue
		}
		err := kl.runtime.RemovePodSandbox(ctx, s.Id)
		kl.metrics.op("remove_podsandbox", err)
	}
}

// removeContainer removes a stopped container and its termination message file.
func (kl *Kubelet) removeContainer(ctx context.Context, st *podState, pod *v1.Pod, c *runtimeapi.ContainerStatus) error {
	err := kl.runtime.RemoveContainer(ctx, c.Id)
	kl.metrics.op("remove_container", err)
	if err != nil {
		return err
	}
	delete(st.termMessages, c.Id)
	if spec := findContainer(pod, c.Metadata.GetName()); spec != nil && spec.TerminationMessagePath != "" {
		for _, m := range c.Mounts {
			if m.ContainerPath == spec.TerminationMessagePath {
				_ = os.Remove(m.HostPath)
			}
		}
	}
	return nil
}

// purgeInitContainers removes every instance of the pod's init containers,
// stopped beforehand, and reports whether it removed any.
func (kl *Kubelet) purgeInitContainers(ctx context.Context, st *podState, pod *v1.Pod, rp *runtimePod) bool {
	removed := false
	for _, c := range rp.Containers {
		if !isInitContainer(pod, c.Metadata.GetName()) {
			continue
		}
		if err := kl.removeContainer(ctx, st, pod, c); err != nil {
			slog.Info("remove init container of a dead sandbox", "pod", podKey(pod), "container", c.Id, "err", err)
			continue
		}
		removed = true
	}
	return removed
}

func isInitContainer(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return true
		}
	}
	return false
}

func gracePeriod(pod *v1.Pod) int64 {
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return defaultGracePeriodSeconds
}

// probeGracePeriod is the grace period of a container killed because probe
// failed: the probe's own terminationGracePeriodSeconds if it has one, as
// upstream, unless the pod is being deleted with a grace period of its own.
func probeGracePeriod(pod *v1.Pod, probe *v1.Probe) int64 {
	if pod.DeletionGracePeriodSeconds == nil && probe != nil && probe.TerminationGracePeriodSeconds != nil {
		return *probe.TerminationGracePeriodSeconds
	}
	return gracePeriod(pod)
}

// killPod stops every container (in parallel, each with grace seconds) and
// every sandbox of the pod. pod may be nil for an orphan.
func (kl *Kubelet) killPod(ctx context.Context, pod *v1.Pod, rp *runtimePod, grace int64) error {
	if err := kl.stopContainers(ctx, pod, rp, grace); err != nil {
		return err
	}
	return kl.removeSandboxes(ctx, rp)
}

// stopContainers stops every running container of the pod, each with grace
// seconds, and keeps them (with their logs).
func (kl *Kubelet) stopContainers(ctx context.Context, pod *v1.Pod, rp *runtimePod, grace int64) error {
	return kl.stopRunning(ctx, pod, rp.running(), grace)
}

func (kl *Kubelet) stopSandboxes(ctx context.Context, rp *runtimePod) error {
	for _, s := range rp.Sandboxes {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			err := kl.runtime.StopPodSandbox(ctx, s.Id)
			kl.metrics.op("stop_podsandbox", err)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (kl *Kubelet) removeSandboxes(ctx context.Context, rp *runtimePod) error {
	if err := kl.stopSandboxes(ctx, rp); err != nil {
		return err
	}
	for _, s := range rp.Sandboxes {
		err := kl.runtime.RemovePodSandbox(ctx, s.Id)
		kl.metrics.op("remove_podsandbox", err)
		if err != nil {
			return err
		}
	}
	// Containers whose sandbox is already gone.
	for _, c := range rp.Containers {
		_ = kl.runtime.RemoveContainer(ctx, c.Id)
	}
	return nil
}

func (kl *Kubelet) cleanupPodFiles(uid types.UID, rp *runtimePod) error {
	if err := kl.volumes.TearDown(uid); err != nil {
		return err
	}
	for _, s := range rp.Sandboxes {
		if s.Metadata != nil {
			_ = os.RemoveAll(kl.podLogDir(s.Metadata.Namespace, s.Metadata.Name, uid))
		}
	}
	kl.removePodCgroups(uid)
	return nil
}

// terminatePod carries out a graceful deletion: stop the containers within
// the grace period and the sandbox, report the pod's terminal phase, remove
// the sandbox and volumes, then delete the pod object for good (grace 0,
// only if it is still the same pod).
func (kl *Kubelet) terminatePod(ctx context.Context, st *podState, pod *v1.Pod, rp *runtimePod) (time.Duration, bool) {
	// Probes stop first: probing containers that are being stopped only
	// yields "probe failed" events about exited containers.
	kl.probes.RemovePod(pod.UID)
	if err := kl.stopContainers(ctx, pod, rp, podWorkerGracePeriod(gracePeriod(pod))); err != nil {
		slog.Warn("kill pod", "pod", podKey(pod), "err", err)
		return time.Second, false
	}
	if err := kl.stopSandboxes(ctx, rp); err != nil {
		slog.Warn("stop the sandbox of a deleted pod", "pod", podKey(pod), "err", err)
		return time.Second, false
	}
	// The status is read from the stopped containers, before they go.
	stopped, err := kl.runtimePod(ctx, pod.UID)
	if err != nil {
		slog.Warn("read pod from runtime", "pod", podKey(pod), "err", err)
		return time.Second, false
	}
	if err := kl.reportTerminalStatus(ctx, st, pod, stopped); err != nil {
		if ctx.Err() != nil {
			return 0, false
		}
		slog.Warn("terminal status of a deleted pod", "pod", podKey(pod), "err", err)
		return time.Second, false
	}
	if err := kl.removeSandboxes(ctx, stopped); err != nil {
		slog.Warn("remove the sandbox of a deleted pod", "pod", podKey(pod), "err", err)
		return time.Second, false
	}
	if err := kl.cleanupPodFiles(pod.UID, stopped); err != nil {
		kl.recorder.Eventf(pod, v1.EventTypeWarning, "FailedUnmount", "Unmount volumes: %v", err)
		return time.Second, false
	}
	zero := int64(0)
	uid := pod.UID
	err = kl.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		slog.Warn("final delete of pod", "pod", podKey(pod), "err", err)
		return time.Second, false
	}
	kl.forget(pod.UID)
	return 0, true
}

// podWorkerGracePeriod is the grace period upstream's pod worker kills a
// pod with: never below one second, whatever was asked (an eviction's 0), so
// that preStop hooks still run.
func podWorkerGracePeriod(grace int64) int64 {
	return max(grace, 1)
}

func podKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

func minDuration(a, b time.Duration) time.Duration {
	if b > 0 && (a <= 0 || b < a) {
		return b
	}
	return a
}
