package cacher

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts what the watch caches do.
type Metrics struct {
	watches      *prometheus.CounterVec
	terminations *prometheus.CounterVec
	inits        *prometheus.CounterVec
}

// NewMetrics registers the watch cache metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		watches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_watches_total",
			Help: "Counter of watches started, broken out by group, resource and whether the watch cache or storage (etcd) serves them.",
		}, []string{"group", "resource", "source"}),
		terminations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_terminated_watchers_total",
			Help: "Counter of watchers closed due to unresponsiveness broken by group and resource.",
		}, []string{"group", "resource"}),
		inits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_initializations_total",
			Help: "Counter of watch cache initializations broken down by group and resource.",
		}, []string{"group", "resource"}),
	}
	reg.MustRegister(m.watches, m.terminations, m.inits)
	return m
}

func (m *Metrics) watch(gr []string, source string) {
	if m != nil {
		m.watches.WithLabelValues(gr[0], gr[1], source).Inc()
	}
}

func (m *Metrics) terminated(gr []string) {
	if m != nil {
		m.terminations.WithLabelValues(gr...).Inc()
	}
}

func (m *Metrics) initialized(gr []string) {
	if m != nil {
		m.inits.WithLabelValues(gr...).Inc()
	}
}
