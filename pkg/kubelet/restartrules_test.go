package kubelet

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
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

// A pod whose container has a RestartAllContainers rule (KEP-5532, alpha
// and off in upstream 1.36) is refused as upstream's declared-features
// admission refuses it on a node without the feature: Failed
// PodFeatureUnsupported naming it, and never started. The rule was
// silently ignored.
func TestRestartAllContainersRuleIsRefusedAtAdmission(t *testing.T) {
	for _, init := range []bool{false, true} {
		h := newHarness(t)
		rec := record.NewFakeRecorder(100)
		h.kl.recorder = rec
		pod := testPod("restart-all", func(p *v1.Pod) {
			c := v1.Container{Name: "side", Image: "busybox", RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever)}
			c.RestartPolicyRules = []v1.ContainerRestartRule{{
				Action:    v1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
			}}
			if init {
				p.Spec.InitContainers = append(p.Spec.InitContainers, c)
			} else {
				p.Spec.Containers = append(p.Spec.Containers, c)
			}
		})
		h.add(pod)
		h.sync(pod)
		const msg = "Pod was rejected: Pod requires node features that are not available: RestartAllContainersOnContainerExits"
		if s := h.status(pod); s.Phase != v1.PodFailed || s.Reason != "PodFeatureUnsupported" || s.Message != msg {
			t.Fatalf("init=%v: status = %s %s %q", init, s.Phase, s.Reason, s.Message)
		}
		if h.rt.Calls["RunPodSandbox"] != 0 {
			t.Fatalf("init=%v: a refused pod got a sandbox", init)
		}
		if ev := <-rec.Events; !strings.HasPrefix(ev, "Warning PodFeatureUnsupported ") {
			t.Fatalf("init=%v: event %q", init, ev)
		}
	}
}
