package kubelet

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	crifake "github.com/kube-lite/kube-lite/pkg/kubelet/cri/fake"
	"github.com/kube-lite/kube-lite/pkg/kubelet/prober"
)

// hangingPull pulls like an unresponsive registry: until the caller gives up.
type hangingPull struct {
	*crifake.Runtime
	started chan struct{}
}

func (p *hangingPull) PullImage(ctx context.Context, image string, _ *runtimeapi.PodSandboxConfig) (string, error) {
	select {
	case p.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return "", fmt.Errorf("pull %s: %w", image, ctx.Err())
}

// A pull from a registry that does not answer may take minutes: the pod shows
// that it waits, and deleting it does not wait for the pull.
func TestAPodPullingItsImageShowsItAndCanBeDeleted(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := &hangingPull{Runtime: crifake.New(clk, testImage), started: make(chan struct{}, 1)}
	h := newHarnessWith(t, clk, rt.Runtime, func(d *Deps) { d.Runtime = rt })
	rec := record.NewFakeRecorder(100)
	h.kl.recorder = rec
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); h.kl.workers.Wait() }()
	h.kl.mu.Lock()
	h.kl.runCtx = ctx
	h.kl.mu.Unlock()

	pod := testPod("slow", func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry.example/slow:1" })
	h.add(pod) // its worker starts the pod and waits on the pull
	select {
	case <-rt.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the pod's image pull never started")
	}
	// While it pulls, the pod says so, with its address.
	st := h.status(pod)
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Waiting == nil ||
		st.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" || st.PodIP == "" || st.StartTime == nil {
		t.Fatalf("status during the pull: %+v, want the container waiting in ContainerCreating, a pod IP and a start time", st)
	}

	deleting := pod.DeepCopy()
	now := metav1.NewTime(clk.Now())
	deleting.DeletionTimestamp = &now
	deleting.DeletionGracePeriodSeconds = new(int64)
	*deleting.DeletionGracePeriodSeconds = 30
	h.kl.podChanged(deleting)

	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := h.client.CoreV1().Pods("default").Get(context.Background(), "slow", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deleted pod is still there: its worker waits on the image pull")
		}
		clk.Step(time.Second)
		time.Sleep(10 * time.Millisecond)
	}
	events := strings.Join(drainEvents(rec), "\n")
	if strings.Contains(events, "Failed") || strings.Contains(events, "BackOff") {
		t.Fatalf("the interrupted pull was reported as a failure:\n%s", events)
	}
}

// countingProbes succeeds and counts its runs.
type countingProbes struct{ runs atomic.Int32 }

func (p *countingProbes) Run(context.Context, prober.Target, *v1.Probe) (prober.Result, string) {
	p.runs.Add(1)
	return prober.Success, ""
}

// Each sync runs under its own context, cancelled when it ends (or when the
// pod is deleted); the probes it starts must go on after it.
func TestProbesOutliveTheSyncThatStartedThem(t *testing.T) {
	probes := &countingProbes{}
	h := newHarness(t, func(d *Deps) { d.Prober = probes })
	pod := testPod("probed", func(p *v1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: 1}
	})
	defer h.kl.probes.RemovePod(pod.UID)
	h.add(pod)
	ctx, cancel := context.WithCancel(context.Background())
	h.kl.syncPod(ctx, string(pod.UID))
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for probes.runs.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the readiness probe ran %d times, then stopped with the sync", probes.runs.Load())
		}
		h.clock.Step(time.Second)
		time.Sleep(10 * time.Millisecond)
	}
}
