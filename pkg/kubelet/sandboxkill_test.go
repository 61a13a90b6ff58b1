package kubelet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	crifake "github.com/kube-lite/kube-lite/pkg/kubelet/cri/fake"
	"github.com/kube-lite/kube-lite/pkg/kubelet/prober"
)

// killLog is a fake runtime that notes, in order, the commands run in
// containers and the stops with their grace periods; hang makes execs of
// that command wait until their caller gives up.
type killLog struct {
	*crifake.Runtime
	hang    string
	hanging chan struct{}

	mu  sync.Mutex
	ops []string
	// execs are the hooks run, with the time they were given; stops the
	// timeouts containers were stopped with.
	execs []string
	stops []int64
}

func newKillLog(t *testing.T, opts ...func(*Deps)) (*harness, *killLog, *record.FakeRecorder) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kl := &killLog{Runtime: crifake.New(clk, testImage), hanging: make(chan struct{}, 1)}
	h := newHarnessWith(t, clk, kl.Runtime, append([]func(*Deps){func(d *Deps) { d.Runtime = kl }}, opts...)...)
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	return h, kl, rec
}

func (k *killLog) note(format string, args ...any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, fmt.Sprintf(format, args...))
}

func (k *killLog) log() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.ops...)
}

func (k *killLog) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	k.note("exec %s %s", id, strings.Join(cmd, " "))
	k.mu.Lock()
	k.execs = append(k.execs, fmt.Sprintf("%s within %s", strings.Join(cmd, " "), timeout))
	k.mu.Unlock()
	if len(cmd) > 0 && cmd[0] == k.hang {
		select {
		case k.hanging <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, nil, 0, ctx.Err()
	}
	return k.Runtime.ExecSync(ctx, id, cmd, timeout)
}

func (k *killLog) StopContainer(ctx context.Context, id string, timeout int64) error {
	if ctx.Err() != nil {
		return ctx.Err() // as a gRPC call on a cancelled context
	}
	k.note("stop %s %d", id, timeout)
	k.mu.Lock()
	k.stops = append(k.stops, timeout)
	k.mu.Unlock()
	return k.Runtime.StopContainer(ctx, id, timeout)
}

func (k *killLog) StopPodSandbox(ctx context.Context, id string) error {
	k.note("stop sandbox %s", id)
	return k.Runtime.StopPodSandbox(ctx, id)
}

func withPreStop(grace int64, cmd ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.TerminationGracePeriodSeconds = ptr.To(grace)
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}}}
	}
}

// When a pod's sandbox dies (its pause process killed), its containers are
// stopped as upstream stops them before the sandbox is re-created: preStop
// hook first, then SIGTERM with the pod's grace period, then the sandbox.
func TestDeadSandboxsContainersGetTheirPreStopHookAndGracePeriod(t *testing.T) {
	h, rt, rec := newKillLog(t)
	pod := testPod("sbkill", withPreStop(45, "save-state"))
	h.add(pod)
	h.sync(pod)
	old := h.running(pod, "main")
	if old == nil {
		t.Fatal("main is not running")
	}
	drainEvents(rec)

	h.clock.Step(time.Minute)
	rt.KillSandbox(old.PodSandboxId)
	h.sync(pod)

	got := strings.Join(rt.log(), "\n")
	want := strings.Join([]string{
		"exec " + old.Id + " save-state",
		"stop " + old.Id + " 45",
		"stop sandbox " + old.PodSandboxId,
	}, "\n")
	if !strings.HasPrefix(got, want) {
		t.Fatalf("runtime calls:\n%s\nwant first:\n%s", got, want)
	}
	events := strings.Join(drainEvents(rec), "\n")
	if !strings.Contains(events, "Normal SandboxChanged Pod sandbox changed, it will be killed and re-created.\nNormal Killing Stopping container main") {
		t.Fatalf("events:\n%s", events)
	}
	if c := h.running(pod, "main"); c == nil || c.PodSandboxId == old.PodSandboxId {
		t.Fatalf("main not restarted in a new sandbox: %+v", c)
	}
}

// A pod deleted while its dead sandbox's containers run their preStop hooks
// is not given a new sandbox: the sync gives way to the deletion at once.
func TestDeletionInterruptsTheStopOfADeadSandboxsContainers(t *testing.T) {
	h, rt, _ := newKillLog(t)
	rt.hang = "drain"
	pod := testPod("sbdel", withPreStop(600, "drain"))
	h.add(pod)
	h.sync(pod)
	old := h.running(pod, "main")
	rt.KillSandbox(old.PodSandboxId)
	sandboxes := rt.Calls["RunPodSandbox"]

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan time.Duration)
	go func() {
		retry, _ := h.kl.syncPod(ctx, string(pod.UID))
		done <- retry
	}()
	select {
	case <-rt.hanging:
	case <-time.After(10 * time.Second):
		t.Fatal("the preStop hook never ran")
	}
	cancel() // what the pod worker does when the pod is deleted
	select {
	case retry := <-done:
		if retry != 0 {
			t.Errorf("interrupted sync asks to come back in %s, want at once", retry)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupted sync still waits on the preStop hook")
	}
	if n := rt.Calls["RunPodSandbox"]; n != sandboxes {
		t.Fatalf("a new sandbox was created for the pod being deleted (%d, was %d)", n, sandboxes)
	}
}

// A container that fails its liveness or startup probe is stopped with the
// probe's terminationGracePeriodSeconds when it has one, after its preStop
// hook; without one, with the pod's.
func TestProbeKillUsesTheProbesGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe func(*v1.Container, *v1.Probe)
		grace *int64
		want  string
	}{
		{"liveness", func(c *v1.Container, p *v1.Probe) { c.LivenessProbe = p }, ptr.To[int64](5), "5"},
		{"startup", func(c *v1.Container, p *v1.Probe) { c.StartupProbe = p }, ptr.To[int64](7), "7"},
		{"liveness without its own", func(c *v1.Container, p *v1.Probe) { c.LivenessProbe = p }, nil, "45"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, rt, _ := newKillLog(t, func(d *Deps) { d.Prober = failingProbes{} })
			pod := testPod("probekill", withPreStop(45, "save-state"), func(p *v1.Pod) {
				tc.probe(&p.Spec.Containers[0], &v1.Probe{FailureThreshold: 1, PeriodSeconds: 1, TerminationGracePeriodSeconds: tc.grace})
			})
			h.add(pod)
			defer h.kl.probes.RemovePod(pod.UID)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h.kl.syncRunning(ctx, h.kl.pods[pod.UID], pod, mustRuntimePod(t, h, pod))
			c := h.running(pod, "main")
			deadline := time.Now().Add(10 * time.Second)
			for {
				r, _ := h.kl.probes.Result(c.Id, prober.Liveness)
				s, _ := h.kl.probes.Result(c.Id, prober.Startup)
				if r == prober.Failure || s == prober.Failure {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the probe never failed")
				}
				time.Sleep(time.Millisecond)
			}
			h.kl.syncRunning(ctx, h.kl.pods[pod.UID], pod, mustRuntimePod(t, h, pod))
			got := strings.Join(rt.log(), "\n")
			want := "exec " + c.Id + " save-state\nstop " + c.Id + " " + tc.want
			if !strings.HasPrefix(got, want) {
				t.Fatalf("runtime calls:\n%s\nwant first:\n%s", got, want)
			}
		})
	}
}

// A pod failed past its activeDeadlineSeconds has its containers stopped
// like any kill: preStop hook, then the pod's grace period.
func TestDeadlineKillRunsPreStopWithThePodsGracePeriod(t *testing.T) {
	h, rt, _ := newKillLog(t)
	pod := testPod("deadkill", withPreStop(45, "save-state"), func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) })
	h.add(pod)
	h.sync(pod)
	c := h.running(pod, "main")
	h.clock.Step(5 * time.Second)
	h.sync(pod)
	got := strings.Join(rt.log(), "\n")
	if want := "exec " + c.Id + " save-state\nstop " + c.Id + " 45"; !strings.HasPrefix(got, want) {
		t.Fatalf("runtime calls:\n%s\nwant first:\n%s", got, want)
	}
}

// A kubelet restarted while a failed pod's containers were still being
// stopped finishes the job as upstream's does: preStop hook and grace
// period, not a bare kill by the sandbox's stop.
func TestRestartedKubeletStopsATerminalPodsContainersGracefully(t *testing.T) {
	h, rt, _ := newKillLog(t)
	pod := testPod("termrestart", withPreStop(45, "save-state"))
	h.add(pod)
	h.sync(pod)
	c := h.running(pod, "main")

	failed := pod.DeepCopy()
	failed.Status.Phase = v1.PodFailed
	h2 := newHarnessWith(t, h.clock, rt.Runtime, func(d *Deps) { d.Runtime = rt })
	h2.add(failed)
	h2.sync(failed)
	got := strings.Join(rt.log(), "\n")
	want := "exec " + c.Id + " save-state\nstop " + c.Id + " 45\nstop sandbox " + c.PodSandboxId
	if !strings.HasPrefix(got, want) {
		t.Fatalf("runtime calls:\n%s\nwant first:\n%s", got, want)
	}
	if h2.rt.Calls["RunPodSandbox"] != 1 || h2.running(failed, "main") != nil {
		t.Fatalf("the failed pod ran again: %v", h2.rt.Calls)
	}
}

// Whatever the grace period, a stopped container gets SIGTERM and upstream's
// two seconds before SIGKILL: a pod with terminationGracePeriodSeconds 0
// (no time for its preStop hook) and a pod force-deleted while the kubelet
// was away alike.
func TestStoppedContainersGetTheMinimalShutdownWindow(t *testing.T) {
	h, rt, _ := newKillLog(t)
	pod := testPod("nograce", withPreStop(0, "save-state"))
	h.add(pod)
	h.sync(pod)
	c := h.running(pod, "main")
	h.clock.Step(time.Minute)
	rt.KillSandbox(c.PodSandboxId)
	h.sync(pod)
	if got := strings.Join(rt.log(), "\n"); !strings.HasPrefix(got, "stop "+c.Id+" 2\n") {
		t.Fatalf("runtime calls:\n%s\nwant first: stop %s 2", got, c.Id)
	}

	if c = h.running(pod, "main"); c == nil {
		t.Fatalf("main not restarted: %+v", h.status(pod).ContainerStatuses)
	}
	h2 := newHarnessWith(t, h.clock, rt.Runtime, func(d *Deps) { d.Runtime = rt })
	if _, done := h2.kl.syncPod(context.Background(), string(pod.UID)); !done {
		t.Fatal("orphan cleanup did not finish")
	}
	if got := strings.Join(rt.log(), "\n"); !strings.Contains(got, "stop "+c.Id+" 2\n") {
		t.Fatalf("runtime calls:\n%s\nwant: stop %s 2", got, c.Id)
	}
}

// A container whose postStart hook failed is killed like any other: its
// preStop hook, then the pod's grace period.
func TestFailedPostStartKillRunsPreStop(t *testing.T) {
	h, rt, rec := newKillLog(t)
	rt.ExecResult["false"] = 1
	pod := testPod("poststart", withPreStop(45, "save-state"), func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle.PostStart = &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}
	})
	h.add(pod)
	h.sync(pod)
	cs := h.containers(pod)
	if len(cs) != 1 {
		t.Fatalf("containers: %v", cs)
	}
	id := cs[0].Id
	got := strings.Join(rt.log(), "\n")
	if want := "exec " + id + " false\nexec " + id + " save-state\nstop " + id + " 45"; got != want {
		t.Fatalf("runtime calls:\n%s\nwant:\n%s", got, want)
	}
	if events := strings.Join(drainEvents(rec), "\n"); !strings.Contains(events, "Normal Killing FailedPostStartHook") {
		t.Fatalf("events:\n%s", events)
	}
}

// A restartPolicy Never pod whose sandbox dies is not given a new one, as
// upstream: what still runs in the dead one is stopped (preStop hook, grace
// period) and the pod ends with how its container exited.
func TestNeverRestartedPodsDeadSandboxStopsItsContainers(t *testing.T) {
	h, rt, rec := newKillLog(t)
	pod := testPod("never", withPreStop(45, "save-state"), func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever })
	h.add(pod)
	h.sync(pod)
	c := h.running(pod, "main")
	drainEvents(rec)
	rt.KillSandbox(c.PodSandboxId)
	h.sync(pod)

	got := strings.Join(rt.log(), "\n")
	want := "exec " + c.Id + " save-state\nstop " + c.Id + " 45\nstop sandbox " + c.PodSandboxId
	if !strings.HasPrefix(got, want) {
		t.Fatalf("runtime calls:\n%s\nwant first:\n%s", got, want)
	}
	if h.running(pod, "main") != nil || rt.Calls["RunPodSandbox"] != 1 {
		t.Fatalf("the container runs on or a sandbox was re-created: %v", rt.Calls)
	}
	if s := h.status(pod); s.Phase != v1.PodFailed || s.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("phase %s, container %+v: want Failed, terminated", s.Phase, s.ContainerStatuses[0].State)
	}
	if held := rt.NetworkHeld(); len(held) != 0 {
		t.Fatalf("sandboxes still holding their address: %v", held)
	}
	events := strings.Join(drainEvents(rec), "\n")
	if strings.Contains(events, "SandboxChanged") || !strings.Contains(events, "Normal Killing Stopping container main") {
		t.Fatalf("events:\n%s", events)
	}
}

// A re-created sandbox starts the pod over from its first init container,
// as upstream: what the init containers set up may be gone with the old one.
func TestRecreatedSandboxRunsTheInitContainersAgain(t *testing.T) {
	h, rt, _ := newKillLog(t)
	pod := testPod("reinit", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: testImage}}
	})
	h.add(pod)
	h.sync(pod)
	h.rt.Exit(h.running(pod, "setup").Id, 0)
	h.sync(pod)
	old := h.running(pod, "main")
	if old == nil {
		t.Fatalf("main not running: %+v", h.status(pod))
	}

	h.clock.Step(time.Minute)
	rt.KillSandbox(old.PodSandboxId)
	h.sync(pod)
	setup := h.running(pod, "setup")
	if setup == nil || setup.PodSandboxId == old.PodSandboxId || h.running(pod, "main") != nil {
		t.Fatalf("after the new sandbox: setup %+v, main %+v; want setup running again first", setup, h.running(pod, "main"))
	}
	// As upstream, a pod whose app containers ran stays Initialized.
	if s := h.status(pod); s.Phase != v1.PodPending || condition(s, v1.PodInitialized) != v1.ConditionTrue {
		t.Fatalf("while initializing again: phase %s, conditions %+v", s.Phase, s.Conditions)
	}

	h.rt.Exit(setup.Id, 0)
	h.sync(pod)
	if c := h.running(pod, "main"); c == nil || c.PodSandboxId != setup.PodSandboxId {
		t.Fatalf("main not restarted after setup: %+v", c)
	}
	if s := h.status(pod); s.Phase != v1.PodRunning || s.ContainerStatuses[0].RestartCount != 1 {
		t.Fatalf("phase %s, main %+v", s.Phase, s.ContainerStatuses[0])
	}
}

// Under restartPolicy OnFailure a container still running when its sandbox
// dies has not succeeded: as upstream, it starts over in a new sandbox.
func TestOnFailurePodsRunningContainerStartsOverInANewSandbox(t *testing.T) {
	h, rt, rec := newKillLog(t)
	pod := testPod("onfailure", func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure })
	h.add(pod)
	h.sync(pod)
	old := h.running(pod, "main")
	drainEvents(rec)
	h.clock.Step(time.Minute)
	rt.KillSandbox(old.PodSandboxId)
	h.sync(pod)
	if c := h.running(pod, "main"); c == nil || c.PodSandboxId == old.PodSandboxId {
		t.Fatalf("main not running in a new sandbox: %+v (calls %v)", c, rt.Calls)
	}
	if events := strings.Join(drainEvents(rec), "\n"); !strings.Contains(events, "Normal SandboxChanged") {
		t.Fatalf("events:\n%s", events)
	}
}

// sandboxFailer fails RunPodSandbox while fail is set, as a runtime whose
// CNI plugin errors does.
type sandboxFailer struct {
	*killLog
	fail bool
}

func (f *sandboxFailer) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig) (string, error) {
	if f.fail {
		return "", fmt.Errorf("plugin type=\"bridge\" failed (add): no IP addresses available")
	}
	return f.killLog.RunPodSandbox(ctx, cfg)
}

// A dead sandbox is stopped once: not again on each sync while the new
// sandbox cannot be created, nor when a later sandbox dies. A stopped
// sandbox and a dead one both read not ready; the runtime tears the network
// down again on each stop.
func TestDeadSandboxIsStoppedOnce(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kl := &killLog{Runtime: crifake.New(clk, testImage), hanging: make(chan struct{}, 1)}
	rt := &sandboxFailer{killLog: kl}
	h := newHarnessWith(t, clk, kl.Runtime, func(d *Deps) { d.Runtime = rt })
	pod := testPod("stoponce")
	h.add(pod)
	h.sync(pod)
	first := h.running(pod, "main")
	if first == nil {
		t.Fatal("main is not running")
	}

	stops := func() []string {
		var out []string
		for _, op := range kl.log() {
			if strings.HasPrefix(op, "stop sandbox ") {
				out = append(out, strings.TrimPrefix(op, "stop sandbox "))
			}
		}
		return out
	}

	h.clock.Step(time.Minute)
	kl.KillSandbox(first.PodSandboxId)
	rt.fail = true
	for i := 0; i < 3; i++ {
		retry, _ := h.sync(pod)
		h.clock.Step(retry + time.Second)
	}
	if got, want := stops(), []string{first.PodSandboxId}; !slices.Equal(got, want) {
		t.Fatalf("while the new sandbox cannot be created: stopped %v, want %v", got, want)
	}

	rt.fail = false
	h.sync(pod)
	second := h.running(pod, "main")
	if second == nil || second.PodSandboxId == first.PodSandboxId {
		t.Fatalf("main not restarted in a new sandbox: %+v", second)
	}
	h.clock.Step(time.Minute)
	kl.KillSandbox(second.PodSandboxId)
	h.sync(pod)
	if got, want := stops(), []string{first.PodSandboxId, second.PodSandboxId}; !slices.Equal(got, want) {
		t.Fatalf("after the second sandbox died: stopped %v, want %v", got, want)
	}
	if n := kl.Calls["RunPodSandbox"]; n != 3 {
		t.Fatalf("sandboxes created: %d, want 3", n)
	}
	if held := kl.NetworkHeld(); len(held) != 1 {
		t.Fatalf("sandboxes holding their address: %v, want only the running one", held)
	}
}
