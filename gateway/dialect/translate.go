package dialect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Translation between the two formats: a client of one endpoint reaches an
// upstream of the other kind. Requests, whole answers and streams are rewritten
// field by field: text, images, tools and their calls and results, stop
// reasons, usage and errors. What one format has and the other lacks (OpenAI's
// n above 1, logprobs; Anthropic's thinking blocks) is refused or left out, as
// each function says.

// TranslateOptions are what a request's translation needs beyond the body.
type TranslateOptions struct {
	// MaxTokens is the answer's limit to send Anthropic when an OpenAI client
	// named none (Anthropic requires one).
	MaxTokens int64
}

// TranslateRequest rewrites a request body of dialect from into dialect to.
func TranslateRequest(from, to Dialect, body []byte, o TranslateOptions) ([]byte, error) {
	if from == to {
		return body, nil
	}
	if from == OpenAI {
		return openAIToAnthropic(body, o)
	}
	return anthropicToOpenAI(body)
}

type oaMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []oaToolCall    `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url,omitempty"`
}

type anBlockT struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *anSource       `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type anSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anMessage struct {
	Role    string     `json:"role"`
	Content []anBlockT `json:"content"`
}

// textOf reads OpenAI content: a string, or parts whose text is joined.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []oaPart
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func oaContentBlocks(raw json.RawMessage) ([]anBlockT, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []anBlockT{{Type: "text", Text: s}}, nil
	}
	var parts []oaPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, bad("messages: content must be a string or a list of parts")
	}
	var out []anBlockT
	for _, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, anBlockT{Type: "text", Text: p.Text})
		case "image_url":
			if p.ImageURL == nil {
				continue
			}
			u := p.ImageURL.URL
			if rest, ok := strings.CutPrefix(u, "data:"); ok {
				mt, data, ok := strings.Cut(rest, ";base64,")
				if !ok {
					return nil, bad("messages: an image's data URL must be base64")
				}
				out = append(out, anBlockT{Type: "image", Source: &anSource{Type: "base64", MediaType: mt, Data: data}})
			} else {
				out = append(out, anBlockT{Type: "image", Source: &anSource{Type: "url", URL: u}})
			}
		default:
			return nil, bad("messages: content parts of type %q cannot be passed to this model's upstream", p.Type)
		}
	}
	return out, nil
}

func openAIToAnthropic(body []byte, o TranslateOptions) ([]byte, error) {
	var in struct {
		Model               string          `json:"model"`
		Messages            []oaMessage     `json:"messages"`
		MaxTokens           *int64          `json:"max_tokens"`
		MaxCompletionTokens *int64          `json:"max_completion_tokens"`
		Temperature         *float64        `json:"temperature"`
		TopP                *float64        `json:"top_p"`
		Stop                json.RawMessage `json:"stop"`
		Stream              bool            `json:"stream"`
		N                   *int64          `json:"n"`
		Tools               []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
		User       string          `json:"user"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, bad("the request body is not a chat completion request: %v", err)
	}
	if in.N != nil && *in.N > 1 {
		return nil, bad("n: this model's upstream gives one answer a request; send n requests")
	}
	out := map[string]any{"model": in.Model}
	maxT := o.MaxTokens
	for _, p := range []*int64{in.MaxTokens, in.MaxCompletionTokens} {
		if p != nil && *p > 0 {
			maxT = *p
		}
	}
	if maxT <= 0 {
		maxT = 4096
	}
	out["max_tokens"] = maxT
	var system []string
	var msgs []anMessage
	add := func(role string, blocks []anBlockT) {
		if len(blocks) == 0 {
			return
		}
		// Anthropic wants turns to alternate: consecutive ones of a role merge.
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
			return
		}
		msgs = append(msgs, anMessage{Role: role, Content: blocks})
	}
	for _, m := range in.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, textOf(m.Content))
		case "user":
			b, err := oaContentBlocks(m.Content)
			if err != nil {
				return nil, err
			}
			add("user", b)
		case "assistant":
			b, err := oaContentBlocks(m.Content)
			if err != nil {
				return nil, err
			}
			for _, tc := range m.ToolCalls {
				input := json.RawMessage(tc.Function.Arguments)
				if !json.Valid(input) || len(bytes.TrimSpace(input)) == 0 {
					input = json.RawMessage("{}")
				}
				b = append(b, anBlockT{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input})
			}
			add("assistant", b)
		case "tool":
			c, _ := json.Marshal(textOf(m.Content))
			add("user", []anBlockT{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: c}})
		default:
			return nil, bad("messages: role %q cannot be passed to this model's upstream", m.Role)
		}
	}
	if len(system) > 0 {
		out["system"] = strings.Join(system, "\n\n")
	}
	if msgs == nil {
		msgs = []anMessage{}
	}
	out["messages"] = msgs
	if in.Temperature != nil {
		out["temperature"] = *in.Temperature
	}
	if in.TopP != nil {
		out["top_p"] = *in.TopP
	}
	if len(in.Stop) > 0 && string(in.Stop) != "null" {
		var one string
		var many []string
		if json.Unmarshal(in.Stop, &one) == nil {
			many = []string{one}
		} else {
			json.Unmarshal(in.Stop, &many)
		}
		out["stop_sequences"] = many
	}
	if in.Stream {
		out["stream"] = true
	}
	if len(in.Tools) > 0 {
		var tools []map[string]any
		for _, t := range in.Tools {
			schema := t.Function.Parameters
			if len(schema) == 0 || string(schema) == "null" {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			tool := map[string]any{"name": t.Function.Name, "input_schema": schema}
			if t.Function.Description != "" {
				tool["description"] = t.Function.Description
			}
			tools = append(tools, tool)
		}
		out["tools"] = tools
	}
	if len(in.ToolChoice) > 0 && string(in.ToolChoice) != "null" {
		var s string
		if json.Unmarshal(in.ToolChoice, &s) == nil {
			switch s {
			case "auto":
				out["tool_choice"] = map[string]any{"type": "auto"}
			case "required":
				out["tool_choice"] = map[string]any{"type": "any"}
			case "none":
				out["tool_choice"] = map[string]any{"type": "none"}
			}
		} else {
			var c struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			json.Unmarshal(in.ToolChoice, &c)
			out["tool_choice"] = map[string]any{"type": "tool", "name": c.Function.Name}
		}
	}
	if in.User != "" {
		out["metadata"] = map[string]any{"user_id": in.User}
	}
	return marshal(out), nil
}

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// anText reads Anthropic content: a string, or blocks whose text is joined.
func anText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []anBlockT
	json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

func anthropicToOpenAI(body []byte) ([]byte, error) {
	var in struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		MaxTokens     int64    `json:"max_tokens"`
		Temperature   *float64 `json:"temperature"`
		TopP          *float64 `json:"top_p"`
		StopSequences []string `json:"stop_sequences"`
		Stream        bool     `json:"stream"`
		Tools         []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		ToolChoice *struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tool_choice"`
		Metadata *struct {
			UserID string `json:"user_id"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, bad("the request body is not a messages request: %v", err)
	}
	out := map[string]any{"model": in.Model}
	var msgs []map[string]any
	if len(in.System) > 0 && string(in.System) != "null" {
		if s := anText(in.System); s != "" {
			msgs = append(msgs, map[string]any{"role": "system", "content": s})
		}
	}
	for _, m := range in.Messages {
		var blocks []anBlockT
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks = []anBlockT{{Type: "text", Text: s}}
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return nil, bad("messages: content must be a string or a list of blocks")
		}
		var parts []map[string]any
		var calls []map[string]any
		var results []map[string]any
		for _, b := range blocks {
			switch b.Type {
			case "text":
				parts = append(parts, map[string]any{"type": "text", "text": b.Text})
			case "image":
				if b.Source == nil {
					continue
				}
				u := b.Source.URL
				if b.Source.Type == "base64" {
					u = "data:" + b.Source.MediaType + ";base64," + b.Source.Data
				}
				parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": u}})
			case "tool_use":
				args := string(b.Input)
				if args == "" {
					args = "{}"
				}
				calls = append(calls, map[string]any{"id": b.ID, "type": "function", "function": map[string]any{"name": b.Name, "arguments": args}})
			case "tool_result":
				results = append(results, map[string]any{"role": "tool", "tool_call_id": b.ToolUseID, "content": anText(b.Content)})
			case "thinking", "redacted_thinking":
				// OpenAI's format has no place for them.
			default:
				return nil, bad("messages: content blocks of type %q cannot be passed to this model's upstream", b.Type)
			}
		}
		// Tool results answer the calls of the turn before: they come first.
		msgs = append(msgs, results...)
		if m.Role == "assistant" {
			msg := map[string]any{"role": "assistant"}
			var text strings.Builder
			for _, p := range parts {
				if t, ok := p["text"].(string); ok {
					text.WriteString(t)
				}
			}
			if text.Len() > 0 {
				msg["content"] = text.String()
			} else {
				msg["content"] = nil
			}
			if len(calls) > 0 {
				msg["tool_calls"] = calls
			}
			if text.Len() > 0 || len(calls) > 0 {
				msgs = append(msgs, msg)
			}
			continue
		}
		if len(parts) == 1 && parts[0]["type"] == "text" {
			msgs = append(msgs, map[string]any{"role": m.Role, "content": parts[0]["text"]})
		} else if len(parts) > 0 {
			msgs = append(msgs, map[string]any{"role": m.Role, "content": parts})
		}
	}
	if msgs == nil {
		msgs = []map[string]any{}
	}
	out["messages"] = msgs
	if in.MaxTokens > 0 {
		out["max_completion_tokens"] = in.MaxTokens
	}
	if in.Temperature != nil {
		out["temperature"] = *in.Temperature
	}
	if in.TopP != nil {
		out["top_p"] = *in.TopP
	}
	if len(in.StopSequences) > 0 {
		out["stop"] = in.StopSequences
	}
	if in.Stream {
		out["stream"] = true
		out["stream_options"] = map[string]any{"include_usage": true}
	}
	if len(in.Tools) > 0 {
		var tools []map[string]any
		for _, t := range in.Tools {
			fn := map[string]any{"name": t.Name, "parameters": t.InputSchema}
			if t.Description != "" {
				fn["description"] = t.Description
			}
			tools = append(tools, map[string]any{"type": "function", "function": fn})
		}
		out["tools"] = tools
	}
	if c := in.ToolChoice; c != nil {
		switch c.Type {
		case "auto":
			out["tool_choice"] = "auto"
		case "any":
			out["tool_choice"] = "required"
		case "none":
			out["tool_choice"] = "none"
		case "tool":
			out["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": c.Name}}
		}
	}
	if in.Metadata != nil && in.Metadata.UserID != "" {
		out["user"] = in.Metadata.UserID
	}
	return marshal(out), nil
}

var stopToAnthropic = map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use", "content_filter": "refusal"}
var stopToOpenAI = map[string]string{"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls", "pause_turn": "stop", "refusal": "content_filter"}

func mapStop(m map[string]string, s, dflt string) string {
	if v, ok := m[s]; ok {
		return v
	}
	return dflt
}

// TranslateWhole rewrites a whole answer of dialect from into dialect to; model
// is the name the client called.
func TranslateWhole(from, to Dialect, body []byte, model string) ([]byte, error) {
	if from == to {
		return body, nil
	}
	if from == OpenAI {
		var in struct {
			ID      string `json:"id"`
			Choices []struct {
				Message struct {
					Content   *string      `json:"content"`
					Refusal   *string      `json:"refusal"`
					ToolCalls []oaToolCall `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage *oaUsage `json:"usage"`
		}
		if err := json.Unmarshal(body, &in); err != nil || len(in.Choices) == 0 {
			return nil, fmt.Errorf("the upstream's answer is not a chat completion")
		}
		ch := in.Choices[0]
		content := []map[string]any{}
		if t := ch.Message.Content; t != nil && *t != "" {
			content = append(content, map[string]any{"type": "text", "text": *t})
		} else if r := ch.Message.Refusal; r != nil && *r != "" {
			content = append(content, map[string]any{"type": "text", "text": *r})
		}
		for _, tc := range ch.Message.ToolCalls {
			input := json.RawMessage(tc.Function.Arguments)
			if !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": input})
		}
		u := Usage{}
		if in.Usage != nil {
			u = in.Usage.usage()
		}
		return marshal(map[string]any{"id": in.ID, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": mapStop(stopToAnthropic, ch.FinishReason, "end_turn"), "stop_sequence": nil,
			"usage": anthropicUsage(u)}), nil
	}
	var in struct {
		ID         string     `json:"id"`
		Content    []anBlockT `json:"content"`
		StopReason string     `json:"stop_reason"`
		Usage      *anUsage   `json:"usage"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("the upstream's answer is not a message")
	}
	var text strings.Builder
	var calls []map[string]any
	for _, b := range in.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			calls = append(calls, map[string]any{"id": b.ID, "type": "function", "function": map[string]any{"name": b.Name, "arguments": args}})
		}
	}
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if text.Len() > 0 {
		msg["content"] = text.String()
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	var u Usage
	if in.Usage != nil {
		u.merge(in.Usage)
	}
	return marshal(map[string]any{"id": in.ID, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": mapStop(stopToOpenAI, in.StopReason, "stop"), "logprobs": nil}},
		"usage":   openAIUsage(u)}), nil
}

func anthropicUsage(u Usage) map[string]any {
	return map[string]any{"input_tokens": u.Input - u.Cached, "output_tokens": u.Output, "cache_read_input_tokens": u.Cached, "cache_creation_input_tokens": 0}
}

func openAIUsage(u Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.Cached}}
}

// TranslateError rewrites an upstream's error body into the client's dialect.
func TranslateError(to Dialect, k Kind, body []byte) []byte {
	msg := "the upstream refused the request"
	var v struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil && v.Error.Message != "" {
		msg = v.Error.Message
	}
	return ErrorBody(to, k, msg)
}

// StreamTranslator rewrites a stream's events from one dialect into the
// other, event by event.
type StreamTranslator struct {
	From, To Dialect
	Model    string // the name the client called
	// IncludeUsage: the OpenAI client asked for the usage chunk.
	IncludeUsage bool

	id      string
	started bool
	// OpenAI → Anthropic: the block open, and the tool calls' blocks by index.
	block     int    // index of the open block, -1: none
	blockKind string // "text" or "tool"
	tools     map[int]int
	nblocks   int
	stop      string
	usage     Usage
	// Anthropic → OpenAI: tool_use blocks by their index, as tool call indexes.
	calls   map[int]int
	ncalls  int
	created int64
}

// Event translates one event; it returns the bytes to send (none, one event, or
// several).
func (t *StreamTranslator) Event(name string, data []byte) []byte {
	if t.From == Anthropic {
		return t.fromAnthropic(name, data)
	}
	return t.fromOpenAI(data)
}

func sse(name string, v any) []byte {
	b := marshal(v)
	if name == "" {
		return append(append([]byte("data: "), b...), '\n', '\n')
	}
	out := append([]byte("event: "+name+"\ndata: "), b...)
	return append(out, '\n', '\n')
}

func (t *StreamTranslator) chunk(delta map[string]any, finish any) []byte {
	return sse("", map[string]any{"id": t.id, "object": "chat.completion.chunk", "created": t.created, "model": t.Model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}})
}

func (t *StreamTranslator) fromAnthropic(name string, data []byte) []byte {
	var e struct {
		Type    string `json:"type"`
		Index   int    `json:"index"`
		Message *struct {
			ID    string   `json:"id"`
			Usage *anUsage `json:"usage"`
		} `json:"message"`
		ContentBlock *anBlockT `json:"content_block"`
		Delta        *struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
		Usage *anUsage `json:"usage"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil {
		return nil
	}
	if e.Type == "" {
		e.Type = name
	}
	if t.calls == nil {
		t.calls = map[int]int{}
		t.created = time.Now().Unix()
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			t.id = e.Message.ID
			if e.Message.Usage != nil {
				t.usage.merge(e.Message.Usage)
			}
		}
		return t.chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	case "content_block_start":
		if e.ContentBlock != nil && e.ContentBlock.Type == "tool_use" {
			i := t.ncalls
			t.ncalls++
			t.calls[e.Index] = i
			return t.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": e.ContentBlock.ID, "type": "function",
				"function": map[string]any{"name": e.ContentBlock.Name, "arguments": ""}}}}, nil)
		}
	case "content_block_delta":
		if e.Delta == nil {
			return nil
		}
		switch e.Delta.Type {
		case "text_delta":
			return t.chunk(map[string]any{"content": e.Delta.Text}, nil)
		case "input_json_delta":
			return t.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": t.calls[e.Index], "function": map[string]any{"arguments": e.Delta.PartialJSON}}}}, nil)
		}
	case "message_delta":
		if e.Usage != nil {
			t.usage.merge(e.Usage)
		}
		if e.Delta != nil && e.Delta.StopReason != "" {
			return t.chunk(map[string]any{}, mapStop(stopToOpenAI, e.Delta.StopReason, "stop"))
		}
	case "message_stop":
		var out []byte
		if t.IncludeUsage {
			out = sse("", map[string]any{"id": t.id, "object": "chat.completion.chunk", "created": t.created, "model": t.Model,
				"choices": []any{}, "usage": openAIUsage(t.usage)})
		}
		return append(out, []byte("data: [DONE]\n\n")...)
	case "error":
		msg := "the upstream failed during the answer"
		if e.Error != nil {
			msg = e.Error.Message
		}
		return ErrorEvent(OpenAI, KindUpstream, msg)
	}
	return nil
}

func (t *StreamTranslator) closeBlock() []byte {
	if t.block < 0 {
		return nil
	}
	out := sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": t.block})
	t.block = -1
	return out
}

func (t *StreamTranslator) fromOpenAI(data []byte) []byte {
	if t.tools == nil {
		t.tools = map[int]int{}
		t.block = -1
	}
	var out []byte
	done := bytes.Equal(bytes.TrimSpace(data), doneData)
	if !t.started {
		t.started = true
		var head struct {
			ID string `json:"id"`
		}
		if !done {
			json.Unmarshal(data, &head)
		}
		t.id = head.ID
		out = sse("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_" + strings.TrimPrefix(t.id, "chatcmpl-"), "type": "message", "role": "assistant", "model": t.Model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 0, "output_tokens": 0}}})
	}
	if done {
		out = append(out, t.closeBlock()...)
		out = append(out, sse("message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": mapStop(stopToAnthropic, t.stop, "end_turn"), "stop_sequence": nil},
			"usage": anthropicUsage(t.usage)})...)
		return append(out, sse("message_stop", map[string]any{"type": "message_stop"})...)
	}
	var c struct {
		ID      string `json:"id"`
		Choices []struct {
			Delta struct {
				Content   string       `json:"content"`
				Refusal   string       `json:"refusal"`
				ToolCalls []oaToolCall `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *oaUsage `json:"usage"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &c) != nil {
		return out
	}
	if c.Error != nil {
		return append(out, ErrorEvent(Anthropic, KindUpstream, c.Error.Message)...)
	}
	if c.Usage != nil {
		t.usage = c.Usage.usage()
	}
	for _, ch := range c.Choices {
		text := ch.Delta.Content + ch.Delta.Refusal
		if text != "" {
			if t.block < 0 || t.blockKind != "text" {
				out = append(out, t.closeBlock()...)
				t.block, t.blockKind = t.nblocks, "text"
				t.nblocks++
				out = append(out, sse("content_block_start", map[string]any{"type": "content_block_start", "index": t.block,
					"content_block": map[string]any{"type": "text", "text": ""}})...)
			}
			out = append(out, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": t.block,
				"delta": map[string]any{"type": "text_delta", "text": text}})...)
		}
		for _, tc := range ch.Delta.ToolCalls {
			idx := 0
			if tc.Index != nil {
				idx = *tc.Index
			}
			b, ok := t.tools[idx]
			if !ok {
				out = append(out, t.closeBlock()...)
				b = t.nblocks
				t.nblocks++
				t.tools[idx] = b
				t.block, t.blockKind = b, "tool"
				out = append(out, sse("content_block_start", map[string]any{"type": "content_block_start", "index": b,
					"content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": map[string]any{}}})...)
			}
			if tc.Function.Arguments != "" {
				out = append(out, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": b,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": tc.Function.Arguments}})...)
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			t.stop = *ch.FinishReason
		}
	}
	return out
}
