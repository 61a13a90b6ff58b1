package kubelet

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
