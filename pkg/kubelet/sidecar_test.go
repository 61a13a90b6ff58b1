package kubelet

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func withSidecars(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: testImage,
				RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)})
		}
	}
}

// A sidecar (an init container with restartPolicy Always) only has to start
// for the app containers to start: the pod runs with both, Initialized and
// Ready. The app containers never started before, the pod stayed Pending.
func TestSidecarRunsBesideTheAppContainers(t *testing.T) {
	h := newHarness(t)
	pod := testPod("sidecar", withSidecars("proxy"), func(p *v1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "setup", Image: testImage})
	})
	h.add(pod)
	h.sync(pod)
	if h.running(pod, "proxy") == nil || h.running(pod, "setup") != nil {
		t.Fatalf("first sync: want only the sidecar running: %+v", h.containers(pod))
	}
	h.sync(pod)
	setup := h.running(pod, "setup")
	if setup == nil || h.running(pod, "main") != nil {
		t.Fatalf("second sync: want setup running after the started sidecar: %+v", h.containers(pod))
	}
	if s := h.status(pod); s.Phase != v1.PodPending || condition(s, v1.PodInitialized) != v1.ConditionFalse {
		t.Fatalf("while setup runs: phase %s, conditions %+v", s.Phase, s.Conditions)
	}
	h.rt.Exit(setup.Id, 0)
	h.sync(pod)
	if h.running(pod, "main") == nil || h.running(pod, "proxy") == nil {
		t.Fatalf("after setup: want main and proxy running: %+v", h.containers(pod))
	}
	s := h.status(pod)
	if s.Phase != v1.PodRunning || condition(s, v1.PodInitialized) != v1.ConditionTrue || condition(s, v1.PodReady) != v1.ConditionTrue {
		t.Fatalf("phase %s, conditions %+v", s.Phase, s.Conditions)
	}
	proxy, setupStatus := s.InitContainerStatuses[0], s.InitContainerStatuses[1]
	if proxy.State.Running == nil || !proxy.Ready || proxy.Started == nil || !*proxy.Started {
		t.Fatalf("sidecar status %+v", proxy)
	}
	if setupStatus.State.Terminated == nil || !setupStatus.Ready {
		t.Fatalf("a succeeded init container is reported ready upstream: %+v", setupStatus)
	}
}

// A sidecar that exits is restarted whatever the pod's restart policy, and
// while it restarts the pod stays Running and Initialized but not Ready.
func TestExitedSidecarRestartsAndHoldsReady(t *testing.T) {
	h := newHarness(t)
	pod := testPod("sidecar-exit", withSidecars("proxy"), func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever })
	h.add(pod)
	h.sync(pod)
	h.sync(pod)
	first := h.running(pod, "proxy")
	if first == nil || h.running(pod, "main") == nil {
		t.Fatalf("want proxy and main running: %+v", h.containers(pod))
	}
	h.rt.Exit(first.Id, 1)
	h.sync(pod)
	second := h.running(pod, "proxy")
	if second == nil || second.Id == first.Id {
		t.Fatalf("the sidecar was not restarted: %+v", h.containers(pod))
	}
	s := h.status(pod)
	if s.InitContainerStatuses[0].RestartCount != 1 || s.Phase != v1.PodRunning {
		t.Fatalf("phase %s, sidecar %+v", s.Phase, s.InitContainerStatuses[0])
	}

	h.rt.Exit(second.Id, 1)
	h.sync(pod) // in back-off now
	s = h.status(pod)
	if w := s.InitContainerStatuses[0].State.Waiting; w == nil || w.Reason != reasonCrashLoopBackOff {
		t.Fatalf("sidecar in back-off: %+v", s.InitContainerStatuses[0].State)
	}
	if s.Phase != v1.PodRunning || condition(s, v1.PodInitialized) != v1.ConditionTrue ||
		condition(s, v1.ContainersReady) != v1.ConditionFalse {
		t.Fatalf("phase %s, conditions %+v", s.Phase, s.Conditions)
	}
	for _, c := range s.Conditions {
		if c.Type == v1.ContainersReady && c.Message != "containers with unready status: [proxy]" {
			t.Fatalf("ContainersReady message %q", c.Message)
		}
	}
}

// Once the app containers ended for good, the sidecars are stopped (after
// them, last started first) and the pod ends Succeeded; it ran on forever.
func TestSidecarsStopWhenTheAppContainersEnd(t *testing.T) {
	h, rt, _ := newKillLog(t)
	pod := testPod("sidecar-done", withSidecars("a", "b"), func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever })
	h.add(pod)
	for range 3 {
		h.sync(pod)
	}
	a, b, main := h.running(pod, "a"), h.running(pod, "b"), h.running(pod, "main")
	if a == nil || b == nil || main == nil {
		t.Fatalf("want a, b and main running: %+v", h.containers(pod))
	}
	h.rt.Exit(main.Id, 0)
	h.sync(pod)
	if h.running(pod, "a") != nil || h.running(pod, "b") != nil {
		t.Fatalf("sidecars run on after the app containers ended: %+v", h.containers(pod))
	}
	stops := slices.DeleteFunc(rt.log(), func(op string) bool { return op[:5] != "stop " || op[:13] == "stop sandbox " })
	if want := []string{fmt.Sprintf("stop %s 30", b.Id), fmt.Sprintf("stop %s 30", a.Id)}; !slices.Equal(stops, want) {
		t.Fatalf("stops %v, want %v (the last sidecar first)", stops, want)
	}
	s := h.status(pod)
	if s.Phase != v1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded", s.Phase)
	}
	for _, c := range s.Conditions {
		if (c.Type == v1.PodReady || c.Type == v1.ContainersReady || c.Type == v1.PodInitialized) && c.Reason != "PodCompleted" {
			t.Fatalf("condition %+v, want reason PodCompleted", c)
		}
	}
}

// A deleted pod's app containers are stopped before its sidecars, which
// stop one after another, the last started first.
func TestDeletionStopsSidecarsAfterTheAppContainers(t *testing.T) {
	h, rt, _ := newKillLog(t)
	pod := testPod("sidecar-del", withSidecars("a", "b"))
	h.add(pod)
	for range 3 {
		h.sync(pod)
	}
	a, b, main := h.running(pod, "a"), h.running(pod, "b"), h.running(pod, "main")
	if a == nil || b == nil || main == nil {
		t.Fatalf("want a, b and main running: %+v", h.containers(pod))
	}
	del := pod.DeepCopy()
	now := metav1.NewTime(h.clock.Now())
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, ptr.To[int64](10)
	h.kl.podChanged(del)
	h.sync(del)
	stops := slices.DeleteFunc(rt.log(), func(op string) bool { return op[:5] != "stop " || op[:13] == "stop sandbox " })
	want := []string{fmt.Sprintf("stop %s 10", main.Id), fmt.Sprintf("stop %s 10", b.Id), fmt.Sprintf("stop %s 10", a.Id)}
	if !slices.Equal(stops, want) {
		t.Fatalf("stops %v, want %v", stops, want)
	}
}

// A failed pod's containers are not ready with upstream's reason PodFailed.
func TestFailedPodIsNotReadyWithReasonPodFailed(t *testing.T) {
	h := newHarness(t)
	pod := testPod("failed", func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever })
	h.add(pod)
	h.sync(pod)
	h.rt.Exit(h.running(pod, "main").Id, 2)
	h.sync(pod)
	s := h.status(pod)
	if s.Phase != v1.PodFailed {
		t.Fatalf("phase %s", s.Phase)
	}
	for _, c := range s.Conditions {
		if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && (c.Status != v1.ConditionFalse || c.Reason != "PodFailed") {
			t.Fatalf("condition %+v, want False PodFailed", c)
		}
		if c.Type == v1.PodInitialized && (c.Status != v1.ConditionTrue || c.Reason != "") {
			t.Fatalf("condition %+v, want True", c)
		}
	}
}

// The phase with sidecars, as upstream's getPhase: a sidecar not yet started
// keeps the pod Pending until an app container ran, a running one keeps it
// Running, an exited one counts for nothing.
func TestPodPhaseWithSidecars(t *testing.T) {
	yes, no := true, false
	startedSC := v1.ContainerStatus{Started: &yes, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	startingSC := v1.ContainerStatus{Started: &no, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	creating := v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}
	killed := v1.ContainerStatus{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137}}}
	running := v1.ContainerStatus{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	ok := v1.ContainerStatus{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}}
	bad := v1.ContainerStatus{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}
	tests := []struct {
		name    string
		policy  v1.RestartPolicy
		sidecar v1.ContainerStatus
		app     v1.ContainerStatus
		want    v1.PodPhase
	}{
		{"sidecar starting", v1.RestartPolicyAlways, startingSC, creating, v1.PodPending},
		{"sidecar not created", v1.RestartPolicyAlways, creating, creating, v1.PodPending},
		{"both running", v1.RestartPolicyAlways, startedSC, running, v1.PodRunning},
		{"app done, sidecar running", v1.RestartPolicyNever, startedSC, ok, v1.PodRunning},
		{"app done, sidecar stopped", v1.RestartPolicyNever, killed, ok, v1.PodSucceeded},
		{"app failed, sidecar stopped", v1.RestartPolicyNever, killed, bad, v1.PodFailed},
		{"app running, sidecar restarting", v1.RestartPolicyAlways, startingSC, running, v1.PodRunning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("phase", withSidecars("proxy"), func(p *v1.Pod) { p.Spec.RestartPolicy = tc.policy })
			if got := podPhase(pod, []v1.ContainerStatus{tc.sidecar}, []v1.ContainerStatus{tc.app}, false); got != tc.want {
				t.Fatalf("phase = %s, want %s", got, tc.want)
			}
		})
	}
}

// Admission counts a pod's sidecars as upstream does: beside the app
// containers, and under every init container that starts after them.
func TestPodRequestCountsSidecars(t *testing.T) {
	cpu := func(s string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(s)}}
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"sidecar beside the app", testPod("a", withSidecars("proxy"), func(p *v1.Pod) {
			p.Spec.InitContainers[0].Resources = cpu("300m")
			p.Spec.Containers[0].Resources = cpu("200m")
		}), "500m"},
		{"init container after a sidecar", testPod("b", withSidecars("proxy"), func(p *v1.Pod) {
			p.Spec.InitContainers[0].Resources = cpu("300m")
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "setup", Image: testImage, Resources: cpu("1")})
			p.Spec.Containers[0].Resources = cpu("200m")
		}), "1300m"},
		{"plain init container", testPod("c", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: testImage, Resources: cpu("1")}}
			p.Spec.Containers[0].Resources = cpu("200m")
		}), "1"},
		{"pod-level resources", testPod("d", func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}
			p.Spec.Containers[0].Resources = cpu("200m")
		}), "2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := podRequests(tc.pod)[v1.ResourceCPU]
			if want := resource.MustParse(tc.want); got.Cmp(want) != 0 {
				t.Fatalf("cpu request %s, want %s", got.String(), tc.want)
			}
		})
	}
}

// A pod whose last init container is a started sidecar has initialized, as
// upstream's status manager reads it when the pod ends: its app containers
// that never ran are then reported ContainerStatusUnknown.
func TestPodWithStartedSidecarLastHasInitialized(t *testing.T) {
	yes := true
	pod := testPod("init", withSidecars("proxy"))
	pod.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "proxy", Started: &yes,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "main",
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	if !hasPodInitialized(pod) {
		t.Fatal("a pod whose last init container is a started sidecar has not initialized")
	}
	no := false
	pod.Status.InitContainerStatuses[0].Started = &no
	if hasPodInitialized(pod) {
		t.Fatal("a pod whose sidecar has not started has initialized")
	}
}
