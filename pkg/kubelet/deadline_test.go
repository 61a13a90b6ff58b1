package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestPodPastActiveDeadlineFailsWithDeadlineExceeded(t *testing.T) {
	h := newHarness(t)
	pod := testPod("deadline", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) })
	h.add(pod)
	retry, _ := h.sync(pod)
	if s := h.status(pod); s.Phase != v1.PodRunning {
		t.Fatalf("before the deadline: phase %s", s.Phase)
	}
	// The worker comes back when the deadline passes, not at the next resync.
	if retry <= 0 || retry > 5*time.Second {
		t.Fatalf("retry after %s, want at most the 5s deadline", retry)
	}

	h.clock.Step(5 * time.Second)
	h.sync(pod)
	s := h.status(pod)
	if s.Phase != v1.PodFailed || s.Reason != "DeadlineExceeded" ||
		s.Message != "Pod was active on the node longer than the specified deadline" {
		t.Fatalf("past the deadline: phase %q reason %q message %q", s.Phase, s.Reason, s.Message)
	}
	if h.running(pod, "main") != nil {
		t.Fatal("the container still runs past the deadline")
	}
	if term := s.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 137 {
		t.Fatalf("container state %+v, want terminated by the kill", s.ContainerStatuses[0].State)
	}
	if condition(s, v1.PodReady) != v1.ConditionFalse {
		t.Fatal("a failed pod is Ready")
	}
	// Nothing restarts it.
	h.clock.Step(time.Minute)
	h.sync(pod)
	if h.running(pod, "main") != nil || h.status(pod).Phase != v1.PodFailed {
		t.Fatal("the pod ran again after failing its deadline")
	}
}

// A pod that fails its deadline while its container still waits for its
// image ends with the container terminated as ContainerStatusUnknown, as
// upstream's status manager marks it; it stayed waiting (ContainerCreating)
// in a Failed pod.
func TestDeadlineWhilePullingMarksTheContainerUnknown(t *testing.T) {
	h := newHarness(t)
	pod := testPod("deadline-pull", func(p *v1.Pod) {
		p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
		p.Spec.Containers[0].Image = "kube-lite.local/missing:1"
	})
	h.add(pod)
	h.sync(pod)
	h.clock.Step(5 * time.Second)
	h.sync(pod)
	s := h.status(pod)
	if s.Phase != v1.PodFailed || s.Reason != "DeadlineExceeded" {
		t.Fatalf("phase %q reason %q", s.Phase, s.Reason)
	}
	term := s.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "ContainerStatusUnknown" || term.ExitCode != 137 ||
		term.Message != "The container could not be located when the pod was terminated" {
		t.Fatalf("container state %+v, want terminated ContainerStatusUnknown", s.ContainerStatuses[0].State)
	}
}
