package kubelet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	crifake "github.com/kube-lite/kube-lite/pkg/kubelet/cri/fake"
)

// notFoundPull fails like containerd does for a tag that does not exist,
// behind the kubelet's own wrapping of CRI errors.
type notFoundPull struct{ *crifake.Runtime }

func (notFoundPull) PullImage(_ context.Context, image string, _ *runtimeapi.PodSandboxConfig) (string, error) {
	return "", fmt.Errorf("CRI PullImage %s: %w", image, status.Error(codes.NotFound, "failed to pull and unpack image: not found"))
}

// A user reads why a pull failed in the runtime's words, and the back-off
// that follows still says why.
func TestPullFailuresQuoteTheRuntime(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := notFoundPull{crifake.New(clk, testImage)}
	h := newHarnessWith(t, clk, rt.Runtime, func(d *Deps) { d.Runtime = rt })
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	pod := testPod("missing", func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry.example/app:nope" })
	h.add(pod)

	const runtimeSaid = "rpc error: code = NotFound desc = failed to pull and unpack image: not found"
	h.sync(pod)
	w := h.status(pod).ContainerStatuses[0].State.Waiting
	if w == nil || w.Reason != "ErrImagePull" || w.Message != runtimeSaid {
		t.Fatalf("waiting %+v, want ErrImagePull: %s", w, runtimeSaid)
	}
	h.sync(pod) // within the back-off
	w = h.status(pod).ContainerStatuses[0].State.Waiting
	want := `Back-off pulling image "registry.example/app:nope": ErrImagePull: ` + runtimeSaid
	if w == nil || w.Reason != "ImagePullBackOff" || w.Message != want {
		t.Fatalf("waiting %+v, want ImagePullBackOff: %s", w, want)
	}
	events := strings.Join(drainEvents(rec), "\n")
	if !strings.Contains(events, `Warning Failed Failed to pull image "registry.example/app:nope": `+runtimeSaid) {
		t.Fatalf("events:\n%s", events)
	}
}

// An image name no registry could serve waits with upstream's
// InvalidImageName and its message, and nothing is pulled; the runtime's
// parse error went through the pull back-off as ErrImagePull.
func TestInvalidImageNameIsNotPulled(t *testing.T) {
	h := newHarness(t)
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	pod := testPod("upper", func(p *v1.Pod) { p.Spec.Containers[0].Image = "UPPER:Case" })
	h.add(pod)
	h.sync(pod)
	h.sync(pod)
	w := h.status(pod).ContainerStatuses[0].State.Waiting
	const want = `Failed to apply default image tag "UPPER:Case": couldn't parse image name "UPPER:Case": ` +
		`invalid reference format: repository name (library/UPPER) must be lowercase`
	if w == nil || w.Reason != "InvalidImageName" || w.Message != want {
		t.Fatalf("waiting %+v, want InvalidImageName: %s", w, want)
	}
	if n := h.rt.Calls["PullImage"]; n != 0 {
		t.Fatalf("%d pulls of an invalid name", n)
	}
	events := strings.Join(drainEvents(rec), "\n")
	if !strings.Contains(events, "Warning InspectFailed "+want) || !strings.Contains(events, "Warning Failed Error: InvalidImageName") {
		t.Fatalf("events:\n%s", events)
	}
}

// An image named without a tag is pulled as upstream pulls it, with the
// default tag, and the pull's events name it so; the Pulled event gives the
// time with and without waiting and the image's size, in upstream's words.
func TestPullEventsNameTheImageWithItsDefaultTag(t *testing.T) {
	h := newHarness(t)
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	pod := testPod("untagged", func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry.example/app" })
	h.add(pod)
	h.sync(pod)
	events := strings.Join(drainEvents(rec), "\n")
	if !strings.Contains(events, `Normal Pulling Pulling image "registry.example/app:latest"`) ||
		!strings.Contains(events, `Warning Failed Failed to pull image "registry.example/app:latest": `) {
		t.Fatalf("events:\n%s", events)
	}
	h.sync(pod)
	if w := h.status(pod).ContainerStatuses[0].State.Waiting; w == nil || !strings.HasPrefix(w.Message, `Back-off pulling image "registry.example/app:latest": ErrImagePull: `) {
		t.Fatalf("waiting %+v", w)
	}
	h.clock.Step(time.Minute)
	h.rt.AllowPull("registry.example/app:latest")
	drainEvents(rec)
	h.sync(pod)
	events = strings.Join(drainEvents(rec), "\n")
	if !strings.Contains(events, `Normal Pulled Successfully pulled image "registry.example/app:latest" in 0s (0s including waiting). Image size: 0 bytes.`) {
		t.Fatalf("events:\n%s", events)
	}
}
