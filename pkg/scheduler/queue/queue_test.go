package queue

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"

	. "github.com/kube-lite/kube-lite/pkg/scheduler/framework/fwktest"
)

func priority(p int32) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Spec.Priority = &p } }

func popNames(q *PriorityQueue, n int) []string {
	var out []string
	for range n {
		p := q.Pop()
		out = append(out, p.Pod.Name)
		q.Done(p)
	}
	return out
}

func TestActiveOrder(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	q := New(Options{Clock: clk})
	q.Add(Pod("old-low", priority(0)))
	clk.Step(time.Second)
	q.Add(Pod("new-high", priority(10)))
	clk.Step(time.Second)
	q.Add(Pod("new-low", priority(0)))
	clk.Step(time.Second)
	q.Add(Pod("newest-high", priority(10)))
	got := popNames(q, 4)
	want := []string{"new-high", "newest-high", "old-low", "new-low"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pop order %v, want %v", got, want)
		}
	}
}

func TestBackoffDoubles(t *testing.T) {
	tests := []struct {
		attempts int
		want     time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second}, {5, 10 * time.Second}, {9, 10 * time.Second}}
	q := New(Options{Clock: clocktesting.NewFakeClock(time.Now())})
	for _, tt := range tests {
		if got := q.backoffDuration(&QueuedPodInfo{Attempts: tt.attempts}); got != tt.want {
			t.Errorf("attempts %d: backoff %v, want %v", tt.attempts, got, tt.want)
		}
	}
}

func TestUnschedulableMovesOnHelpfulEvent(t *testing.T) {
	const fit, taints = "NodeResourcesFit", "TaintToleration"
	tests := []struct {
		name       string
		rejectedBy string
		event      sets.Set[string]
		wantMoved  bool
	}{
		{"event helps the rejecting plugin", fit, sets.New(fit), true},
		{"event helps another plugin", taints, sets.New(fit), false},
		{"event helps everyone", taints, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			q := New(Options{Clock: clk})
			q.Add(Pod("p"))
			p := q.Pop()
			cycle := q.SchedulingCycle()
			p.UnschedulablePlugins = sets.New(tt.rejectedBy)
			q.AddUnschedulableIfNotPresent(p, cycle, false)
			if a, b, u := q.Lengths(); a != 0 || b != 0 || u != 1 {
				t.Fatalf("after failure: active %d backoff %d unschedulable %d", a, b, u)
			}
			clk.Step(2 * time.Second) // back-off of the first attempt is over
			q.MoveAllToActiveOrBackoffQueue(tt.event)
			a, _, u := q.Lengths()
			if moved := a == 1 && u == 0; moved != tt.wantMoved {
				t.Errorf("moved = %v, want %v", moved, tt.wantMoved)
			}
		})
	}
}

func TestMovedWhileBackingOffWaitsForBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	q := New(Options{Clock: clk})
	q.Add(Pod("p"))
	p := q.Pop()
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle(), false)
	q.MoveAllToActiveOrBackoffQueue(nil)
	if a, b, _ := q.Lengths(); a != 0 || b != 1 {
		t.Fatalf("active %d backoff %d, want the pod backing off", a, b)
	}
	q.FlushBackoffCompleted()
	if a, _, _ := q.Lengths(); a != 0 {
		t.Fatal("pod left back-off early")
	}
	clk.Step(time.Second + time.Millisecond)
	q.FlushBackoffCompleted()
	if a, b, _ := q.Lengths(); a != 1 || b != 0 {
		t.Fatalf("active %d backoff %d after the back-off, want active", a, b)
	}
}

func TestEventDuringAttemptSendsToBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	q := New(Options{Clock: clk})
	q.Add(Pod("p"))
	p := q.Pop()
	cycle := q.SchedulingCycle()
	// A node arrives while the pod is being scheduled against an older snapshot.
	q.MoveAllToActiveOrBackoffQueue(nil)
	q.AddUnschedulableIfNotPresent(p, cycle, false)
	if _, b, u := q.Lengths(); b != 1 || u != 0 {
		t.Fatalf("backoff %d unschedulable %d: want back-off, not waiting for another event", b, u)
	}
}

func TestDeletedInFlightIsNotRequeued(t *testing.T) {
	q := New(Options{Clock: clocktesting.NewFakeClock(time.Now())})
	pod := Pod("p")
	q.Add(pod)
	p := q.Pop()
	q.Delete(pod)
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle(), true)
	if a, b, u := q.Lengths(); a+b+u != 0 {
		t.Fatalf("deleted pod came back: active %d backoff %d unschedulable %d", a, b, u)
	}
}

func TestUpdateOfUnschedulableSpecRetries(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	q := New(Options{Clock: clk})
	old := Pod("p")
	q.Add(old)
	p := q.Pop()
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle(), false)
	clk.Step(2 * time.Second)

	statusOnly := old.DeepCopy()
	statusOnly.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	q.Update(old, statusOnly)
	if a, _, u := q.Lengths(); a != 0 || u != 1 {
		t.Fatalf("status update moved the pod: active %d unschedulable %d", a, u)
	}
	newSpec := statusOnly.DeepCopy()
	newSpec.Spec.NodeSelector = map[string]string{"zone": "a"}
	q.Update(statusOnly, newSpec)
	if a, _, u := q.Lengths(); a != 1 || u != 0 {
		t.Fatalf("spec update did not retry: active %d unschedulable %d", a, u)
	}
	if got := q.Pop(); got.Pod.Spec.NodeSelector["zone"] != "a" {
		t.Error("popped the stale pod")
	}
}

func TestCloseUnblocksPop(t *testing.T) {
	q := New(Options{})
	done := make(chan *QueuedPodInfo)
	go func() { done <- q.Pop() }()
	q.Close()
	if p := <-done; p != nil {
		t.Fatalf("Pop after Close = %v, want nil", p)
	}
}

func TestSchedulingGates(t *testing.T) {
	q := New(Options{Clock: clocktesting.NewFakeClock(time.Now())})
	gated := Pod("p", func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}} })
	q.Add(gated)
	if a, _, _ := q.Lengths(); a != 0 || q.Gated() != 1 {
		t.Fatalf("gated pod is active (active %d, gated %d)", a, q.Gated())
	}
	q.MoveAllToActiveOrBackoffQueue(nil)
	if a, _, _ := q.Lengths(); a != 0 {
		t.Fatal("cluster event released a gated pod")
	}
	released := gated.DeepCopy()
	released.Spec.SchedulingGates = nil
	q.Update(gated, released)
	if a, _, _ := q.Lengths(); a != 1 || q.Gated() != 0 {
		t.Fatalf("after removing the gate: active %d, gated %d", a, q.Gated())
	}
}
