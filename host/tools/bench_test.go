package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkPipelineNoop is the pipeline's own cost: a no-op builtin with a
// 5-property schema, through every step, the audit row queued to the real SQLite
// writer. Arguments vary per call so the identical-call guard sees a realistic
// stream. Reports the median of per-call times besides the mean ns/op; the target
// is a median of at most 50 µs.
func BenchmarkPipelineNoop(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	for k, v := range map[string]string{SettingRateGlobal: "0", SettingRateConversation: "0"} {
		if err := e.db.SetSetting(ctx, k, v); err != nil {
			b.Fatal(err)
		}
	}
	e.reg.RefreshSettings()
	err := e.reg.Register(Tool{
		Name: "noop", Description: "does nothing",
		Parameters: json.RawMessage(`{
			"url": {"type": "string", "required": true},
			"max_length": {"type": "integer"},
			"mode": {"type": "string", "enum": ["text", "blob", "auto"]},
			"verbose": {"type": "boolean"},
			"tags": {"type": "array", "items": {"type": "string"}}
		}`),
		Run: func(ctx context.Context, c *Call) (any, error) { return nil, nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args := json.RawMessage(`{"url":"https://example.com/` + strconv.Itoa(i) + `","max_length":1000,"mode":"auto","verbose":true,"tags":["a","b"]}`)
		start := time.Now()
		res := e.reg.Call(ctx, &Call{Tool: "noop", Arguments: args, Caller: "bench", ConversationID: "c"})
		times = append(times, time.Since(start))
		if !res.Success {
			b.Fatalf("%+v", res)
		}
	}
	b.StopTimer()
	// Everything queued reaches SQLite: the audit write is part of the cost measured
	// by throughput (a full queue makes Call wait), never skipped.
	if err := e.log.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "median-ns/call")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns/call")
}
