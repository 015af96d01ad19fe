// Package metrics counts what the gateway does and writes it in Prometheus' text
// exposition format (version 0.0.4): counters and histograms with labels, and
// gauges. It is small on purpose: the gateway's handful of series do not need a
// client library.
package metrics

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContentType is the exposition format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

type metric interface {
	write(w io.Writer)
}

// Registry is a set of metrics, written in the order they were made.
type Registry struct {
	mu      sync.Mutex
	metrics []metric
}

// Write writes every metric.
func (r *Registry) Write(w io.Writer) {
	r.mu.Lock()
	ms := append([]metric(nil), r.metrics...)
	r.mu.Unlock()
	for _, m := range ms {
		m.write(w)
	}
}

func (r *Registry) add(m metric) {
	r.mu.Lock()
	r.metrics = append(r.metrics, m)
	r.mu.Unlock()
}

type family struct {
	name, help, typ string
	labels          []string
}

func (f *family) header(w io.Writer) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.typ)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}

// labelText is {a="x",b="y"} for the label values, with extra pairs after.
func (f *family) labelText(values []string, extra ...string) string {
	if len(f.labels) == 0 && len(extra) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range f.labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l + `="` + escapeLabel(values[i]) + `"`)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(extra[i] + `="` + escapeLabel(extra[i+1]) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

func key(values []string) string { return strings.Join(values, "\xff") }

// CounterVec is a counter per combination of label values.
type CounterVec struct {
	family
	mu     sync.Mutex
	series map[string]*counterSeries
}

type counterSeries struct {
	values []string
	n      atomic.Uint64
}

// NewCounter makes a counter family.
func (r *Registry) NewCounter(name, help string, labels ...string) *CounterVec {
	c := &CounterVec{family: family{name, help, "counter", labels}, series: map[string]*counterSeries{}}
	r.add(c)
	return c
}

// Add adds n to the series of the label values.
func (c *CounterVec) Add(n uint64, values ...string) {
	if len(values) != len(c.labels) {
		panic(fmt.Sprintf("metrics: %s takes %d labels, got %d", c.name, len(c.labels), len(values)))
	}
	k := key(values)
	c.mu.Lock()
	s := c.series[k]
	if s == nil {
		s = &counterSeries{values: append([]string(nil), values...)}
		c.series[k] = s
	}
	c.mu.Unlock()
	s.n.Add(n)
}

// Inc adds one.
func (c *CounterVec) Inc(values ...string) { c.Add(1, values...) }

// Value reads a series (0 when it has none).
func (c *CounterVec) Value(values ...string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.series[key(values)]; s != nil {
		return s.n.Load()
	}
	return 0
}

func (c *CounterVec) write(w io.Writer) {
	c.header(w)
	c.mu.Lock()
	keys := sortedKeys(c.series)
	for _, k := range keys {
		s := c.series[k]
		fmt.Fprintf(w, "%s%s %d\n", c.name, c.labelText(s.values), s.n.Load())
	}
	c.mu.Unlock()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Gauge is one value that goes up and down.
type Gauge struct {
	family
	v atomic.Int64
}

// NewGauge makes a gauge without labels.
func (r *Registry) NewGauge(name, help string) *Gauge {
	g := &Gauge{family: family{name: name, help: help, typ: "gauge"}}
	r.add(g)
	return g
}

// Add adds d (negative to lower it).
func (g *Gauge) Add(d int64) { g.v.Add(d) }

// Value reads it.
func (g *Gauge) Value() int64 { return g.v.Load() }

func (g *Gauge) write(w io.Writer) {
	g.header(w)
	fmt.Fprintf(w, "%s %d\n", g.name, g.v.Load())
}

// HistogramVec is a histogram per combination of label values.
type HistogramVec struct {
	family
	bounds []float64
	mu     sync.Mutex
	series map[string]*histSeries
}

type histSeries struct {
	values []string
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

// LatencyBuckets suit latencies in seconds, from a millisecond to two minutes.
var LatencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// NewHistogram makes a histogram family with these upper bounds.
func (r *Registry) NewHistogram(name, help string, bounds []float64, labels ...string) *HistogramVec {
	h := &HistogramVec{family: family{name, help, "histogram", labels}, bounds: bounds, series: map[string]*histSeries{}}
	r.add(h)
	return h
}

// Observe records v in the series of the label values.
func (h *HistogramVec) Observe(v float64, values ...string) {
	if len(values) != len(h.labels) {
		panic(fmt.Sprintf("metrics: %s takes %d labels, got %d", h.name, len(h.labels), len(values)))
	}
	i := sort.SearchFloat64s(h.bounds, v) // the first bound ≥ v
	k := key(values)
	h.mu.Lock()
	s := h.series[k]
	if s == nil {
		s = &histSeries{values: append([]string(nil), values...), counts: make([]uint64, len(h.bounds)+1)}
		h.series[k] = s
	}
	s.counts[i]++
	s.sum += v
	s.n++
	h.mu.Unlock()
}

func formatFloat(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func (h *HistogramVec) write(w io.Writer) {
	h.header(w)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range sortedKeys(h.series) {
		s := h.series[k]
		var cum uint64
		for i, b := range append(append([]float64(nil), h.bounds...), math.Inf(1)) {
			cum += s.counts[i]
			fmt.Fprintf(w, "%s_bucket%s %d\n", h.name, h.labelText(s.values, "le", formatFloat(b)), cum)
		}
		fmt.Fprintf(w, "%s_sum%s %s\n", h.name, h.labelText(s.values), formatFloat(s.sum))
		fmt.Fprintf(w, "%s_count%s %d\n", h.name, h.labelText(s.values), s.n)
	}
}
