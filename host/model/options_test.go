package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDetectOptions(t *testing.T) {
	for _, c := range []struct {
		base, model string
		s           OptionSettings
		streamUsage bool
		field, key  string
		reasoning   bool
		version     string
	}{
		{"https://api.openai.com/v1", "gpt-4o-mini", OptionSettings{}, true, FieldMaxCompletionTokens, "authorization", false, ""},
		{"http://localhost:4000/v1", "o3-mini", OptionSettings{}, true, FieldMaxCompletionTokens, "authorization", false, ""},
		{"http://localhost:11434/v1", "llama3.2", OptionSettings{}, true, FieldMaxTokens, "authorization", false, ""},
		{"https://api.mistral.ai/v1", "mistral-large-latest", OptionSettings{}, false, FieldMaxTokens, "authorization", false, ""},
		{"http://gw.local/v1", "magistral-medium-2507", OptionSettings{}, false, FieldMaxTokens, "authorization", false, ""},
		{"https://api.fireworks.ai/inference/v1", "accounts/fireworks/models/x", OptionSettings{}, false, FieldMaxTokens, "authorization", false, ""},
		{"https://api.deepseek.com", "deepseek-v4-flash", OptionSettings{}, true, FieldMaxTokens, "authorization", true, ""},
		{"https://r.openai.azure.com/openai/deployments/g", "gpt-4o", OptionSettings{}, true, FieldMaxCompletionTokens, "api-key", false, azureDefaultAPIVersion},
		{"https://r.openai.azure.com/openai/deployments/g", "gpt-4o", OptionSettings{APIVersion: "2024-06-01"}, false, FieldMaxTokens, "api-key", false, "2024-06-01"},
		{"https://api.deepseek.com", "deepseek-chat", OptionSettings{StreamUsage: OptionOff, SendReasoning: OptionOff, MaxTokensField: FieldMaxCompletionTokens}, false, FieldMaxCompletionTokens, "authorization", false, ""},
	} {
		o := DetectOptions(KindOpenAI, c.base, c.model, c.s)
		if o.StreamUsage != c.streamUsage || o.MaxTokensField != c.field || o.KeyHeader != c.key || o.SendReasoning != c.reasoning || o.APIVersion != c.version {
			t.Errorf("%s %s %+v: %+v", c.base, c.model, c.s, o)
		}
	}
	if o := DetectOptions(KindAnthropic, "https://api.anthropic.com", "claude-sonnet-4-5", OptionSettings{}); !o.PromptCache {
		t.Errorf("anthropic: %+v", o)
	}
	if err := (OptionSettings{StreamUsage: "maybe"}).Check(); err == nil {
		t.Error("a bad switch was accepted")
	}
	if base, v := splitEndpoint("https://r.openai.azure.com/openai/deployments/g/chat/completions?api-version=2025-01-01-preview", ""); base != "https://r.openai.azure.com/openai/deployments/g" || v != "2025-01-01-preview" {
		t.Errorf("%s %s", base, v)
	}
}

func TestUsageNormalised(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want Usage
	}{
		// OpenAI: reasoning inside completion_tokens.
		{`{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":30}}`,
			Usage{InputTokens: 100, OutputTokens: 50, CacheReadTokens: 64, ReasoningTokens: 30}},
		// xAI: reasoning outside it.
		{`{"prompt_tokens":291,"completion_tokens":26,"total_tokens":513,"completion_tokens_details":{"reasoning_tokens":196}}`,
			Usage{InputTokens: 291, OutputTokens: 222, ReasoningTokens: 196}},
		// DeepSeek's cache fields.
		{`{"prompt_tokens":1290,"completion_tokens":58,"total_tokens":1348,"prompt_cache_hit_tokens":1152}`,
			Usage{InputTokens: 1290, OutputTokens: 58, CacheReadTokens: 1152}},
	} {
		var u oaUsage
		json.Unmarshal([]byte(c.raw), &u)
		if got := u.usage(); got != c.want {
			t.Errorf("%s: %+v", c.raw, got)
		}
	}
	a := anUsage{InputTokens: 12, CacheCreationInputTokens: 500, CacheReadInputTokens: 4000, OutputTokens: 9}
	if got := a.usage(); got != (Usage{InputTokens: 4512, OutputTokens: 9, CacheReadTokens: 4000, CacheWriteTokens: 500}) || got.FullPriceInput() != 12 {
		t.Errorf("anthropic %+v", got)
	}
}

// TestPrefixStableAcrossTurns: what a request sends before the newest messages is
// the same bytes on the next turn (OpenAI's automatic cache needs an identical
// prefix), and Anthropic's breakpoints sit where the next request will find the
// previous one's.
func TestPrefixStableAcrossTurns(t *testing.T) {
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		bodies = append(bodies, b.Bytes())
		http.Error(w, `{"error":{"message":"stop here","type":"invalid_request_error"}}`, 400)
	}))
	defer srv.Close()
	tools := []ToolSpec{{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "b"}}
	history := []Message{{Role: RoleUser, Content: "go"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "a", Arguments: json.RawMessage(`{"x":1}`)}}, Reasoning: &Reasoning{Text: "hm"}},
		{Role: RoleTool, ToolCallID: "c1", Content: "r1"}}
	next := append(append([]Message(nil), history...),
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c2", Name: "b", Arguments: json.RawMessage(`{}`)}}},
		Message{Role: RoleTool, ToolCallID: "c2", Content: "r2"})
	for _, kind := range Kinds {
		bodies = nil
		p, err := New(Config{ID: "p", Kind: kind, BaseURL: srv.URL, Model: "deepseek-chat", APIKey: "k", Retry: &Retry{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, msgs := range [][]Message{history, next} {
			p.Stream(context.Background(), Request{System: "sys", Messages: msgs, Tools: tools}, nil, nil)
		}
		if len(bodies) != 2 {
			t.Fatalf("%s: %d requests", kind, len(bodies))
		}
		one, two := string(bodies[0]), string(bodies[1])
		if kind == KindAnthropic {
			if n := strings.Count(two, `"cache_control"`); n != 4 {
				t.Fatalf("anthropic: %d breakpoints: %s", n, two)
			}
			// The second request's breakpoint on the first one's last message.
			if !strings.Contains(two, `{"type":"text","text":"r1"}],"cache_control":{"type":"ephemeral"}`) {
				t.Fatalf("anthropic: no breakpoint where the previous request ended: %s", two)
			}
			strip := strings.NewReplacer(`,"cache_control":{"type":"ephemeral"}`, "")
			one, two = strip.Replace(one), strip.Replace(two)
		}
		cut := strings.Index(one, `"r1"`)
		if cut < 0 || one[:cut] != two[:cut] {
			t.Fatalf("%s: the prefix changed between turns:\n%s\n%s", kind, one, two)
		}
	}
}

// TestEphemeralTailIsNoBreakpoint: a message told for one request only (the page
// context at the end) carries no breakpoint; the breakpoint sits on the last block
// the next request repeats, where that request looks for it.
func TestEphemeralTailIsNoBreakpoint(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		bodies = append(bodies, b.String())
		http.Error(w, `{"error":{"message":"stop here","type":"invalid_request_error"}}`, 400)
	}))
	defer srv.Close()
	p, err := New(Config{ID: "p", Kind: KindAnthropic, BaseURL: srv.URL, Model: "m", APIKey: "k", Retry: &Retry{}})
	if err != nil {
		t.Fatal(err)
	}
	history := []Message{{Role: RoleUser, Content: "go"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "a", Arguments: json.RawMessage(`{}`)}}},
		{Role: RoleTool, ToolCallID: "c1", Content: "r1"}}
	next := append(append([]Message(nil), history...),
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c2", Name: "a", Arguments: json.RawMessage(`{}`)}}},
		Message{Role: RoleTool, ToolCallID: "c2", Content: "r2"})
	for i, msgs := range [][]Message{history, next} {
		page := Message{Role: RoleUser, Content: fmt.Sprintf("page %d", i), Ephemeral: true}
		p.Stream(context.Background(), Request{System: "sys", Messages: append(msgs[:len(msgs):len(msgs)], page)}, nil, nil)
	}
	if len(bodies) != 2 {
		t.Fatalf("%d requests", len(bodies))
	}
	for i, b := range bodies {
		if strings.Contains(b, fmt.Sprintf(`"text":"page %d"},"cache_control"`, i)) || strings.Contains(b, fmt.Sprintf(`"text":"page %d","cache_control"`, i)) {
			t.Errorf("request %d: a breakpoint on the ephemeral page: %s", i, b)
		}
		if !strings.Contains(b, `{"type":"text","text":"r1"}],"cache_control":{"type":"ephemeral"}`) {
			t.Errorf("request %d: no breakpoint after r1, the block the next request repeats: %s", i, b)
		}
	}
}

// FuzzDecode feeds any bytes to both dialects' decoders as a 200 stream: they must
// end, with an answer or an error, and never panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"thinking\",\"thinking\":\"x\"}]},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("error: {\"code\":500}\n\nevent: message_start\ndata: {\"type\":\"message_start\"}\n\n"))
	f.Add([]byte("data: {\"object\":\"error\",\"message\":{\"detail\":[1]},\"code\":\"x\"}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, kind := range Kinds {
			p, _ := New(Config{ID: "f", Kind: kind, BaseURL: "http://127.0.0.1", Model: "m"})
			c := p.(*client)
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: ioNopCloser{bytes.NewReader(body)}}
			out, err := c.wire.decode(c, resp, func(string) {})
			if (out == nil) == (err == nil) {
				t.Fatalf("%s: answer %v and error %v", kind, out, err)
			}
		}
	})
}

type ioNopCloser struct{ *bytes.Reader }

func (ioNopCloser) Close() error { return nil }
