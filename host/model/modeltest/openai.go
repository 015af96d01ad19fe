package modeltest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

type oaMsg struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func decodeOpenAI(req *Request) *vendorErr {
	var v struct {
		Model         string  `json:"model"`
		Messages      []oaMsg `json:"messages"`
		MaxTokens     int     `json:"max_tokens"`
		MaxCompletion int     `json:"max_completion_tokens"`
		Stream        bool    `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	bad := func(format string, args ...any) *vendorErr {
		return &vendorErr{400, "invalid_request_error", fmt.Sprintf(format, args...), ""}
	}
	if err := json.Unmarshal(req.Body, &v); err != nil {
		return bad("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)")
	}
	req.Model, req.Stream = v.Model, v.Stream
	req.MaxTokens = max(v.MaxTokens, v.MaxCompletion)
	req.IncludeUsage = v.StreamOptions != nil && v.StreamOptions.IncludeUsage
	for _, t := range v.Tools {
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
		if t.Type != "function" {
			return bad("Invalid value: '%s'. Supported values are: 'function'.", t.Type)
		}
	}
	if v.Model == "" {
		return bad("you must provide a model parameter")
	}
	if len(v.Messages) == 0 {
		return bad("[] is too short - 'messages'")
	}
	if v.StreamOptions != nil && !v.Stream {
		return bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	// What the real API checks about tool calls: every tool message answers a call
	// of the assistant message just before the run of tool messages, and every such
	// call is answered before anything else comes.
	open := map[string]bool{}
	var openIDs []string
	for i, m := range v.Messages {
		msg := Message{Role: m.Role}
		text, images, blocks, err := oaContent(m.Content)
		if err != nil {
			return bad("Invalid type for 'messages[%d].content': %v", i, err)
		}
		msg.Text, msg.Images, msg.Blocks = text, images, blocks
		if m.Role != "tool" && len(open) > 0 {
			var missing []string
			for _, id := range openIDs {
				if open[id] {
					missing = append(missing, id)
				}
			}
			return bad("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(missing, ", "))
		}
		switch m.Role {
		case "system", "developer":
			if req.System != "" {
				req.System += "\n"
			}
			req.System += text
			continue
		case "user":
		case "assistant":
			open, openIDs = map[string]bool{}, nil
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Function.Name == "" {
					return bad("Missing required parameter: 'messages[%d].tool_calls[0].id'.", i)
				}
				if tc.Type != "function" {
					return bad("Missing required parameter: 'messages[%d].tool_calls[0].type'.", i)
				}
				if !json.Valid([]byte(tc.Function.Arguments)) {
					return bad("Invalid 'messages[%d].tool_calls[0].function.arguments': the arguments are not valid JSON.", i)
				}
				open[tc.ID] = true
				openIDs = append(openIDs, tc.ID)
				msg.ToolCalls = append(msg.ToolCalls, Call{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
			if len(m.Content) == 0 && len(m.ToolCalls) == 0 {
				return bad("Missing required parameter: 'messages[%d].content'.", i)
			}
		case "tool":
			if !open[m.ToolCallID] {
				return bad("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			delete(open, m.ToolCallID)
			msg.ToolResults = []ToolResult{{CallID: m.ToolCallID, Content: text}}
			for _, b := range blocks {
				if b != "text" {
					return bad("Invalid 'messages[%d]'. Tool messages accept only text content.", i)
				}
			}
		default:
			return bad("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role)
		}
		req.Messages = append(req.Messages, msg)
	}
	if len(open) > 0 {
		return bad("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(openIDs, ", "))
	}
	return nil
}

// oaContent reads a content member: a string, a list of parts, or null.
func oaContent(raw json.RawMessage) (text string, images, blocks []string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil, nil
	}
	if json.Unmarshal(raw, &text) == nil {
		return text, nil, nil, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, nil, fmt.Errorf("expected a string or an array of content parts")
	}
	var texts []string
	for _, p := range parts {
		blocks = append(blocks, p.Type)
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image_url":
			if p.ImageURL.URL == "" {
				return "", nil, nil, fmt.Errorf("image_url.url is required")
			}
			images = append(images, p.ImageURL.URL)
		default:
			return "", nil, nil, fmt.Errorf("unknown content part type %q", p.Type)
		}
	}
	return strings.Join(texts, "\n"), images, blocks, nil
}

func streamOpenAI(st *streamer, req Request, fallbackModel string) {
	model := req.Model
	if model == "" {
		model = fallbackModel
	}
	id := fmt.Sprintf("chatcmpl-fake%d", req.N)
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"system_fingerprint": "fp_fake", "choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		if req.IncludeUsage {
			c["usage"] = nil
		}
		return c
	}
	t := st.turn
	if !st.send("", chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)) {
		return
	}
	// DeepSeek and Qwen stream their reasoning first, with content null.
	for _, p := range st.pieces(t.Reasoning) {
		if !st.send("", chunk(map[string]any{"content": nil, "reasoning_content": p}, nil)) {
			return
		}
	}
	for _, p := range st.pieces(t.Text) {
		if !st.send("", chunk(map[string]any{"content": p}, nil)) {
			return
		}
	}
	if t.StreamError {
		st.send("", map[string]any{"error": map[string]any{"message": "The server had an error processing your request. Sorry about that! You can retry your request.", "type": "server_error", "param": nil, "code": nil}})
		return
	}
	out := len(t.Text) + len(t.Reasoning)
	for i, c := range t.ToolCalls {
		cid := c.ID
		if cid == "" {
			cid = fmt.Sprintf("call_fake%d_%d", req.N, i)
		}
		first := map[string]any{"index": i, "id": cid, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}
		if !st.send("", chunk(map[string]any{"tool_calls": []any{first}}, nil)) {
			return
		}
		for _, p := range st.pieces(c.Arguments) {
			frag := map[string]any{"index": i, "function": map[string]any{"arguments": p}}
			if !st.send("", chunk(map[string]any{"tool_calls": []any{frag}}, nil)) {
				return
			}
		}
		out += len(c.Name) + len(c.Arguments)
	}
	finish := t.StopReason
	if finish == "" {
		finish = "stop"
		if len(t.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	if !st.send("", chunk(map[string]any{}, finish)) {
		return
	}
	if req.IncludeUsage {
		in, outTok := t.InputTokens, t.OutputTokens
		if in == 0 {
			in = estimateTokens(len(req.Body))
		}
		if outTok == 0 {
			outTok = estimateTokens(out)
		}
		if !st.send("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"system_fingerprint": "fp_fake", "choices": []any{},
			"usage": oaUsage(in, outTok, t.CachedTokens)}) {
			return
		}
	}
	st.send("", "[DONE]")
}
