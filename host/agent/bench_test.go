package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/tools"
)

// BenchmarkTurnOverhead is the host's cost of one turn with 50 tools registered,
// the model answering at once: listing and offering the tools, building the prompt,
// the diagnostics record, storing the messages, and one tool call through the
// pipeline. Each run is two turns (a tool call, then the answer); the figure is the
// median per turn.
func BenchmarkTurnOverhead(b *testing.B) {
	var model0 time.Duration
	p := &fakeProvider{}
	p.route = func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleUser {
			return &model.Response{ToolCalls: []model.ToolCall{{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}}}, nil
		}
		onDelta(model.Delta{Text: "done"})
		return &model.Response{Text: "done"}, nil
	}
	e := newEnv(b, p)
	_ = model0
	for i := len(e.reg.All(0)); i < 50; i++ {
		if err := e.reg.Register(tools.Tool{Name: fmt.Sprintf("bench_tool_%02d", i), Description: "a benchmark tool with a realistic description of what it does and returns",
			Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","description":"the address"},"limit":{"type":"integer","minimum":1}},"required":["url"]}`),
			Run:        func(context.Context, *tools.Call) (any, error) { return "ok", nil }}); err != nil {
			b.Fatal(err)
		}
	}
	if n := len(e.reg.All(0)); n != 50 {
		b.Fatalf("%d tools registered", n)
	}
	e.set(tools.SettingRepeatLimit, "0")
	e.set(tools.SettingRateConversation, "0")
	e.set(tools.SettingRateGlobal, "0")
	r, _ := e.send("warm up", "")
	conv := r.ConversationID
	perTurn := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		run, err := e.m.Send(context.Background(), SendRequest{Text: "again", ConversationID: conv})
		if err != nil {
			b.Fatal(err)
		}
		if out := run.Outcome(); out.Status != "completed" {
			b.Fatalf("outcome %+v", out)
		}
		perTurn = append(perTurn, time.Since(start)/2)
		// A fresh conversation now and then, so the history (and the request)
		// does not grow without bound over b.N runs.
		if i%20 == 19 {
			r, _ := e.send("fresh", "")
			conv = r.ConversationID
		}
	}
	b.StopTimer()
	sort.Slice(perTurn, func(i, j int) bool { return perTurn[i] < perTurn[j] })
	b.ReportMetric(float64(perTurn[len(perTurn)/2].Microseconds())/1000, "ms/turn-median")
	b.ReportMetric(float64(perTurn[len(perTurn)*9/10].Microseconds())/1000, "ms/turn-p90")
}

// BenchmarkSubAgentsParallel runs 8 sub-agents at once (limit 8), each making 3
// calls to a model that answers in 200 ms, against one sub-agent alone; the ratio
// of the two times is the figure (the target is at most 1.25).
func BenchmarkSubAgentsParallel(b *testing.B) {
	const latency = 200 * time.Millisecond
	p := &fakeProvider{}
	sub := func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		select {
		case <-time.After(latency):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if n := len(req.Messages); n < 5 {
			return &model.Response{ToolCalls: []model.ToolCall{{ID: fmt.Sprintf("s%d", n), Name: "list_tasks", Arguments: json.RawMessage(`{}`)}}}, nil
		}
		return &model.Response{Text: "sub done"}, nil
	}
	e := newEnv(b, p)
	e.set(SettingSubagentConcurrency, "8")
	e.set(tools.SettingRepeatLimit, "0")
	e.set(tools.SettingRateConversation, "0")
	e.set(tools.SettingRateGlobal, "0")
	timeOf := func(n int) time.Duration {
		p.route = parentThenSubs(n, sub)
		start := time.Now()
		_, out := e.send("fan out", "")
		if out.Status != "completed" {
			b.Fatalf("outcome %+v", out)
		}
		last := p.requests()
		for _, m := range last[len(last)-1].Messages[2:] {
			if !strings.Contains(m.Content, "sub done") {
				b.Fatalf("a sub-agent did not finish: %s", m.Content)
			}
		}
		return time.Since(start)
	}
	var one, eight time.Duration
	before := len(p.requests())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		one += timeOf(1)
		eight += timeOf(8)
	}
	b.StopTimer()
	// Every sub-agent made its 3 calls.
	var subCalls int
	for _, rq := range p.requests()[before:] {
		if isSub(rq) && strings.Contains(rq.Messages[0].Content, "sub ") {
			subCalls++
		}
	}
	if subCalls != 9*3*b.N {
		b.Fatalf("%d sub-agent model calls, want %d", subCalls, 9*3*b.N)
	}
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "ms/one-subagent")
	b.ReportMetric(float64(eight.Milliseconds())/float64(b.N), "ms/eight-subagents")
	b.ReportMetric(float64(eight)/float64(one), "ratio")
}
