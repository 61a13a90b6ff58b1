package kubelet

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

func drainEvents(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestFailedPostStartHookKillsTheContainerAndSaysWhyInItsStatus(t *testing.T) {
	h := newHarness(t)
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	h.rt.ExecResult["false"] = 1
	pod := testPod("hook", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}}
	})
	h.add(pod)
	h.sync(pod)

	if h.running(pod, "main") != nil {
		t.Fatal("the container runs on after its postStart hook failed")
	}
	cs := h.status(pod).ContainerStatuses[0]
	want := `Exec lifecycle hook ([false]) for Container "main" in Pod "hook_default(uid-hook)" failed - error: command 'false' exited with 1: , message: ""`
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "PostStartHookError" || cs.State.Waiting.Message != want {
		t.Fatalf("state %+v, want waiting PostStartHookError: %s", cs.State, want)
	}
	events := strings.Join(drainEvents(rec), "\n")
	// The event leaves the hook's output out, as upstream's does.
	if !strings.Contains(events, "Warning FailedPostStartHook PostStartHook failed\n") ||
		!strings.Contains(events, "Normal Killing FailedPostStartHook") || strings.Contains(events, "Error: ") {
		t.Fatalf("events:\n%s", events)
	}
}

func TestImageErrorsAlsoReportFailedEvents(t *testing.T) {
	h := newHarness(t)
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	never := testPod("never", func(p *v1.Pod) {
		p.Spec.Containers[0].Image = "kube-lite.local/missing:1"
		p.Spec.Containers[0].ImagePullPolicy = v1.PullNever
	})
	pull := testPod("pull", func(p *v1.Pod) { p.Spec.Containers[0].Image = "kube-lite.local/missing:2" })
	for _, p := range []*v1.Pod{never, pull} {
		h.add(p)
		h.sync(p)
	}
	h.sync(pull) // now backed off
	events := strings.Join(drainEvents(rec), "\n")
	for _, want := range []string{
		`Warning ErrImageNeverPull Container image "kube-lite.local/missing:1" is not present with pull policy of Never`,
		"Warning Failed Error: ErrImageNeverPull",
		"Warning Failed Error: ErrImagePull",
		`Normal BackOff Back-off pulling image "kube-lite.local/missing:2"`,
		"Warning Failed Error: ImagePullBackOff",
	} {
		if !strings.Contains(events, want) {
			t.Errorf("no event %q in:\n%s", want, events)
		}
	}
}
