package proxy

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are upstream kube-proxy's names, so that its dashboards and the
// network programming SLO read kube-lite-proxy too. Only IPv4 is proxied.
type metrics struct {
	syncDuration        prometheus.Observer
	fullSyncDuration    prometheus.Observer
	partialSyncDuration prometheus.Observer
	lastSync            prometheus.Gauge
	programming         prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	family := []string{"ip_family"}
	sync := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "kubeproxy", Name: "sync_proxy_rules_duration_seconds",
		Help:    "SyncProxyRules latency in seconds",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, family)
	full := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "kubeproxy", Name: "sync_full_proxy_rules_duration_seconds",
		Help:    "SyncProxyRules latency in seconds for full resyncs",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, family)
	partial := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "kubeproxy", Name: "sync_partial_proxy_rules_duration_seconds",
		Help:    "SyncProxyRules latency in seconds for partial resyncs",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, family)
	last := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "kubeproxy", Name: "sync_proxy_rules_last_timestamp_seconds",
		Help: "The last time proxy rules were successfully synced",
	}, family)
	var buckets []float64
	buckets = append(buckets, prometheus.LinearBuckets(0.25, 0.25, 2)...)
	buckets = append(buckets, prometheus.LinearBuckets(1, 1, 59)...)
	buckets = append(buckets, prometheus.LinearBuckets(60, 5, 12)...)
	buckets = append(buckets, prometheus.LinearBuckets(120, 30, 7)...)
	prog := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "kubeproxy", Name: "network_programming_duration_seconds",
		Help:    "In Cluster Network Programming Latency in seconds",
		Buckets: buckets,
	}, family)
	if reg != nil {
		reg.MustRegister(sync, full, partial, last, prog)
	}
	const ipv4 = "IPv4"
	return &metrics{
		syncDuration:        sync.WithLabelValues(ipv4),
		fullSyncDuration:    full.WithLabelValues(ipv4),
		partialSyncDuration: partial.WithLabelValues(ipv4),
		lastSync:            last.WithLabelValues(ipv4),
		programming:         prog.WithLabelValues(ipv4),
	}
}
