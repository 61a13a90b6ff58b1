package kubelet

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	crifake "github.com/kube-lite/kube-lite/pkg/kubelet/cri/fake"
	"github.com/kube-lite/kube-lite/pkg/kubelet/prober"
	"github.com/kube-lite/kube-lite/pkg/kubelet/volume"
)

const testImage = "kube-lite.local/busybox:1.35"

type fakeNetwork struct{}

func (fakeNetwork) EnsureConfig(context.Context, string) error   { return nil }
func (fakeNetwork) SyncRoutes(context.Context, []*v1.Node) error { return nil }

type failingProbes struct{}

func (failingProbes) Run(context.Context, prober.Target, *v1.Probe) (prober.Result, string) {
	return prober.Failure, "scripted failure"
}

type harness struct {
	t       *testing.T
	kl      *Kubelet
	rt      *crifake.Runtime
	clock   *testclock.FakeClock
	client  *fake.Clientset
	volumes *volume.Manager
}

func newHarness(t *testing.T, opts ...func(*Deps)) *harness {
	t.Helper()
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := crifake.New(clk, testImage)
	return newHarnessWith(t, clk, rt, opts...)
}

func newHarnessWith(t *testing.T, clk *testclock.FakeClock, rt *crifake.Runtime, opts ...func(*Deps)) *harness {
	t.Helper()
	client := fake.NewSimpleClientset()
	vols := &volume.Manager{Root: t.TempDir(), Source: APISource{Client: client}}
	d := Deps{Client: client, Runtime: rt, Network: fakeNetwork{}, Volumes: vols, Clock: clk}
	for _, o := range opts {
		o(&d)
	}
	kl, err := New(Config{NodeName: "node-1", NodeIP: "192.168.1.10", PodCIDR: "10.244.0.0/24", RootDir: t.TempDir()}, d)
	if err != nil {
		t.Fatal(err)
	}
	// As if the Service informer had listed none.
	kl.servicesSynced = func() bool { return true }
	kl.ensureNetwork(context.Background(), "10.244.0.0/24")
	return &harness{t: t, kl: kl, rt: rt, clock: clk, client: client, volumes: vols}
}

func testPod(name string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			NodeName:      "node-1",
			RestartPolicy: v1.RestartPolicyAlways,
			Containers:    []v1.Container{{Name: "main", Image: testImage, Command: []string{"sleep", "3600"}}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// add makes the pod known as the watch would.
func (h *harness) add(pod *v1.Pod) {
	h.t.Helper()
	if _, err := h.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.kl.podChanged(pod)
}

func (h *harness) sync(pod *v1.Pod) (time.Duration, bool) {
	h.t.Helper()
	return h.kl.syncPod(context.Background(), string(pod.UID))
}

func (h *harness) status(pod *v1.Pod) v1.PodStatus {
	h.t.Helper()
	s, ok := h.kl.statuses.Status(pod.UID)
	if !ok {
		h.t.Fatalf("no status for %s", pod.Name)
	}
	return s
}

func (h *harness) containers(pod *v1.Pod) []*runtimeapi.Container {
	h.t.Helper()
	cs, err := h.rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{labelPodUID: string(pod.UID)}})
	if err != nil {
		h.t.Fatal(err)
	}
	return cs
}

func (h *harness) running(pod *v1.Pod, name string) *runtimeapi.Container {
	h.t.Helper()
	for _, c := range h.containers(pod) {
		if c.Metadata.Name == name && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return c
		}
	}
	return nil
}

func podCondition(s v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

func condition(s v1.PodStatus, t v1.PodConditionType) v1.ConditionStatus {
	if c := podCondition(s, t); c != nil {
		return c.Status
	}
	return ""
}

func TestPodStartsAndReportsRunningWithIP(t *testing.T) {
	h := newHarness(t)
	pod := testPod("web", func(p *v1.Pod) {
		p.Spec.Containers[0].Env = []v1.EnvVar{
			{Name: "GREETING", Value: "hello"},
			{Name: "MSG", Value: "$(GREETING) world"},
			{Name: "MY_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		}
	})
	h.add(pod)
	h.sync(pod)

	s := h.status(pod)
	if s.Phase != v1.PodRunning {
		t.Fatalf("phase = %s, want Running", s.Phase)
	}
	if !strings.HasPrefix(s.PodIP, "10.244.0.") || s.HostIP != "192.168.1.10" {
		t.Fatalf("podIP %q hostIP %q", s.PodIP, s.HostIP)
	}
	if condition(s, v1.PodReady) != v1.ConditionTrue || condition(s, v1.PodReadyToStartContainers) != v1.ConditionTrue {
		t.Fatalf("conditions = %+v", s.Conditions)
	}
	cs := s.ContainerStatuses[0]
	if cs.State.Running == nil || !cs.Ready || !strings.HasPrefix(cs.ContainerID, "containerd://") {
		t.Fatalf("container status = %+v", cs)
	}
	c := h.running(pod, "main")
	env := map[string]string{}
	for _, kv := range h.rt.Config(c.Id).Envs {
		env[kv.Key] = string(kv.Value)
	}
	if env["MSG"] != "hello world" || env["MY_IP"] != s.PodIP {
		t.Fatalf("env = %v", env)
	}
	// A second sync changes nothing.
	before := h.rt.Calls["CreateContainer"]
	h.sync(pod)
	if h.rt.Calls["CreateContainer"] != before || h.rt.Calls["RunPodSandbox"] != 1 {
		t.Fatalf("resync created more: %v", h.rt.Calls)
	}
}

func TestCrashingContainerBacksOffWithGrowingDelays(t *testing.T) {
	h := newHarness(t)
	pod := testPod("crash")
	h.add(pod)
	h.sync(pod)

	var delays []string
	for i := 0; i < 4; i++ {
		c := h.running(pod, "main")
		if c == nil {
			t.Fatalf("round %d: container not running", i)
		}
		h.rt.Exit(c.Id, 1)
		h.sync(pod)
		s := h.status(pod).ContainerStatuses[0]
		if i == 0 {
			// The first crash restarts at once.
			if s.State.Running == nil || s.RestartCount != 1 {
				t.Fatalf("after the first crash: %+v", s)
			}
			continue
		}
		if s.State.Waiting == nil || s.State.Waiting.Reason != reasonCrashLoopBackOff {
			t.Fatalf("round %d: state = %+v, want CrashLoopBackOff", i, s.State)
		}
		if s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 1 {
			t.Fatalf("round %d: last state = %+v", i, s.LastTerminationState)
		}
		if h.status(pod).Phase != v1.PodRunning {
			t.Fatalf("a crash-looping Always pod is %s, want Running", h.status(pod).Phase)
		}
		delays = append(delays, strings.Fields(s.State.Waiting.Message)[1])
		// Not yet: still backed off one second before the delay ends.
		delay := h.kl.crashBackoff.Delay(string(pod.UID) + "/main")
		h.clock.Step(delay - time.Second)
		h.sync(pod)
		if h.running(pod, "main") != nil {
			t.Fatalf("round %d: restarted before the back-off ended", i)
		}
		h.clock.Step(time.Second)
		h.sync(pod)
		if got := h.status(pod).ContainerStatuses[0].RestartCount; got != int32(i+1) {
			t.Fatalf("round %d: restartCount = %d", i, got)
		}
	}
	want := []string{"10s", "20s", "40s"}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("back-off delays = %v, want %v", delays, want)
		}
	}
}

func TestMissingImageGoesToImagePullBackOff(t *testing.T) {
	h := newHarness(t)
	pod := testPod("img", func(p *v1.Pod) { p.Spec.Containers[0].Image = "kube-lite.local/missing:1" })
	h.add(pod)
	h.sync(pod)
	reason := func() string {
		w := h.status(pod).ContainerStatuses[0].State.Waiting
		if w == nil {
			return "running"
		}
		return w.Reason
	}
	if r := reason(); r != reasonErrImagePull {
		t.Fatalf("first sync: %s, want ErrImagePull", r)
	}
	h.sync(pod)
	if r := reason(); r != reasonImagePullBackOff {
		t.Fatalf("second sync: %s, want ImagePullBackOff", r)
	}
	if h.status(pod).Phase != v1.PodPending {
		t.Fatalf("phase = %s", h.status(pod).Phase)
	}
	pulls := h.rt.Calls["PullImage"]
	h.clock.Step(10 * time.Second)
	h.rt.AllowPull("kube-lite.local/missing:1")
	h.sync(pod)
	if h.rt.Calls["PullImage"] != pulls+1 || reason() != "running" {
		t.Fatalf("after the back-off: pulls %d→%d, state %s", pulls, h.rt.Calls["PullImage"], reason())
	}
}

func TestInitContainersRunInOrderBeforeAppContainers(t *testing.T) {
	h := newHarness(t)
	pod := testPod("init", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "first", Image: testImage}, {Name: "second", Image: testImage}}
	})
	h.add(pod)
	steps := []struct{ running, phaseWaiting string }{{"first", reasonPodInitializing}, {"second", reasonPodInitializing}, {"main", ""}}
	for i, step := range steps {
		h.sync(pod)
		var names []string
		for _, c := range h.containers(pod) {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				names = append(names, c.Metadata.Name)
			}
		}
		if len(names) != 1 || names[0] != step.running {
			t.Fatalf("step %d: running %v, want [%s]", i, names, step.running)
		}
		s := h.status(pod)
		if step.phaseWaiting != "" {
			if s.Phase != v1.PodPending || s.ContainerStatuses[0].State.Waiting.Reason != step.phaseWaiting {
				t.Fatalf("step %d: phase %s main %+v", i, s.Phase, s.ContainerStatuses[0].State)
			}
			if condition(s, v1.PodInitialized) != v1.ConditionFalse {
				t.Fatalf("step %d: Initialized before the init containers finished", i)
			}
			h.rt.Exit(h.running(pod, step.running).Id, 0)
		} else if s.Phase != v1.PodRunning || condition(s, v1.PodInitialized) != v1.ConditionTrue {
			t.Fatalf("after init: phase %s, conditions %+v", s.Phase, s.Conditions)
		}
	}
}

func TestRestartPolicyDecidesTheFinalPhase(t *testing.T) {
	tests := []struct {
		policy    v1.RestartPolicy
		exit      int32
		want      v1.PodPhase
		restarted bool
	}{
		{v1.RestartPolicyNever, 0, v1.PodSucceeded, false},
		{v1.RestartPolicyNever, 3, v1.PodFailed, false},
		{v1.RestartPolicyOnFailure, 0, v1.PodSucceeded, false},
		{v1.RestartPolicyOnFailure, 1, v1.PodRunning, true},
		{v1.RestartPolicyAlways, 0, v1.PodRunning, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy)+"/"+string(rune('0'+tc.exit)), func(t *testing.T) {
			h := newHarness(t)
			pod := testPod("p", func(p *v1.Pod) { p.Spec.RestartPolicy = tc.policy })
			h.add(pod)
			h.sync(pod)
			h.rt.Exit(h.running(pod, "main").Id, tc.exit)
			h.sync(pod)
			s := h.status(pod)
			if s.Phase != tc.want {
				t.Fatalf("phase = %s, want %s", s.Phase, tc.want)
			}
			if restarted := h.running(pod, "main") != nil; restarted != tc.restarted {
				t.Fatalf("restarted = %v, want %v", restarted, tc.restarted)
			}
			if tc.want == v1.PodSucceeded {
				term := s.ContainerStatuses[0].State.Terminated
				if term == nil || term.Reason != "Completed" || condition(s, v1.PodReady) != v1.ConditionFalse {
					t.Fatalf("succeeded pod status: %+v", s)
				}
				// The sandbox is stopped once the pod is done.
				sbs, _ := h.rt.ListPodSandbox(context.Background(), nil)
				if len(sbs) != 1 || sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
					t.Fatalf("sandboxes after success: %+v", sbs)
				}
			}
		})
	}
}

func TestFailingLivenessProbeRestartsTheContainer(t *testing.T) {
	h := newHarness(t, func(d *Deps) { d.Prober = failingProbes{} })
	pod := testPod("live", func(p *v1.Pod) {
		p.Spec.Containers[0].LivenessProbe = &v1.Probe{FailureThreshold: 1, PeriodSeconds: 1}
	})
	h.add(pod)
	first := syncPastLivenessFailure(t, h, pod)
	second := h.running(pod, "main")
	if second == nil || second.Id == first.Id {
		t.Fatalf("container not replaced after a failed liveness probe: first %s second %v", first.Id, second)
	}
	if got := h.status(pod).ContainerStatuses[0].RestartCount; got != 1 {
		t.Fatalf("restartCount = %d, want 1", got)
	}
}

// syncPastLivenessFailure starts pod's main container, waits until its
// liveness probe has failed and syncs twice more, by hand (no run context,
// so no workers), to stay deterministic. It returns the first container.
func syncPastLivenessFailure(t *testing.T, h *harness, pod *v1.Pod) *runtimeapi.Container {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.kl.syncRunning(ctx, h.kl.pods[pod.UID], pod, mustRuntimePod(t, h, pod))
	first := h.running(pod, "main")
	for {
		if r, _ := h.kl.probes.Result(first.Id, prober.Liveness); r == prober.Failure {
			break
		}
		time.Sleep(time.Millisecond)
	}
	h.kl.syncRunning(ctx, h.kl.pods[pod.UID], pod, mustRuntimePod(t, h, pod))
	h.kl.syncRunning(ctx, h.kl.pods[pod.UID], pod, mustRuntimePod(t, h, pod))
	return first
}

func mustRuntimePod(t *testing.T, h *harness, pod *v1.Pod) *runtimePod {
	t.Helper()
	rp, err := h.kl.runtimePod(context.Background(), pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

func TestRestartedKubeletAdoptsRunningContainers(t *testing.T) {
	h := newHarness(t)
	pod := testPod("adopt")
	h.add(pod)
	h.sync(pod)
	c := h.running(pod, "main")
	h.rt.Exit(c.Id, 1)
	h.sync(pod) // restart count 1
	before := h.running(pod, "main")
	creates := h.rt.Calls["CreateContainer"]

	// A new kubelet process on the same runtime.
	h2 := newHarnessWith(t, h.clock, h.rt)
	h2.add(pod)
	h2.sync(pod)
	after := h2.running(pod, "main")
	if after == nil || after.Id != before.Id || h.rt.Calls["CreateContainer"] != creates || h.rt.Calls["RunPodSandbox"] != 1 {
		t.Fatalf("adoption created containers: before %s after %v calls %v", before.Id, after, h.rt.Calls)
	}
	s := h2.status(pod)
	if s.Phase != v1.PodRunning || s.ContainerStatuses[0].RestartCount != 1 {
		t.Fatalf("adopted status: phase %s restarts %d", s.Phase, s.ContainerStatuses[0].RestartCount)
	}
}

func TestGracefulDeletionStopsEverythingThenDeletesWithUIDPrecondition(t *testing.T) {
	h := newHarness(t)
	pod := testPod("del", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	})
	h.add(pod)
	h.sync(pod)
	deleting := pod.DeepCopy()
	now := metav1.NewTime(h.clock.Now())
	grace := int64(5)
	deleting.DeletionTimestamp = &now
	deleting.DeletionGracePeriodSeconds = &grace
	h.kl.podChanged(deleting)
	if _, done := h.sync(deleting); !done {
		t.Fatal("the worker is not done after deleting the pod")
	}
	if cs := h.containers(pod); len(cs) != 0 {
		t.Fatalf("containers left: %d", len(cs))
	}
	if sbs, _ := h.rt.ListPodSandbox(context.Background(), nil); len(sbs) != 0 {
		t.Fatalf("sandboxes left: %d", len(sbs))
	}
	if uids := h.volumes.PodUIDsOnDisk(); len(uids) != 0 {
		t.Fatalf("volume dirs left for %v", uids)
	}
	var del clienttesting.DeleteActionImpl
	for _, a := range h.client.Actions() {
		if d, ok := a.(clienttesting.DeleteActionImpl); ok && d.Resource.Resource == "pods" {
			del = d
		}
	}
	opts := del.DeleteOptions
	if del.Name != "del" || opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || *opts.Preconditions.UID != pod.UID {
		t.Fatalf("final delete = %+v", del)
	}
}

func TestOrphanedSandboxesAreRemoved(t *testing.T) {
	h := newHarness(t)
	pod := testPod("orphan")
	h.add(pod)
	h.sync(pod)
	// The pod disappears from the API while the kubelet is away.
	h2 := newHarnessWith(t, h.clock, h.rt)
	if _, done := h2.kl.syncPod(context.Background(), string(pod.UID)); !done {
		t.Fatal("orphan cleanup did not finish")
	}
	if sbs, _ := h.rt.ListPodSandbox(context.Background(), nil); len(sbs) != 0 {
		t.Fatalf("orphaned sandboxes left: %d", len(sbs))
	}
}

func TestAdmissionRejectsPodsThatDoNotFit(t *testing.T) {
	h := newHarness(t)
	huge := testPod("huge", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100000")}
	})
	h.add(huge)
	h.sync(huge)
	s := h.status(huge)
	if s.Phase != v1.PodFailed || s.Reason != "OutOfcpu" || !strings.Contains(s.Message, "Node didn't have enough resource: cpu") {
		t.Fatalf("status = %s %s %q", s.Phase, s.Reason, s.Message)
	}
	if h.rt.Calls["RunPodSandbox"] != 0 {
		t.Fatal("a rejected pod got a sandbox")
	}
}

func TestReadinessProbeGatesReady(t *testing.T) {
	h := newHarness(t, func(d *Deps) { d.Prober = failingProbes{} })
	pod := testPod("ready", func(p *v1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: 1}
	})
	h.add(pod)
	h.sync(pod)
	s := h.status(pod)
	if s.Phase != v1.PodRunning || s.ContainerStatuses[0].Ready || condition(s, v1.PodReady) != v1.ConditionFalse {
		t.Fatalf("unready container reported ready: %+v", s)
	}
	h.kl.probes.RemovePod(pod.UID)
}

func TestPodPhase(t *testing.T) {
	running := v1.ContainerStatus{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	waiting := v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	ok := v1.ContainerStatus{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}}
	bad := v1.ContainerStatus{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 2}}}
	crashLoop := v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}
	tests := []struct {
		name   string
		policy v1.RestartPolicy
		init   []v1.ContainerStatus
		app    []v1.ContainerStatus
		want   v1.PodPhase
		// terminal: deleted, its containers stopped for good.
		terminal bool
	}{
		{"creating", v1.RestartPolicyAlways, nil, []v1.ContainerStatus{waiting}, v1.PodPending, false},
		{"one running one creating", v1.RestartPolicyAlways, nil, []v1.ContainerStatus{running, waiting}, v1.PodPending, false},
		{"running", v1.RestartPolicyAlways, nil, []v1.ContainerStatus{running, ok}, v1.PodRunning, false},
		{"crash loop", v1.RestartPolicyAlways, nil, []v1.ContainerStatus{crashLoop}, v1.PodRunning, false},
		{"never, all ok", v1.RestartPolicyNever, nil, []v1.ContainerStatus{ok, ok}, v1.PodSucceeded, false},
		{"never, one failed", v1.RestartPolicyNever, nil, []v1.ContainerStatus{ok, bad}, v1.PodFailed, false},
		{"init running", v1.RestartPolicyAlways, []v1.ContainerStatus{running}, []v1.ContainerStatus{waiting}, v1.PodPending, false},
		{"init failed, never", v1.RestartPolicyNever, []v1.ContainerStatus{bad}, []v1.ContainerStatus{waiting}, v1.PodFailed, false},
		{"init failed, always", v1.RestartPolicyAlways, []v1.ContainerStatus{crashLoop}, []v1.ContainerStatus{waiting}, v1.PodPending, false},
		{"terminal, always, all ok", v1.RestartPolicyAlways, nil, []v1.ContainerStatus{ok, ok}, v1.PodSucceeded, true},
		{"terminal, always, one killed", v1.RestartPolicyAlways, nil, []v1.ContainerStatus{ok, bad}, v1.PodFailed, true},
		{"terminal, on failure, crash loop", v1.RestartPolicyOnFailure, nil, []v1.ContainerStatus{crashLoop}, v1.PodFailed, true},
		{"terminal, never started", v1.RestartPolicyAlways, nil, []v1.ContainerStatus{waiting}, v1.PodPending, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.policy}}
			if got := podPhase(pod, tc.init, tc.app, tc.terminal); got != tc.want {
				t.Fatalf("phase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "y"}
	tests := map[string]string{
		"$(A)-$(B)":  "x-y",
		"$$(A)":      "$(A)",
		"$(MISSING)": "$(MISSING)",
		"plain $":    "plain $",
		"$(A":        "$(A",
	}
	for in, want := range tests {
		if got := expandVars(in, vars); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOnlyStatusChangesNeedNoSync(t *testing.T) {
	base := testPod("p")
	now := metav1.Now()
	tests := []struct {
		name   string
		mutate func(*v1.Pod)
		want   bool
	}{
		{"status only", func(p *v1.Pod) { p.Status.Phase = v1.PodRunning; p.ResourceVersion = "9" }, true},
		{"deletion", func(p *v1.Pod) { p.DeletionTimestamp = &now }, false},
		{"spec", func(p *v1.Pod) { p.Spec.Containers[0].Image = "other:1" }, false},
		{"labels", func(p *v1.Pod) { p.Labels = map[string]string{"a": "b"} }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.mutate(cur)
			if got := onlyStatusChanged(base, cur); got != tc.want {
				t.Fatalf("onlyStatusChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodTerminalInTheAPIIsNeverRunAgain(t *testing.T) {
	h := newHarness(t)
	pod := testPod("done", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Status.Phase = v1.PodSucceeded
	})
	h.add(pod)
	h.sync(pod)
	if h.rt.Calls["RunPodSandbox"] != 0 || h.rt.Calls["CreateContainer"] != 0 {
		t.Fatalf("a Succeeded pod was started again: %v", h.rt.Calls)
	}
}

func TestDeadSandboxIsStoppedAndRecreatedWithSandboxChangedEvent(t *testing.T) {
	h := newHarness(t)
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	pod := testPod("sb")
	h.add(pod)
	h.sync(pod)
	first := h.status(pod)
	old := h.running(pod, "main")
	if old == nil {
		t.Fatal("main is not running")
	}
	drainEvents(rec)

	h.clock.Step(time.Minute)
	h.rt.KillSandbox(old.PodSandboxId)
	h.sync(pod)

	events := drainEvents(rec)
	joined := strings.Join(events, "\n")
	if !strings.Contains(joined, "Normal SandboxChanged Pod sandbox changed, it will be killed and re-created.\nNormal Killing Stopping container main") {
		t.Fatalf("events:\n%s", joined)
	}
	// The dead sandbox gave its IP back; only the new one holds one.
	held := h.rt.NetworkHeld()
	if len(held) != 1 || held[0] == old.PodSandboxId {
		t.Fatalf("sandboxes holding their network: %v (old %s)", held, old.PodSandboxId)
	}
	s := h.status(pod)
	cs := s.ContainerStatuses[0]
	if s.PodIP == "" || s.PodIP == first.PodIP || cs.State.Running == nil || cs.RestartCount != 1 ||
		cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 137 {
		t.Fatalf("podIP %q (was %q), container status %+v", s.PodIP, first.PodIP, cs)
	}

	// Lost twice more: the instance of the first sandbox is pruned (two are
	// kept for logs --previous), and the sandbox left empty goes with it;
	// once more: the next sandbox's attempt follows the newest's, whose
	// name is still taken, not the count of those left.
	for range 3 {
		h.clock.Step(time.Minute)
		c := h.running(pod, "main")
		if c == nil {
			t.Fatalf("main not running: %+v", h.status(pod).ContainerStatuses)
		}
		h.rt.KillSandbox(c.PodSandboxId)
		h.sync(pod)
		h.clock.Step(time.Minute) // out of the crash back-off
		h.sync(pod)
	}
	sbs, err := h.rt.ListPodSandbox(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sb := range sbs {
		ids = append(ids, sb.Id)
		if sb.Id == old.PodSandboxId {
			t.Errorf("the first sandbox, empty, is still kept")
		}
	}
	if h.running(pod, "main") == nil || len(sbs) != 2 || len(h.containers(pod)) != 2 {
		t.Errorf("sandboxes %v, containers %d: want the two holding the two kept instances", ids, len(h.containers(pod)))
	}
}
