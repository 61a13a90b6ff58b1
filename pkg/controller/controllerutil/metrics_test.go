package controllerutil

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestQueueMetricsArePerController(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewQueueMetrics(reg)
	a, b := NewQueue("deployment", m), NewQueue("job", m)
	defer a.ShutDown()
	defer b.ShutDown()
	a.Add("default/x")
	a.Add("default/y")
	b.Add("default/z")
	got := gather(t, reg)
	want := map[string]float64{
		`workqueue_depth{deployment}`: 2, `workqueue_depth{job}`: 1,
		`workqueue_adds_total{deployment}`: 2, `workqueue_adds_total{job}`: 1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// Taking an item out records how long it waited, per queue.
	key, _ := a.Get()
	a.Done(key)
	got = gather(t, reg)
	if got[`workqueue_queue_duration_seconds{deployment}`] != 1 {
		t.Errorf("deployment queue duration observations %v, want 1", got[`workqueue_queue_duration_seconds{deployment}`])
	}
	if got[`workqueue_queue_duration_seconds{job}`] != 0 {
		t.Errorf("job queue duration observations %v, want 0", got[`workqueue_queue_duration_seconds{job}`])
	}
}

// gather flattens the registry to "name{queue}" -> value (sample count for
// histograms).
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" {
					name = l.GetValue()
				}
			}
			key := mf.GetName() + "{" + name + "}"
			switch {
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestExpectations(t *testing.T) {
	tests := []struct {
		name          string
		adds, dels    int
		observeAdds   int
		observeDels   int
		wantSatisfied bool
	}{
		{name: "nothing expected", wantSatisfied: true},
		{name: "creates pending", adds: 2, observeAdds: 1},
		{name: "creates all seen", adds: 2, observeAdds: 2, wantSatisfied: true},
		{name: "deletes pending", dels: 1},
		{name: "deletes seen", dels: 1, observeDels: 1, wantSatisfied: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewExpectations(fakeClock{})
			if tt.adds+tt.dels > 0 {
				e.Expect("k", tt.adds, tt.dels)
			}
			for range tt.observeAdds {
				e.CreationObserved("k")
			}
			for range tt.observeDels {
				e.DeletionObserved("k")
			}
			if got := e.Satisfied("k"); got != tt.wantSatisfied {
				t.Fatalf("Satisfied = %v, want %v", got, tt.wantSatisfied)
			}
		})
	}
}

type fakeClock struct{}

func (fakeClock) Now() time.Time                    { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
func (f fakeClock) Since(t time.Time) time.Duration { return f.Now().Sub(t) }
