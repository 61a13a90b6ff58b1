package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The histograms both proxies export under upstream's names.
const (
	syncMetric        = "kubeproxy_sync_proxy_rules_duration_seconds"
	programmingMetric = "kubeproxy_network_programming_duration_seconds"
)

// histogram is one Prometheus histogram as scraped: cumulative counts per
// upper bound (le), sorted by bound, +Inf last.
type histogram struct {
	les    []float64
	counts []float64
	sum    float64
	count  float64
}

// parseHistogram reads the histogram name from a Prometheus text exposition:
// its IPv4 series (both proxies label these two by ip_family; upstream's
// dual-stack proxier has an IPv6 series too, which sees no Service here).
func parseHistogram(text, name string) (histogram, bool) {
	var h histogram
	found := false
	type bucket struct{ le, n float64 }
	var buckets []bucket
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"_") {
			continue
		}
		if strings.Contains(line, `ip_family="`) && !strings.Contains(line, `ip_family="IPv4"`) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		key := line[:i]
		switch {
		case strings.HasPrefix(key, name+"_bucket{"):
			_, rest, ok := strings.Cut(key, `le="`)
			if !ok {
				continue
			}
			leText, _, _ := strings.Cut(rest, `"`)
			le, err := strconv.ParseFloat(leText, 64) // "+Inf" parses as +Inf
			if err != nil {
				continue
			}
			buckets = append(buckets, bucket{le, v})
		case key == name+"_sum" || strings.HasPrefix(key, name+"_sum{"):
			h.sum, found = v, true
		case key == name+"_count" || strings.HasPrefix(key, name+"_count{"):
			h.count, found = v, true
		}
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].le < buckets[j].le })
	for _, b := range buckets {
		h.les, h.counts = append(h.les, b.le), append(h.counts, b.n)
	}
	return h, found
}

// sub is what was observed between prev and h.
func (h histogram) sub(prev histogram) histogram {
	d := histogram{les: h.les, sum: h.sum - prev.sum, count: h.count - prev.count}
	for i := range h.counts {
		c := h.counts[i]
		if i < len(prev.counts) {
			c -= prev.counts[i]
		}
		d.counts = append(d.counts, c)
	}
	return d
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linearly within the bucket it falls in. The buckets are coarse
// (upstream's network programming histogram starts at 0.25 s), so this is
// a cross-check of the bench's own timing, not a replacement for it.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 || len(h.les) == 0 {
		return math.NaN()
	}
	rank := q * h.counts[len(h.counts)-1]
	lower, below := 0.0, 0.0
	for i, le := range h.les {
		if h.counts[i] >= rank {
			if math.IsInf(le, 1) {
				return lower // past the last bound: the last bound is all that is known
			}
			inBucket := h.counts[i] - below
			if inBucket == 0 {
				return le
			}
			return lower + (le-lower)*(rank-below)/inBucket
		}
		lower, below = le, h.counts[i]
	}
	return lower
}

func (h histogram) mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

// scrape fetches a proxy's /metrics.
func scrape(ctx context.Context, c *http.Client, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), nil
}
