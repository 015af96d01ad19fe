//go:build browserbench

package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
)

// Targets: how much ferry may cost over the raw floor, as a ratio of times ferry/raw.
const (
	maxFirstReplyRatio = 2.0
	maxRoundTripRatio  = 1.2
	// The chunked reply's target was set as throughput ≥ 0.8× raw: time ≤ 1.25×.
	maxChunkedRatio = 1.25
)

type namedResult struct {
	name string
	r    result
}

// quantile is measure.js's: the sample at floor(p·n) of the sorted samples.
func quantile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// A figure of a measure: wall time (round trips: p50b, the median of means of ten
// calls; first and chunked replies: p50), or the host's processor time.
type figureOf func(s stats, roundTrip bool) float64

func wallTime(s stats, roundTrip bool) float64 {
	if roundTrip {
		return s.P50B
	}
	return s.P50
}

func cpuTime(s stats, _ bool) float64 { return s.CPU }

// writeRatioTable prints every measure with its ratio ferry/raw, one column pair per
// ferry client, and with judge the target and whether it was met. The targets are
// the browser's: through Chromium both hosts pay the browser's own costs, over pipes
// the first reply is mostly the process start.
func writeRatioTable(w io.Writer, p plan, raw result, ferries []namedResult, fig figureOf, judge bool) {
	type measure struct {
		label  string
		target float64
		pick   func(result) (float64, bool)
	}
	ms := []measure{{"first reply", maxFirstReplyRatio, func(r result) (float64, bool) {
		if r.First == nil {
			return 0, false
		}
		return fig(*r.First, false), true
	}}}
	for _, sz := range p.Sizes {
		key := strconv.Itoa(sz[0])
		ms = append(ms, measure{"rtt " + sizeName(sz[0]), maxRoundTripRatio, func(r result) (float64, bool) {
			s, ok := r.Sizes[key]
			return fig(s, true), ok
		}})
	}
	ms = append(ms, measure{sizeName(p.ChunkSize) + " chunked", maxChunkedRatio, func(r result) (float64, bool) {
		return fig(r.Chunked, false), r.Chunked.N > 0
	}})

	target := "target"
	if !judge {
		target = ""
	}
	fmt.Fprintf(w, "\n%-14s %-7s %10s", "ferry / raw", target, "raw ms")
	for _, f := range ferries {
		fmt.Fprintf(w, "   %-28s", f.name)
	}
	fmt.Fprintln(w)
	for _, m := range ms {
		rv, ok := m.pick(raw)
		if !ok {
			continue
		}
		target := "≤ " + strconv.FormatFloat(m.target, 'f', -1, 64) + "×"
		if !judge {
			target = ""
		}
		fmt.Fprintf(w, "%-14s %-7s %10s", m.label, target, figure(rv))
		for _, f := range ferries {
			v, ok := m.pick(f.r)
			if !ok {
				fmt.Fprintf(w, "   %-28s", "—")
				continue
			}
			ratio := v / rv
			verdict := ""
			switch {
			case !judge:
			case ratio > m.target:
				verdict = "MISSED"
			default:
				verdict = "ok"
			}
			fmt.Fprintf(w, "   %9s ms %5.2f× %-6s  ", figure(v), ratio, verdict)
		}
		fmt.Fprintln(w)
	}
}

// figure prints a time with three significant digits' worth of decimals.
func figure(ms float64) string {
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms, 'f', 3, 64)
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 2, 64)
	default:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	}
}
