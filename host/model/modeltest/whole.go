package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

func oaUsage(in, out, cached int) map[string]any {
	u := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	if cached > 0 {
		u["prompt_tokens_details"] = map[string]any{"cached_tokens": cached}
	}
	return u
}

// writeWhole answers a request that did not ask to stream with the vendor's whole
// response object: OpenAI's chat.completion, Anthropic's message.
func writeWhole(w http.ResponseWriter, kind string, req Request, t Turn, fallbackModel string) {
	model := req.Model
	if model == "" {
		model = fallbackModel
	}
	in, out := t.InputTokens, t.OutputTokens
	if in == 0 {
		in = estimateTokens(len(req.Body))
	}
	size := len(t.Text) + len(t.Reasoning)
	for _, c := range t.ToolCalls {
		size += len(c.Name) + len(c.Arguments)
	}
	if out == 0 {
		out = estimateTokens(size)
	}
	var body any
	if kind == Anthropic {
		var content []any
		if t.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": t.Text})
		}
		for i, c := range t.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("toolu_fake%d_%d", req.N, i)
			}
			content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": json.RawMessage(c.Arguments)})
		}
		stop := t.StopReason
		if stop == "" {
			stop = "end_turn"
			if len(t.ToolCalls) > 0 {
				stop = "tool_use"
			}
		}
		body = map[string]any{"id": fmt.Sprintf("msg_fake%d", req.N), "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in - min(t.CachedTokens, in), "output_tokens": out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": min(t.CachedTokens, in)}}
	} else {
		msg := map[string]any{"role": "assistant", "content": t.Text, "refusal": nil}
		if t.Text == "" && len(t.ToolCalls) > 0 {
			msg["content"] = nil
		}
		var calls []any
		for i, c := range t.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_fake%d_%d", req.N, i)
			}
			calls = append(calls, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		if calls != nil {
			msg["tool_calls"] = calls
		}
		finish := t.StopReason
		if finish == "" {
			finish = "stop"
			if len(t.ToolCalls) > 0 {
				finish = "tool_calls"
			}
		}
		body = map[string]any{"id": fmt.Sprintf("chatcmpl-fake%d", req.N), "object": "chat.completion", "created": time.Now().Unix(),
			"model": model, "system_fingerprint": "fp_fake",
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":   oaUsage(in, out, t.CachedTokens)}
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}
