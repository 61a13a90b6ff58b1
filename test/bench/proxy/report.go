package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/kube-lite/kube-lite/test/bench/harness"
)

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// figure is one column of the tables, read from a result.
type figure struct {
	name string
	get  func(result) float64
	// aim is the kube-lite / upstream ratio issue 21 asks for (0: none).
	aim float64
}

var figures = []figure{
	{"full sync, start → all cluster IPs in the ruleset (s)", func(r result) float64 { return r.startToRules.Seconds() }, 0.5},
	{"first sync by its own histogram (s)", func(r result) float64 { return r.firstSync.Seconds() }, 0.5},
	{"floor: nft -f of its complete ruleset (s)", func(r result) float64 { return r.nftFloor.Seconds() }, 0},
	{"change → rules p50 (ms)", func(r result) float64 { return msOf(harness.Percentile(r.changes, 0.50)) }, 0},
	{"change → rules p99 (ms)", func(r result) float64 { return msOf(harness.Percentile(r.changes, 0.99)) }, 1},
	{"sync after a change, mean by its histogram (ms)", func(r result) float64 { return r.syncs.mean() * 1000 }, 0},
	{"network programming p50 by its histogram (ms)", func(r result) float64 { return r.programming.quantile(0.50) * 1000 }, 0},
	{"network programming p99 by its histogram (ms)", func(r result) float64 { return r.programming.quantile(0.99) * 1000 }, 0},
	{"RSS peak (MiB)", func(r result) float64 { return r.peakRSS }, 0},
	{"RSS idle after the changes (MiB)", func(r result) float64 { return r.idle }, 0},
}

// byProxy finds a proxy's result in a round.
func byProxy(rs []result, name string) (result, bool) {
	for _, r := range rs {
		if r.proxy == name {
			return r, true
		}
	}
	return result{}, false
}

func printRound(out io.Writer, rs []result) {
	fmt.Fprintf(out, "%-52s", "")
	for _, r := range rs {
		fmt.Fprintf(out, " %12s", r.proxy)
	}
	both := len(rs) == 2
	if both {
		fmt.Fprintf(out, " %12s", "ratio")
	}
	fmt.Fprintln(out)
	for _, f := range figures {
		fmt.Fprintf(out, "%-52s", f.name)
		for _, r := range rs {
			fmt.Fprintf(out, " %12s", num(f.get(r)))
		}
		if both {
			fmt.Fprintf(out, " %12s", ratio(f.get(rs[0])/f.get(rs[1]), f.aim))
		}
		fmt.Fprintln(out)
	}
}

// printSummary prints each figure's median and range over the rounds, per
// proxy and as the kube-lite / upstream ratio of each round.
func printSummary(out io.Writer, rounds [][]result) {
	fmt.Fprintf(out, "\nover %d rounds, order alternating: median (range)\n", len(rounds))
	names := []string{}
	for _, r := range rounds[0] {
		names = append(names, r.proxy)
	}
	fmt.Fprintf(out, "%-52s", "")
	for _, n := range names {
		fmt.Fprintf(out, " %24s", n)
	}
	both := len(names) == 2
	if both {
		fmt.Fprintf(out, " %26s", "kube-lite / upstream")
	}
	fmt.Fprintln(out)
	for _, f := range figures {
		fmt.Fprintf(out, "%-52s", f.name)
		var ratios []float64
		for _, n := range names {
			var v []float64
			for _, rs := range rounds {
				if r, ok := byProxy(rs, n); ok {
					v = append(v, f.get(r))
				}
			}
			med, lo, hi := medianRange(v)
			fmt.Fprintf(out, " %24s", fmt.Sprintf("%s (%s–%s)", num(med), num(lo), num(hi)))
		}
		if both {
			for _, rs := range rounds {
				ours, ok1 := byProxy(rs, names[0])
				up, ok2 := byProxy(rs, names[1])
				if ok1 && ok2 {
					ratios = append(ratios, f.get(ours)/f.get(up))
				}
			}
			med, lo, hi := medianRange(ratios)
			fmt.Fprintf(out, " %26s", fmt.Sprintf("%s (%.2f–%.2f×)", ratio(med, f.aim), lo, hi))
		}
		fmt.Fprintln(out)
	}
}

func medianRange(v []float64) (med, lo, hi float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return (v[(len(v)-1)/2] + v[len(v)/2]) / 2, v[0], v[len(v)-1]
}

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// ratio prints a kube-lite / upstream ratio, marked when it misses its aim.
func ratio(v, aim float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := fmt.Sprintf("%.2f×", v)
	if aim > 0 {
		if v <= aim {
			s += " ok"
		} else {
			s += " MISS"
		}
	}
	return s
}
