package kubelet

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
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
			var body struct {
				Status v1.PodStatus `json:"status"`
			}
			if err := json.Unmarshal(a.Patch, &body); err != nil {
				h.t.Fatal(err)
			}
			last = &body.Status
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
