package metrics

import (
	"strings"
	"testing"
)

func TestExposition(t *testing.T) {
	var r Registry
	c := r.NewCounter("gw_requests_total", "Requests.\nBy model.", "model", "status")
	c.Inc("gpt", "200")
	c.Add(2, `we"ird\`, "429")
	g := r.NewGauge("gw_active", "Active.")
	g.Add(3)
	g.Add(-1)
	h := r.NewHistogram("gw_latency_seconds", "Latency.", []float64{0.1, 1}, "model")
	h.Observe(0.05, "gpt")
	h.Observe(0.1, "gpt")
	h.Observe(5, "gpt")
	var b strings.Builder
	r.Write(&b)
	want := `# HELP gw_requests_total Requests.\nBy model.
# TYPE gw_requests_total counter
gw_requests_total{model="gpt",status="200"} 1
gw_requests_total{model="we\"ird\\",status="429"} 2
# HELP gw_active Active.
# TYPE gw_active gauge
gw_active 2
# HELP gw_latency_seconds Latency.
# TYPE gw_latency_seconds histogram
gw_latency_seconds_bucket{model="gpt",le="0.1"} 2
gw_latency_seconds_bucket{model="gpt",le="1"} 2
gw_latency_seconds_bucket{model="gpt",le="+Inf"} 3
gw_latency_seconds_sum{model="gpt"} 5.15
gw_latency_seconds_count{model="gpt"} 3
`
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if c.Value("gpt", "200") != 1 || c.Value("none", "x") != 0 {
		t.Fatal("Value")
	}
}
