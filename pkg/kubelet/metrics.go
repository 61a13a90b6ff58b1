package kubelet

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the kubelet's Prometheus metrics, with upstream's names.
type Metrics struct {
	Registry          *prometheus.Registry
	PodStartDuration  prometheus.Histogram
	RunningPods       prometheus.Gauge
	RunningContainers prometheus.Gauge
	RuntimeOps        *prometheus.CounterVec
	RuntimeOpErrors   *prometheus.CounterVec
	RuntimeOpDuration *prometheus.HistogramVec
	SyncDuration      prometheus.Histogram
}

// NewMetrics registers the kubelet's metrics on a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		PodStartDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pod_start_duration_seconds",
			Help:    "Duration in seconds from the kubelet seeing a pod for the first time to the pod starting to run.",
			Buckets: []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 60},
		}),
		RunningPods:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_running_pods", Help: "Number of pods that have a running pod sandbox."}),
		RunningContainers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_running_containers", Help: "Number of running containers."}),
		RuntimeOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_runtime_operations_total", Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		RuntimeOpErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_runtime_operations_errors_total", Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
		RuntimeOpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubelet_runtime_operations_duration_seconds", Help: "Duration in seconds of runtime operations by operation type.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"operation_type"}),
		SyncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pod_worker_duration_seconds", Help: "Duration in seconds to sync a single pod.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
	}
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Registry.MustRegister(m.PodStartDuration, m.RunningPods, m.RunningContainers, m.RuntimeOps, m.RuntimeOpErrors, m.RuntimeOpDuration, m.SyncDuration)
	return m
}

func (m *Metrics) op(name string, err error) {
	m.RuntimeOps.WithLabelValues(name).Inc()
	if err != nil {
		m.RuntimeOpErrors.WithLabelValues(name).Inc()
	}
}

func (m *Metrics) timedOp(name string, took time.Duration, err error) {
	m.op(name, err)
	m.RuntimeOpDuration.WithLabelValues(name).Observe(took.Seconds())
}
