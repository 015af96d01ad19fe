package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/model/modeltest"
)

// TestTranslationWithSDKs: each official SDK calls a model whose upstream
// speaks the other wire format: whole and streamed answers, a tool call and the
// turn with its result, usage and stop reasons as the client's format has them,
// and the audit's tokens as the vendor counted them.
func TestTranslationWithSDKs(t *testing.T) {
	modules := sdkModules(t)
	tm := newTeam(t, "sqlite")
	drv := startSDKDriver(t, modules)
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			other := map[string]string{"openai": "anthropic", "anthropic": "openai"}[d]
			fake, m := tm.fake(other), model(other)
			caseName := map[string]string{"openai": "chat", "anthropic": "messages"}[d]
			trace := "translate-" + d
			ask := func(c, mode string, params map[string]any, kv ...any) sdkResult {
				t.Helper()
				if d == "openai" {
					params["stream"] = mode != "whole"
				} else {
					delete(params, "stream")
				}
				a := map[string]any{"token": tm.tok, "base_url": tm.gw.URL, "trace": trace, "mode": mode, "params": params, "max_retries": 0}
				for i := 0; i+1 < len(kv); i += 2 {
					a[kv[i].(string)] = kv[i+1]
				}
				r := drv.do(t, d, c, a)
				if r.Error != nil {
					t.Fatalf("%s %s: %+v", c, mode, *r.Error)
				}
				return r
			}
			stop := map[string]string{"openai": "stop", "anthropic": "end_turn"}[d]
			for _, mode := range []string{"whole", "stream"} {
				fake.Add(modeltest.Turn{Text: "Bonjour, " + mode + ".", InputTokens: 11, OutputTokens: 3, CachedTokens: 4})
				params := chatBody(d, m, "Say hello", true, nil)
				if d == "openai" && mode == "stream" {
					params["stream_options"] = map[string]any{"include_usage": true}
				}
				r := ask(caseName, mode, params)
				if r.Text != "Bonjour, "+mode+"." || r.Stop != stop {
					t.Errorf("%s: text %q, stop %q", mode, r.Text, r.Stop)
				}
				if r.Usage == nil || r.Usage.in() != 11 || r.Usage.out() != 3 || r.Usage.cached() != 4 {
					t.Errorf("%s: usage %+v", mode, r.Usage)
				}
				if got := fake.Last(); got.Model != map[string]string{"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}[other] || got.Messages[len(got.Messages)-1].Text != "Say hello" {
					t.Errorf("%s: the upstream got %+v", mode, got)
				}
			}

			fake.Add(modeltest.Tools("get_weather", `{"city":"Lisbon"}`), modeltest.Text("It is sunny in Lisbon."))
			r := ask("tools", "stream", chatBody(d, m, "Weather in Lisbon?", true, map[string]any{"tools": toolDefs(d)}),
				"results", map[string]string{"get_weather": "sunny, 24 °C"})
			if len(r.Turns) != 2 || len(r.Turns[0].ToolCalls) != 1 {
				t.Fatalf("tool turns %+v", r.Turns)
			}
			call := r.Turns[0].ToolCalls[0]
			var args struct{ City string }
			json.Unmarshal([]byte(call.Arguments), &args)
			if call.Name != "get_weather" || args.City != "Lisbon" || call.ID == "" || r.Turns[0].Stop != map[string]string{"openai": "tool_calls", "anthropic": "tool_use"}[d] {
				t.Errorf("the tool call as the SDK gathered it: %+v, stop %q", call, r.Turns[0].Stop)
			}
			if r.Turns[1].Text != "It is sunny in Lisbon." {
				t.Errorf("after the tool result: %+v", r.Turns[1])
			}
			var result *modeltest.ToolResult
			for _, msg := range fake.Last().Messages {
				for i := range msg.ToolResults {
					result = &msg.ToolResults[i]
				}
			}
			if result == nil || result.CallID != call.ID || !strings.Contains(result.Content, "sunny, 24") {
				t.Errorf("the upstream got the tool result %+v for call %q", result, call.ID)
			}

			rows := tm.requests(4, "--trace", trace)
			if len(rows) != 4 {
				t.Fatalf("%d audit rows", len(rows))
			}
			for _, row := range rows[2:] { // oldest last: the whole and the streamed answer
				if row.Status != 200 || row.InputTokens != 11 || row.OutputTokens != 3 || row.CachedTokens != 4 || row.Estimated || row.Upstream != map[string]string{"openai": "oa", "anthropic": "an"}[other] {
					t.Errorf("audit row %+v", row)
				}
			}
		})
	}
}
