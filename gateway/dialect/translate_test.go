package dialect

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTranslateRequestToAnthropic: system messages gather into system, tool
// results become a user turn of tool_result blocks after the assistant's
// tool_use, images keep their data, and a missing max_tokens is supplied.
func TestTranslateRequestToAnthropic(t *testing.T) {
	in := `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
	{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},
	{"role":"tool","tool_call_id":"call_1","content":"done"},{"role":"user","content":"and?"}],
	"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required","stop":"END","stream":true}`
	b, err := TranslateRequest(OpenAI, Anthropic, []byte(in), TranslateOptions{MaxTokens: 123})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		System    string      `json:"system"`
		MaxTokens int64       `json:"max_tokens"`
		Messages  []anMessage `json:"messages"`
		Stop      []string    `json:"stop_sequences"`
		Choice    struct{ Type string }
		Tools     []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	json.Unmarshal(b, &out)
	json.Unmarshal([]byte(gjson(b, "tool_choice")), &out.Choice)
	if out.System != "Be brief." || out.MaxTokens != 123 || len(out.Stop) != 1 || out.Choice.Type != "any" || len(out.Tools) != 1 || string(out.Tools[0].InputSchema) != `{"type":"object"}` {
		t.Fatalf("translated: %s", b)
	}
	roles := []string{}
	for _, m := range out.Messages {
		roles = append(roles, m.Role)
	}
	// The tool result and the next user text merge into one user turn.
	if strings.Join(roles, ",") != "user,assistant,user" || out.Messages[0].Content[1].Source.Data != "AAAA" ||
		out.Messages[1].Content[0].Type != "tool_use" || string(out.Messages[1].Content[0].Input) != `{"x":1}` ||
		out.Messages[2].Content[0].ToolUseID != "call_1" || out.Messages[2].Content[1].Text != "and?" {
		t.Fatalf("messages: %s", b)
	}
	if _, err := TranslateRequest(OpenAI, Anthropic, []byte(`{"model":"m","n":3,"messages":[]}`), TranslateOptions{}); err == nil {
		t.Fatal("n=3 translated")
	}
}

func gjson(b []byte, key string) string {
	var m map[string]json.RawMessage
	json.Unmarshal(b, &m)
	return string(m[key])
}

// TestStreamOpenAIToAnthropic: text, then a tool call in pieces, then the
// usage chunk and [DONE] make Anthropic's block events, stop reason and usage.
func TestStreamOpenAIToAnthropic(t *testing.T) {
	tr := &StreamTranslator{From: OpenAI, To: Anthropic, Model: "claude"}
	var out strings.Builder
	for _, d := range []string{
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}`,
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}`,
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]}}]}`,
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":2}}}`,
		`[DONE]`,
	} {
		out.Write(tr.Event("", []byte(d)))
	}
	m := &Meter{D: Anthropic}
	var names []string
	for _, ev := range strings.Split(strings.TrimSpace(out.String()), "\n\n") {
		name, data, _ := strings.Cut(ev, "\ndata: ")
		name = strings.TrimPrefix(name, "event: ")
		names = append(names, name)
		m.Event(name, []byte(data))
	}
	want := "message_start,content_block_start,content_block_delta,content_block_stop,content_block_start,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop"
	if strings.Join(names, ",") != want {
		t.Fatalf("events %v\n%s", names, out.String())
	}
	if !m.Done || m.Usage.Input != 10 || m.Usage.Output != 5 || m.Usage.Cached != 2 || !strings.Contains(out.String(), `"stop_reason":"tool_use"`) ||
		!strings.Contains(out.String(), `"id":"call_9"`) {
		t.Fatalf("usage %+v\n%s", m.Usage, out.String())
	}
}

// TestStreamAnthropicToOpenAI: Anthropic's events make OpenAI chunks a client
// gathers into the same text, tool call, finish reason and usage.
func TestStreamAnthropicToOpenAI(t *testing.T) {
	tr := &StreamTranslator{From: Anthropic, To: OpenAI, Model: "gpt", IncludeUsage: true}
	var out strings.Builder
	for _, e := range [][2]string{
		{"message_start", `{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`},
		{"ping", `{"type":"ping"}`},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":2}"}}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":6}}`},
		{"message_stop", `{"type":"message_stop"}`},
	} {
		out.Write(tr.Event(e[0], []byte(e[1])))
	}
	m := &Meter{D: OpenAI}
	var text, args, finish string
	for _, ev := range strings.Split(strings.TrimSpace(out.String()), "\n\n") {
		data := strings.TrimPrefix(ev, "data: ")
		m.Event("", []byte(data))
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string
					ToolCalls []oaToolCall `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
		}
		json.Unmarshal([]byte(data), &c)
		for _, ch := range c.Choices {
			text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if text != "Hi" || args != `{"a":2}` || finish != "tool_calls" || !m.Done || m.Usage.Input != 10 || m.Usage.Output != 6 || m.Usage.Cached != 3 {
		t.Fatalf("text %q args %q finish %q usage %+v\n%s", text, args, finish, m.Usage, out.String())
	}
}
