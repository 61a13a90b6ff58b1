package kubelet

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
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
