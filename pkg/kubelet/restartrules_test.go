package kubelet

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// A container's own restartPolicy and restartPolicyRules (upstream's
// ContainerRestartRules, on by default since 1.35) decide whether it
// restarts, over the pod's restartPolicy; they were ignored.
func TestContainerRestartRulesOverrideThePodsPolicy(t *testing.T) {
	rules := func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
		p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{
			Action:    v1.ContainerRestartRuleActionRestart,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
		}}
	}
	tests := []struct {
		name      string
		mutate    func(*v1.Pod)
		exit      int32
		restarted bool
		phase     v1.PodPhase
	}{
		{"rule matches", rules, 42, true, v1.PodRunning},
		{"no rule matches, container Never", rules, 1, false, v1.PodFailed},
		{"container OnFailure in an Always pod, exit 0", func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyOnFailure)
		}, 0, false, v1.PodSucceeded},
		{"container Always in a Never pod", func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
		}, 0, true, v1.PodRunning},
		{"NotIn rule", func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyAlways
			p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{
				Action:    v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}},
			}}
		}, 0, false, v1.PodSucceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pod := testPod("rules", tc.mutate)
			h.add(pod)
			h.sync(pod)
			first := h.running(pod, "main")
			h.rt.Exit(first.Id, tc.exit)
			h.sync(pod)
			again := h.running(pod, "main")
			if restarted := again != nil && again.Id != first.Id; restarted != tc.restarted {
				t.Fatalf("restarted = %v, want %v", restarted, tc.restarted)
			}
			if s := h.status(pod); s.Phase != tc.phase {
				t.Fatalf("phase %s, want %s", s.Phase, tc.phase)
			}
		})
	}
}

// A container failing its liveness probe in a pod that does not restart it
// is killed with upstream's 'Container main failed liveness probe' (no
// ', will be restarted'), and the pod ends Failed.
func TestLivenessKillWithoutRestartSaysSo(t *testing.T) {
	h := newHarness(t, func(d *Deps) { d.Prober = failingProbes{} })
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	pod := testPod("live-never", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.Containers[0].LivenessProbe = &v1.Probe{FailureThreshold: 1, PeriodSeconds: 1}
	})
	h.add(pod)
	syncPastLivenessFailure(t, h, pod)
	if h.running(pod, "main") != nil {
		t.Fatal("main restarted under restartPolicy Never")
	}
	events := strings.Join(drainEvents(rec), "\n")
	if !strings.Contains(events, "Normal Killing Container main failed liveness probe") || strings.Contains(events, "will be restarted") {
		t.Fatalf("events:\n%s", events)
	}
	if s := h.status(pod); s.Phase != v1.PodFailed {
		t.Fatalf("phase %s, want Failed", s.Phase)
	}
}

// restartAllPod has an init container, a sidecar and two app containers,
// "main" restarting all of them when it exits 42 (KEP-5532, beta and on by
// default in upstream 1.36), in a pod that never restarts a container.
func restartAllPod(name string) *v1.Pod {
	return testPod(name, func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.InitContainers = []v1.Container{
			{Name: "init", Image: testImage},
			{Name: "side", Image: testImage, RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)},
		}
		p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
		p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{
			Action:    v1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
		}}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "other", Image: testImage})
	})
}

func allStatuses(s v1.PodStatus) map[string]v1.ContainerStatus {
	out := map[string]v1.ContainerStatus{}
	for _, cs := range append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...) {
		out[cs.Name] = cs
	}
	return out
}

// sentStatuses are the pod statuses the kubelet patched, in order.
func (h *harness) sentStatuses() []v1.PodStatus {
	h.t.Helper()
	var out []v1.PodStatus
	for _, a := range h.client.Actions() {
		if p, ok := a.(clienttesting.PatchActionImpl); ok && p.Subresource == "status" {
			out = append(out, h.patchedStatus(p))
		}
	}
	return out
}

// A container exiting as its RestartAllContainers rule says restarts the
// pod in place, as upstream's kubelet does: the pod says
// AllContainersRestarting before the running containers are killed
// ("killing", app containers before sidecars) and every container removed;
// in the same sandbox, the init container runs again first, then the rest;
// each container counts one restart, its last state the restart's. Such a
// pod was refused at admission.
func TestRestartAllContainersRestartsThePodInPlace(t *testing.T) {
	h := newHarness(t)
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	pod := restartAllPod("restart-all")
	h.add(pod)
	h.sync(pod)
	h.rt.Exit(h.running(pod, "init").Id, 0)
	h.sync(pod) // starts the sidecar
	h.sync(pod) // and once it started, the app containers
	if s := h.status(pod); s.Phase != v1.PodRunning || podCondition(s, v1.AllContainersRestarting).Status != v1.ConditionFalse {
		t.Fatalf("before: phase %s, conditions %+v", s.Phase, s.Conditions)
	}
	old := map[string]bool{}
	for _, c := range h.containers(pod) {
		old[c.Id] = true
	}
	for len(rec.Events) > 0 {
		<-rec.Events
	}
	h.client.ClearActions()

	h.rt.Exit(h.running(pod, "main").Id, 42)
	h.sync(pod)

	sent := h.sentStatuses()
	if len(sent) == 0 {
		t.Fatal("no status sent before the kills")
	}
	c := podCondition(sent[0], v1.AllContainersRestarting)
	if c == nil || c.Status != v1.ConditionTrue || c.Reason != "RestartAllContainersStarted" || c.Message != "container exited with restart policy rule" {
		t.Fatalf("AllContainersRestarting sent = %+v", c)
	}
	if m := allStatuses(sent[0])["main"]; sent[0].Phase != v1.PodRunning || m.State.Terminated == nil || m.State.Terminated.ExitCode != 42 {
		t.Fatalf("first status sent: phase %s, main %+v", sent[0].Phase, m.State)
	}
	var kills []string
	for len(rec.Events) > 0 {
		if ev := <-rec.Events; strings.Contains(ev, " Killing ") {
			kills = append(kills, ev)
		}
	}
	if want := []string{"Normal Killing killing", "Normal Killing killing"}; !slices.Equal(kills, want) {
		t.Fatalf("kill events %q, want %q", kills, want)
	}
	if h.rt.Calls["RunPodSandbox"] != 1 {
		t.Fatalf("sandboxes created: %d, want the first one kept", h.rt.Calls["RunPodSandbox"])
	}
	for _, c := range h.containers(pod) {
		if old[c.Id] {
			t.Fatalf("container %s (%s) of before the restart is left", c.Metadata.Name, c.Id)
		}
	}
	if h.running(pod, "init") == nil || h.running(pod, "side") != nil || h.running(pod, "main") != nil {
		t.Fatalf("after the restart: %v", h.containers(pod))
	}
	s := h.status(pod)
	if s.Phase != v1.PodPending || podCondition(s, v1.AllContainersRestarting).Status != v1.ConditionFalse ||
		condition(s, v1.PodInitialized) != v1.ConditionTrue {
		t.Fatalf("while initializing again: phase %s, conditions %+v", s.Phase, s.Conditions)
	}
	restarted := func(s v1.PodStatus, wantCount int32) {
		t.Helper()
		for name, cs := range allStatuses(s) {
			last := cs.LastTerminationState.Terminated
			if cs.RestartCount != wantCount || last == nil || last.Reason != "RestartingAllContainers" || last.ExitCode != 137 ||
				last.Message != "The container is removed because RestartAllContainers in place" {
				t.Fatalf("%s: restartCount %d, lastState %+v", name, cs.RestartCount, last)
			}
		}
	}
	restarted(s, 1)
	if w := allStatuses(s)["main"].State.Waiting; w == nil || w.Reason != reasonPodInitializing {
		t.Fatalf("main waits with %+v", w)
	}
	h.rt.Exit(h.running(pod, "init").Id, 0)
	h.sync(pod) // starts the sidecar
	h.sync(pod) // and once it started, the app containers
	s = h.status(pod)
	if s.Phase != v1.PodRunning || h.running(pod, "main") == nil || h.running(pod, "other") == nil || h.running(pod, "side") == nil {
		t.Fatalf("after initializing again: phase %s, %v", s.Phase, h.containers(pod))
	}
	restarted(s, 1)

	// The rule is no crash: no back-off, the pod restarts at once again.
	h.rt.Exit(h.running(pod, "main").Id, 42)
	h.sync(pod)
	h.rt.Exit(h.running(pod, "init").Id, 0)
	h.sync(pod) // starts the sidecar
	h.sync(pod) // and once it started, the app containers
	if s := h.status(pod); s.Phase != v1.PodRunning || h.running(pod, "main") == nil {
		t.Fatalf("second restart: phase %s, %v", s.Phase, h.containers(pod))
	}
	restarted(h.status(pod), 2)
}

// Exits that match no rule still follow the container's own policy: a pod
// whose rule container ends otherwise under Never is Failed, not restarted.
func TestRestartAllContainersRuleNotMatchingEndsThePod(t *testing.T) {
	h := newHarness(t)
	pod := restartAllPod("restart-all-no")
	pod.Spec.Containers = pod.Spec.Containers[:1]
	h.add(pod)
	h.sync(pod)
	h.rt.Exit(h.running(pod, "init").Id, 0)
	h.sync(pod) // starts the sidecar
	h.sync(pod) // and once it started, the app containers
	first := h.running(pod, "main")
	h.rt.Exit(first.Id, 1)
	h.sync(pod)
	s := h.status(pod)
	if s.Phase != v1.PodFailed || h.rt.Calls["RemoveContainer"] != 0 {
		t.Fatalf("phase %s, removed %d", s.Phase, h.rt.Calls["RemoveContainer"])
	}
	if c := podCondition(s, v1.AllContainersRestarting); c == nil || c.Status != v1.ConditionFalse || c.Reason != "PodFailed" {
		t.Fatalf("AllContainersRestarting = %+v", c)
	}
}

// The node declares the in-place restart in status.declaredFeatures, as
// upstream's kubelet does, so that what places pods can tell it serves them.
func TestNodeDeclaresRestartAllContainers(t *testing.T) {
	h := newHarness(t)
	if got := h.kl.nodeStatus(context.Background(), nil).DeclaredFeatures; !slices.Equal(got, []string{"RestartAllContainersOnContainerExits"}) {
		t.Fatalf("declaredFeatures = %q", got)
	}
}
