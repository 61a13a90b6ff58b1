package kubelet

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	crifake "github.com/kube-lite/kube-lite/pkg/kubelet/cri/fake"
)

func TestStatusReportsTheObservedGeneration(t *testing.T) {
	h := newHarness(t)
	pod := testPod("gen", func(p *v1.Pod) { p.Generation = 3 })
	h.add(pod)
	h.sync(pod)
	s := h.status(pod)
	if s.ObservedGeneration != 3 {
		t.Errorf("status.observedGeneration = %d, want 3", s.ObservedGeneration)
	}
	for _, c := range s.Conditions {
		if c.Type != v1.PodScheduled && c.ObservedGeneration != 3 {
			t.Errorf("condition %s observedGeneration = %d, want 3", c.Type, c.ObservedGeneration)
		}
	}
}

func TestReadinessGatesHoldReadyAndOthersConditionsAreKept(t *testing.T) {
	h := newHarness(t)
	pod := testPod("gated", func(p *v1.Pod) {
		p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb-ready"}}
		p.Status.Conditions = []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue},
			{Type: v1.DisruptionTarget, Status: v1.ConditionFalse, Reason: "Testing"},
		}
	})
	h.add(pod)
	h.sync(pod)
	ready := func() v1.PodCondition {
		for _, c := range h.status(pod).Conditions {
			if c.Type == v1.PodReady {
				return c
			}
		}
		t.Fatal("no Ready condition")
		return v1.PodCondition{}
	}
	if c := ready(); c.Status != v1.ConditionFalse || c.Reason != "ReadinessGatesNotReady" ||
		c.Message != `corresponding condition of pod readiness gate "example.com/lb-ready" does not exist.` {
		t.Fatalf("Ready without the gate's condition: %+v", c)
	}
	if condition(h.status(pod), v1.ContainersReady) != v1.ConditionTrue {
		t.Fatal("ContainersReady should not depend on readiness gates")
	}
	if condition(h.status(pod), v1.DisruptionTarget) != v1.ConditionFalse {
		t.Fatalf("the DisruptionTarget condition was dropped: %+v", h.status(pod).Conditions)
	}

	// A controller sets the gate's condition: that change alone needs a sync.
	gated := pod.DeepCopy()
	gated.Status.Conditions = append(gated.Status.Conditions, v1.PodCondition{Type: "example.com/lb-ready", Status: v1.ConditionFalse})
	if !otherConditionsChanged(pod, gated) {
		t.Fatal("a readiness gate's condition change would not sync the pod")
	}
	h.kl.podChanged(gated)
	h.sync(gated)
	if c := ready(); c.Status != v1.ConditionFalse ||
		c.Message != `the status of pod readiness gate "example.com/lb-ready" is not "True", but False` {
		t.Fatalf("Ready with the gate False: %+v", c)
	}
	open := gated.DeepCopy()
	open.Status.Conditions[2].Status = v1.ConditionTrue
	h.kl.podChanged(open)
	h.sync(open)
	if c := ready(); c.Status != v1.ConditionTrue {
		t.Fatalf("Ready with the gate True: %+v", c)
	}
	if condition(h.status(pod), "example.com/lb-ready") != v1.ConditionTrue {
		t.Fatalf("the gate's condition is not kept in the status: %+v", h.status(pod).Conditions)
	}
}

// kubectl describe lists conditions in the order the status has them;
// upstream's kubelet writes them in this one.
func TestConditionsComeInUpstreamOrder(t *testing.T) {
	h := newHarness(t)
	pod := testPod("ordered")
	h.add(pod)
	h.sync(pod)
	var got []v1.PodConditionType
	for _, c := range h.status(pod).Conditions {
		got = append(got, c.Type)
	}
	want := []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled}
	if !slices.Equal(got, want) {
		t.Fatalf("conditions %v, want %v", got, want)
	}
}

// pullSpy reports the pod's status as the kubelet published it when a pull
// begins.
type pullSpy struct {
	*crifake.Runtime
	during func()
}

func (p pullSpy) PullImage(ctx context.Context, image string, sb *runtimeapi.PodSandboxConfig) (string, error) {
	p.during()
	return p.Runtime.PullImage(ctx, image, sb)
}

// In a pod with init containers, an app container not yet created waits
// with PodInitializing even once they are done, as upstream shows it (kubectl
// get: PodInitializing while its image is pulled); it said ContainerCreating.
func TestAppContainerOfAPodWithInitContainersWaitsPodInitializing(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var h *harness
	var seen *v1.ContainerStateWaiting
	pod := testPod("pullinit", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: testImage}}
		p.Spec.Containers[0].Image = "kube-lite.local/app:1"
	})
	rt := pullSpy{Runtime: crifake.New(clk, testImage), during: func() { seen = h.status(pod).ContainerStatuses[0].State.Waiting }}
	rt.AllowPull("kube-lite.local/app:1")
	h = newHarnessWith(t, clk, rt.Runtime, func(d *Deps) { d.Runtime = rt })
	h.add(pod)
	h.sync(pod)
	h.rt.Exit(h.running(pod, "setup").Id, 0)
	h.sync(pod)
	if seen == nil || seen.Reason != "PodInitializing" {
		t.Fatalf("main while its image was pulled: %+v, want waiting PodInitializing", seen)
	}
	if h.running(pod, "main") == nil {
		t.Fatal("main did not start after the pull")
	}
}
