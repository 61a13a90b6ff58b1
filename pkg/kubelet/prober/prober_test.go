package prober

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"
)

type scriptedRunner struct {
	mu      sync.Mutex
	results []Result
	calls   int
}

func (s *scriptedRunner) Run(context.Context, Target, *v1.Probe) (Result, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.results[s.calls%len(s.results)]
	s.calls++
	return r, "scripted"
}

func testPod(c v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metaUID("p1"), Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}

func TestThresholdsDecideTheReportedResult(t *testing.T) {
	tests := []struct {
		name     string
		kind     Kind
		probe    v1.Probe
		outcomes []Result
		want     []Result // reported result after each outcome
	}{
		{
			name: "liveness fails only after failureThreshold failures in a row", kind: Liveness,
			probe:    v1.Probe{FailureThreshold: 3},
			outcomes: []Result{Failure, Failure, Success, Failure, Failure, Failure},
			want:     []Result{Success, Success, Success, Success, Success, Failure},
		},
		{
			name: "readiness needs successThreshold successes to turn ready", kind: Readiness,
			probe:    v1.Probe{SuccessThreshold: 2, FailureThreshold: 1},
			outcomes: []Result{Success, Success, Failure, Success, Success},
			want:     []Result{Failure, Success, Failure, Failure, Success},
		},
		{
			name: "default failure threshold is 3", kind: Readiness,
			probe:    v1.Probe{},
			outcomes: []Result{Success, Failure, Failure, Failure},
			want:     []Result{Success, Success, Success, Failure},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.NewFakeClock(time.Now())
			m := NewManager(clk, nil, nil, nil)
			c := v1.Container{Name: "c"}
			w := newWorker(m, tc.kind, &tc.probe, Target{Pod: testPod(c), Container: &c, ContainerID: "id"}, clk.Now())
			k := key{"id", tc.kind}
			m.workers[k] = w
			m.results[k] = w.initial()
			for i, o := range tc.outcomes {
				if r, changed := w.observe(o); changed {
					m.set(k, r)
				}
				if got, _ := m.Result("id", tc.kind); got != tc.want[i] {
					t.Fatalf("after outcome %d (%v): reported %v, want %v", i, o, got, tc.want[i])
				}
			}
		})
	}
}

func TestInitialDelayAndStartupGateProbing(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	runner := &scriptedRunner{results: []Result{Success}}
	changed := make(chan types.UID, 10)
	m := NewManager(clk, runner, nil, func(uid types.UID) { changed <- uid })
	c := v1.Container{
		Name:           "c",
		ReadinessProbe: &v1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 1},
		StartupProbe:   &v1.Probe{PeriodSeconds: 1, FailureThreshold: 10},
	}
	pod := testPod(c)
	m.Sync(context.Background(), pod, "10.0.0.1", nil)
	ready := newWorker(m, Readiness, c.ReadinessProbe, Target{Pod: pod, Container: &pod.Spec.Containers[0], ContainerID: "id"}, clk.Now())
	startup := newWorker(m, Startup, c.StartupProbe, Target{Pod: pod, Container: &pod.Spec.Containers[0], ContainerID: "id"}, clk.Now())
	m.workers[key{"id", Readiness}], m.results[key{"id", Readiness}] = ready, Failure
	m.workers[key{"id", Startup}], m.results[key{"id", Startup}] = startup, Unknown

	// Readiness waits for startup.
	ready.doProbe(context.Background())
	if runner.calls != 0 {
		t.Fatalf("readiness probed before the startup probe succeeded")
	}
	startup.doProbe(context.Background())
	if r, _ := m.Result("id", Startup); r != Success {
		t.Fatalf("startup = %v, want Success", r)
	}
	<-changed
	// Started, but still within the initial delay.
	ready.doProbe(context.Background())
	if r, _ := m.Result("id", Readiness); r != Failure || runner.calls != 1 {
		t.Fatalf("readiness = %v after %d probes, want Failure and no probe within initialDelay", r, runner.calls)
	}
	clk.Step(5 * time.Second)
	ready.doProbe(context.Background())
	if r, _ := m.Result("id", Readiness); r != Success {
		t.Fatalf("readiness = %v, want Success after the initial delay", r)
	}
	if uid := <-changed; uid != "p1" {
		t.Fatalf("onChange for %q, want p1", uid)
	}
}

func TestSyncStopsWorkersOfGoneContainers(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	m := NewManager(clk, &scriptedRunner{results: []Result{Success}}, nil, nil)
	c := v1.Container{Name: "c", LivenessProbe: &v1.Probe{PeriodSeconds: 1}}
	pod := testPod(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Sync(ctx, pod, "", []Running{{Name: "c", ID: "old", StartedAt: clk.Now()}})
	if _, ok := m.Result("old", Liveness); !ok {
		t.Fatal("no liveness result for a running container with a probe")
	}
	m.Sync(ctx, pod, "", []Running{{Name: "c", ID: "new", StartedAt: clk.Now()}})
	if _, ok := m.Result("old", Liveness); ok {
		t.Fatal("the replaced container still has a probe result")
	}
	if _, ok := m.Result("new", Liveness); !ok {
		t.Fatal("the new container has no probe result")
	}
	m.RemovePod(pod.UID)
	if _, ok := m.Result("new", Liveness); ok {
		t.Fatal("RemovePod kept a result")
	}
}

func metaUID(uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "pod", Namespace: "default", UID: types.UID(uid)}
}
