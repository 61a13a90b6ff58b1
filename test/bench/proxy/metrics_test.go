package main

import (
	"math"
	"testing"
)

const exposition = `# HELP kubeproxy_network_programming_duration_seconds [ALPHA] In Cluster Network Programming Latency in seconds
# TYPE kubeproxy_network_programming_duration_seconds histogram
kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv4",le="0.25"} 6
kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv4",le="0.5"} 9
kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv4",le="1"} 10
kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv4",le="+Inf"} 10
kubeproxy_network_programming_duration_seconds_sum{ip_family="IPv4"} 2.5
kubeproxy_network_programming_duration_seconds_count{ip_family="IPv4"} 10
kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv6",le="0.25"} 0
kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv6",le="0.5"} 0
kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv6",le="1"} 0
kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv6",le="+Inf"} 0
kubeproxy_network_programming_duration_seconds_sum{ip_family="IPv6"} 0
kubeproxy_network_programming_duration_seconds_count{ip_family="IPv6"} 0
kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="0.001"} 0
kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="+Inf"} 1
kubeproxy_sync_proxy_rules_duration_seconds_sum 0.75
kubeproxy_sync_proxy_rules_duration_seconds_count 1
`

func TestParseHistogram(t *testing.T) {
	for _, tc := range []struct {
		name             string
		count, sum, mean float64
		p50, p99         float64
	}{
		// The IPv6 series (empty) does not replace the IPv4 one.
		{programmingMetric, 10, 2.5, 0.25, 0.25 * 5 / 6, 0.5 + 0.5*(9.9-9)},
		// Unlabelled, one observation past the last finite bound.
		{syncMetric, 1, 0.75, 0.75, 0.001, 0.001},
	} {
		h, ok := parseHistogram(exposition, tc.name)
		if !ok {
			t.Fatalf("%s: not found", tc.name)
		}
		if h.count != tc.count || h.sum != tc.sum || h.mean() != tc.mean {
			t.Errorf("%s: count %v sum %v mean %v, want %v %v %v", tc.name, h.count, h.sum, h.mean(), tc.count, tc.sum, tc.mean)
		}
		for _, q := range []struct{ q, want float64 }{{0.5, tc.p50}, {0.99, tc.p99}} {
			if got := h.quantile(q.q); math.Abs(got-q.want) > 1e-9 {
				t.Errorf("%s: quantile(%v) = %v, want %v", tc.name, q.q, got, q.want)
			}
		}
	}
	if _, ok := parseHistogram(exposition, "kubeproxy_missing_seconds"); ok {
		t.Error("a histogram that is not there was found")
	}
}

func TestHistogramSub(t *testing.T) {
	before, _ := parseHistogram(exposition, programmingMetric)
	after := histogram{les: before.les, counts: []float64{6, 9, 12, 14}, sum: 6.5, count: 14}
	d := after.sub(before)
	if d.count != 4 || d.sum != 4 || d.mean() != 1 {
		t.Errorf("delta count %v sum %v mean %v, want 4 4 1", d.count, d.sum, d.mean())
	}
	// 2 of the 4 in (0.5, 1], 2 past 1: the median is the bucket's top.
	if got := d.quantile(0.5); got != 1 {
		t.Errorf("delta median %v, want 1", got)
	}
	if got := d.quantile(0.99); got != 1 {
		t.Errorf("delta p99 %v, want 1 (the last finite bound)", got)
	}
}
