package kubelet

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"

	crifake "github.com/kube-lite/kube-lite/pkg/kubelet/cri/fake"
	"github.com/kube-lite/kube-lite/pkg/kubelet/prober"
)

// stopSpy calls onStop before each StopContainer.
type stopSpy struct {
	*crifake.Runtime
	onStop func(id string)
}

func (s *stopSpy) StopContainer(ctx context.Context, id string, timeout int64) error {
	s.onStop(id)
	return s.Runtime.StopContainer(ctx, id, timeout)
}

func TestProbesStopBeforeADeletedPodsContainersAreStopped(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	spy := &stopSpy{Runtime: crifake.New(clk, testImage)}
	h := newHarnessWith(t, clk, spy.Runtime, func(d *Deps) { d.Runtime = spy })
	probed := false
	spy.onStop = func(id string) {
		if _, ok := h.kl.probes.Result(id, prober.Liveness); ok {
			probed = true
		}
	}
	pod := testPod("probed", func(p *v1.Pod) {
		p.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	})
	h.add(pod)
	h.sync(pod)
	if _, ok := h.kl.probes.Result(h.running(pod, "main").Id, prober.Liveness); !ok {
		t.Fatal("no liveness worker for the running container")
	}
	deleting := pod.DeepCopy()
	now := metav1.NewTime(clk.Now())
	deleting.DeletionTimestamp = &now
	h.kl.podChanged(deleting)
	h.sync(deleting)
	if probed {
		t.Fatal("the liveness probe still ran while the container was being stopped")
	}
}

// deleteAndSync marks pod as being deleted, as the API's graceful delete
// does, and runs the sync that terminates it.
func (h *harness) deleteAndSync(pod *v1.Pod) {
	h.t.Helper()
	deleting := pod.DeepCopy()
	now := metav1.NewTime(h.clock.Now())
	deleting.DeletionTimestamp = &now
	grace := int64(30)
	deleting.DeletionGracePeriodSeconds = &grace
	h.kl.podChanged(deleting)
	if _, done := h.sync(deleting); !done {
		h.t.Fatal("termination did not finish")
	}
}

// patchedStatus is the pod status a status patch of the kubelet sets.
func (h *harness) patchedStatus(a clienttesting.PatchActionImpl) v1.PodStatus {
	h.t.Helper()
	var body struct {
		Status v1.PodStatus `json:"status"`
	}
	if err := json.Unmarshal(a.Patch, &body); err != nil {
		h.t.Fatal(err)
	}
	return body.Status
}

// terminalPatchBeforeDelete returns the status the kubelet last patched
// before its final delete of the pod; it fails the test if the pod was not
// deleted or no patch came before.
func (h *harness) terminalPatchBeforeDelete(pod *v1.Pod) v1.PodStatus {
	h.t.Helper()
	var last *v1.PodStatus
	for _, a := range h.client.Actions() {
		switch a := a.(type) {
		case clienttesting.PatchActionImpl:
			if a.Subresource != "status" || a.Name != pod.Name {
				continue
			}
			s := h.patchedStatus(a)
			last = &s
		case clienttesting.DeleteActionImpl:
			if a.Name != pod.Name || a.Resource.Resource != "pods" {
				continue
			}
			if a.DeleteOptions.GracePeriodSeconds == nil || *a.DeleteOptions.GracePeriodSeconds != 0 {
				h.t.Fatalf("final delete with grace %v, want 0", a.DeleteOptions.GracePeriodSeconds)
			}
			if last == nil {
				h.t.Fatal("the pod was deleted before any status was patched")
			}
			return *last
		}
	}
	h.t.Fatal("the pod was never deleted")
	return v1.PodStatus{}
}

func TestADeletedPodIsFailedWithItsKilledContainersBeforeItsFinalDelete(t *testing.T) {
	h := newHarness(t)
	pod := testPod("killed")
	h.add(pod)
	h.sync(pod)
	h.deleteAndSync(pod)
	s := h.terminalPatchBeforeDelete(pod)
	if s.Phase != v1.PodFailed {
		t.Fatalf("phase before the final delete = %s, want Failed", s.Phase)
	}
	term := s.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 137 || term.Reason != "Error" || term.ContainerID == "" {
		t.Fatalf("container state before the final delete = %+v, want terminated with exit code 137", s.ContainerStatuses[0].State)
	}
	if condition(s, v1.PodReady) != v1.ConditionFalse {
		t.Fatalf("Ready = %s, want False", condition(s, v1.PodReady))
	}
}

func TestADeletedPodWhoseContainersExitZeroSucceedsEvenUnderRestartAlways(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	spy := &stopSpy{Runtime: crifake.New(clk, testImage)}
	h := newHarnessWith(t, clk, spy.Runtime, func(d *Deps) { d.Runtime = spy })
	// The process handles SIGTERM and exits 0.
	spy.onStop = func(id string) { spy.Exit(id, 0) }
	pod := testPod("graceful")
	h.add(pod)
	h.sync(pod)
	h.deleteAndSync(pod)
	s := h.terminalPatchBeforeDelete(pod)
	if s.Phase != v1.PodSucceeded {
		t.Fatalf("phase before the final delete = %s, want Succeeded", s.Phase)
	}
	if term := s.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Fatalf("container state = %+v, want terminated Completed", s.ContainerStatuses[0].State)
	}
}

func TestADeletedPodThatNeverStartedIsFailedWithItsContainersUnknown(t *testing.T) {
	h := newHarness(t)
	pod := testPod("never-started")
	h.add(pod)
	// Deleted before its first sync: no sandbox, no container.
	h.deleteAndSync(pod)
	s := h.terminalPatchBeforeDelete(pod)
	if s.Phase != v1.PodFailed {
		t.Fatalf("phase before the final delete = %s, want Failed", s.Phase)
	}
	term := s.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "ContainerStatusUnknown" || term.ExitCode != 137 ||
		term.Message != "The container could not be located when the pod was terminated" {
		t.Fatalf("container state = %+v, want upstream's ContainerStatusUnknown", s.ContainerStatuses[0].State)
	}
}

func TestAForceDeletedPodIsStillKilledAsItsSpecSaysWithItsPreStopHook(t *testing.T) {
	h, spy, _ := newKillLog(t)
	pod := testPod("forced", withPreStop(20, "/bin/drain"))
	h.add(pod)
	h.sync(pod)
	// kubectl delete --force --grace-period=0: gone from the API at once.
	if err := h.client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.kl.podDeleted(pod)
	if _, done := h.sync(pod); !done {
		t.Fatal("the removed pod was not cleaned up")
	}
	if want := []string{"/bin/drain within 20s"}; !slices.Equal(spy.execs, want) {
		t.Fatalf("hooks run = %q, want %q", spy.execs, want)
	}
	if want := []int64{20}; !slices.Equal(spy.stops, want) {
		t.Fatalf("stop timeouts = %v, want %v (the pod's grace period)", spy.stops, want)
	}
	if len(h.containers(pod)) != 0 {
		t.Fatal("the removed pod's containers are left")
	}
}

func TestAPodEvictedForItsEmptyDirStillRunsItsPreStopHook(t *testing.T) {
	h, spy, _ := newKillLog(t)
	limit := resource.MustParse("1Mi")
	pod := testPod("hog", withPreStop(30, "/bin/drain"), func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	})
	h.add(pod)
	h.sync(pod)
	mounts, err := h.volumes.SetUp(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mounts["scratch"], "big"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(10 * time.Second)
	h.sync(pod)
	if s := h.status(pod); s.Reason != "Evicted" {
		t.Fatalf("reason %q, want Evicted", s.Reason)
	}
	// No grace period, but the pod worker's minimum second for the hook.
	if want := []string{"/bin/drain within 1s"}; !slices.Equal(spy.execs, want) {
		t.Fatalf("hooks run = %q, want %q", spy.execs, want)
	}
	if want := []int64{minStopGracePeriodSeconds}; !slices.Equal(spy.stops, want) {
		t.Fatalf("stop timeouts = %v, want %v", spy.stops, want)
	}
}

func TestADeletedPodKeepsTheTerminalPhaseAndReasonItAlreadyHad(t *testing.T) {
	h := newHarness(t)
	huge := testPod("huge", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100000")}
	})
	h.add(huge)
	h.sync(huge) // rejected: Failed, OutOfcpu
	h.deleteAndSync(huge)
	if s := h.terminalPatchBeforeDelete(huge); s.Phase != v1.PodFailed || s.Reason != "OutOfcpu" {
		t.Fatalf("rejected pod deleted as %s %q, want Failed OutOfcpu", s.Phase, s.Reason)
	}
}

func TestADeletedPodWhoseContainersVanishedWhileTheKubeletWasAwayIsFailed(t *testing.T) {
	h := newHarness(t)
	pod := testPod("vanished")
	h.add(pod)
	h.sync(pod)
	seen := pod.DeepCopy()
	seen.Status = h.status(pod) // Running, as the API last heard
	for _, c := range h.containers(pod) {
		if err := h.rt.RemoveContainer(context.Background(), c.Id); err != nil {
			t.Fatal(err)
		}
	}
	// A new kubelet process finds the pod being deleted.
	h2 := newHarnessWith(t, h.clock, h.rt)
	if _, err := h2.client.CoreV1().Pods(seen.Namespace).Create(context.Background(), seen, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h2.deleteAndSync(seen)
	s := h2.terminalPatchBeforeDelete(seen)
	term := s.ContainerStatuses[0].State.Terminated
	if s.Phase != v1.PodFailed || term == nil || term.Reason != "ContainerStatusUnknown" || term.ExitCode != 137 {
		t.Fatalf("deleted as %s with container %+v, want Failed with ContainerStatusUnknown", s.Phase, s.ContainerStatuses[0].State)
	}
}
