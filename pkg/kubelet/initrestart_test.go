package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// An init container's own restartPolicy and restartPolicyRules (upstream's
// ContainerRestartRules, on by default since 1.35) decide whether it runs
// again after it failed, over the pod's restartPolicy: a Never pod retries
// an OnFailure init container (with the crash back-off), an Always pod fails
// with a Never one. Only the pod's restartPolicy was followed.
func TestInitContainerRestartPolicyOverridesThePods(t *testing.T) {
	exitIn42 := []v1.ContainerRestartRule{{
		Action:    v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}
	tests := []struct {
		name      string
		podPolicy v1.RestartPolicy
		policy    v1.ContainerRestartPolicy
		rules     []v1.ContainerRestartRule
		exit      int32
		restarted bool
	}{
		{"OnFailure init container in a Never pod", v1.RestartPolicyNever, v1.ContainerRestartPolicyOnFailure, nil, 1, true},
		{"Never init container in an Always pod", v1.RestartPolicyAlways, v1.ContainerRestartPolicyNever, nil, 1, false},
		{"Never init container in an OnFailure pod", v1.RestartPolicyOnFailure, v1.ContainerRestartPolicyNever, nil, 1, false},
		{"rule matching the exit code", v1.RestartPolicyNever, v1.ContainerRestartPolicyNever, exitIn42, 42, true},
		{"rule not matching the exit code", v1.RestartPolicyNever, v1.ContainerRestartPolicyNever, exitIn42, 1, false},
		{"rule not matching, init container OnFailure", v1.RestartPolicyNever, v1.ContainerRestartPolicyOnFailure, exitIn42, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pod := testPod("init-policy", func(p *v1.Pod) {
				p.Spec.RestartPolicy = tc.podPolicy
				p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: testImage,
					RestartPolicy: ptr.To(tc.policy), RestartPolicyRules: tc.rules}}
			})
			h.add(pod)
			h.sync(pod)
			first := h.running(pod, "setup")
			if first == nil {
				t.Fatal("init container not started")
			}
			h.rt.Exit(first.Id, tc.exit)
			h.sync(pod)
			again := h.running(pod, "setup")
			if restarted := again != nil && again.Id != first.Id; restarted != tc.restarted {
				t.Fatalf("restarted = %v, want %v", restarted, tc.restarted)
			}
			s := h.status(pod)
			setup := s.InitContainerStatuses[0]
			if !tc.restarted {
				if s.Phase != v1.PodFailed {
					t.Fatalf("phase %s, want Failed", s.Phase)
				}
				if term := setup.State.Terminated; term == nil || term.ExitCode != tc.exit || setup.RestartCount != 0 {
					t.Fatalf("init container status %+v, want terminated with %d and no restart", setup, tc.exit)
				}
				if h.running(pod, "main") != nil {
					t.Fatal("main started after its init container failed for good")
				}
				return
			}
			if s.Phase != v1.PodPending || setup.State.Running == nil || setup.RestartCount != 1 {
				t.Fatalf("phase %s, init container %+v: want Pending, running again once", s.Phase, setup)
			}
			// A second failure backs off, the pod still Pending.
			h.rt.Exit(again.Id, tc.exit)
			h.sync(pod)
			s = h.status(pod)
			setup = s.InitContainerStatuses[0]
			if s.Phase != v1.PodPending || setup.State.Waiting == nil || setup.State.Waiting.Reason != reasonCrashLoopBackOff {
				t.Fatalf("phase %s, init container %+v: want Pending, CrashLoopBackOff", s.Phase, setup)
			}
			if last := setup.LastTerminationState.Terminated; last == nil || last.ExitCode != tc.exit {
				t.Fatalf("last state %+v, want terminated with %d", setup.LastTerminationState, tc.exit)
			}
			// Once it succeeds, the app container runs.
			h.clock.Step(h.kl.crashBackoff.Delay(string(pod.UID) + "/setup"))
			h.sync(pod)
			h.rt.Exit(h.running(pod, "setup").Id, 0)
			h.sync(pod)
			if s := h.status(pod); s.Phase != v1.PodRunning || h.running(pod, "main") == nil {
				t.Fatalf("after the init container succeeded: phase %s", s.Phase)
			}
		})
	}
}

// An init container whose RestartAllContainers rule matches its exit code
// restarts the pod in place (the init container runs again, the pod stays
// Pending), not failing it, even under Never policies.
func TestInitContainerRestartAllContainersRule(t *testing.T) {
	h := newHarness(t)
	pod := testPod("init-restart-all", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: testImage,
			RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever),
			RestartPolicyRules: []v1.ContainerRestartRule{{
				Action:    v1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
			}}}}
	})
	h.add(pod)
	h.sync(pod)
	first := h.running(pod, "setup")
	h.rt.Exit(first.Id, 42)
	for i := 0; i < 3 && h.running(pod, "setup") == nil; i++ {
		h.sync(pod)
	}
	again := h.running(pod, "setup")
	if again == nil || again.Id == first.Id {
		t.Fatalf("init container not run again: %v", h.containers(pod))
	}
	s := h.status(pod)
	setup := s.InitContainerStatuses[0]
	if s.Phase != v1.PodPending || setup.State.Running == nil || setup.RestartCount != 1 {
		t.Fatalf("phase %s, init container %+v: want Pending, running again once", s.Phase, setup)
	}
	h.rt.Exit(again.Id, 0)
	h.sync(pod)
	if s := h.status(pod); s.Phase != v1.PodRunning || h.running(pod, "main") == nil {
		t.Fatalf("after the init container succeeded: phase %s", s.Phase)
	}
}
