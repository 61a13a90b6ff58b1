package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the upstream scheduler metrics kube-lite exports.
type Metrics struct {
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
	pending  map[string]prometheus.Gauge

	preemptionAttempts prometheus.Counter
	preemptionVictims  prometheus.Histogram
}

// Result labels as upstream.
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// NewMetrics registers the metrics on reg (never the global default registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "scheduler", Name: "schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
		}, []string{"result", "profile"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "scheduling_attempt_duration_seconds",
			Help:    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"result", "profile"}),
		pending: map[string]prometheus.Gauge{},
		preemptionAttempts: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "scheduler", Name: "preemption_attempts_total",
			Help: "Total preemption attempts in the cluster till now",
		}),
		preemptionVictims: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "preemption_victims",
			Help:    "Number of selected preemption victims",
			Buckets: prometheus.ExponentialBuckets(1, 2, 7),
		}),
	}
	pending := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "scheduler", Name: "pending_pods",
		Help: "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods; 'gated' means number of gated pods.",
	}, []string{"queue"})
	for _, q := range []string{"active", "backoff", "unschedulable", "gated"} {
		m.pending[q] = pending.WithLabelValues(q)
	}
	for _, c := range []prometheus.Collector{m.attempts, m.duration, pending, m.preemptionAttempts, m.preemptionVictims} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// SetPending implements queue.PendingPodsRecorder.
func (m *Metrics) SetPending(queue string, n int) {
	if g, ok := m.pending[queue]; ok {
		g.Set(float64(n))
	}
}

func (m *Metrics) observe(result, profile string, seconds float64) {
	m.attempts.WithLabelValues(result, profile).Inc()
	m.duration.WithLabelValues(result, profile).Observe(seconds)
}
