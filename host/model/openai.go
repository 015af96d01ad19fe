package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// openaiWire speaks Chat Completions as OpenAI defines it and as DeepSeek, Qwen,
// Ollama, vLLM, llama.cpp and LM Studio implement it.
type openaiWire struct{}

func (openaiWire) endpoint(base string) string { return base + "/chat/completions" }

func (openaiWire) setHeaders(h http.Header, key string) {
	// Local servers need no key, and some refuse a bogus one.
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}

func (openaiWire) errorOf(body []byte) (string, string) { return vendorError(body) }

type oaRequest struct {
	Model         string       `json:"model"`
	Messages      []oaMessage  `json:"messages"`
	Tools         []oaTool     `json:"tools,omitempty"`
	MaxTokens     int          `json:"max_tokens,omitempty"`
	Stream        bool         `json:"stream"`
	StreamOptions *oaStreamOpt `json:"stream_options,omitempty"`
}

type oaStreamOpt struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaMessage struct {
	Role string `json:"role"`
	// Content is a string, a list of parts, or null (an assistant turn that only
	// calls tools).
	Content    any          `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaPart struct {
	Type     string      `json:"type"`
	Text     string      `json:"text,omitempty"`
	ImageURL *oaImageURL `json:"image_url,omitempty"`
}

type oaImageURL struct {
	URL string `json:"url"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func userContent(text string, images []string) any {
	if len(images) == 0 {
		return text
	}
	var parts []oaPart
	if text != "" {
		parts = append(parts, oaPart{Type: "text", Text: text})
	}
	for _, img := range images {
		parts = append(parts, oaPart{Type: "image_url", ImageURL: &oaImageURL{URL: img}})
	}
	return parts
}

func (openaiWire) encode(c *client, req Request) ([]byte, error) {
	r := oaRequest{Model: c.info.Model, Stream: true, StreamOptions: &oaStreamOpt{IncludeUsage: true}, MaxTokens: c.maxTokens}
	if req.MaxTokens > 0 {
		r.MaxTokens = req.MaxTokens
	}
	if req.System != "" {
		r.Messages = append(r.Messages, oaMessage{Role: "system", Content: req.System})
	}
	// Tool messages accept only text, and nothing may come between an assistant's
	// tool calls and their results; images of a run of results follow it as one
	// user message.
	var pending []oaPart
	flush := func() {
		if len(pending) > 0 {
			r.Messages = append(r.Messages, oaMessage{Role: "user", Content: pending})
			pending = nil
		}
	}
	for _, m := range req.Messages {
		if m.Role != RoleTool {
			flush()
		}
		switch m.Role {
		case RoleUser:
			r.Messages = append(r.Messages, oaMessage{Role: "user", Content: userContent(m.Content, m.Images)})
		case RoleAssistant:
			om := oaMessage{Role: "assistant", Content: m.Content}
			if m.Content == "" && len(m.ToolCalls) > 0 {
				om.Content = nil
			}
			for _, tc := range m.ToolCalls {
				var t oaToolCall
				t.ID, t.Type = tc.ID, "function"
				t.Function.Name = tc.Name
				t.Function.Arguments = string(tc.Arguments)
				if strings.TrimSpace(t.Function.Arguments) == "" {
					t.Function.Arguments = "{}"
				}
				om.ToolCalls = append(om.ToolCalls, t)
			}
			r.Messages = append(r.Messages, om)
		case RoleTool:
			r.Messages = append(r.Messages, oaMessage{Role: "tool", ToolCallID: m.ToolCallID, Content: m.Content})
			if len(m.Images) > 0 {
				pending = append(pending, oaPart{Type: "text", Text: fmt.Sprintf("Images returned by tool call %s:", m.ToolCallID)})
				for _, img := range m.Images {
					pending = append(pending, oaPart{Type: "image_url", ImageURL: &oaImageURL{URL: img}})
				}
			}
		default:
			return nil, fmt.Errorf("message role %q is not one of user, assistant, tool", m.Role)
		}
	}
	flush()
	for _, t := range req.Tools {
		var ot oaTool
		ot.Type = "function"
		ot.Function.Name, ot.Function.Description, ot.Function.Parameters = t.Name, t.Description, schemaOrEmpty(t.Parameters)
		r.Tools = append(r.Tools, ot)
	}
	return marshal(r)
}

func schemaOrEmpty(s json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(s))) == 0 || string(s) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return s
}

// oaChunk is one streamed chunk. Reasoning fields (reasoning_content of DeepSeek and
// Qwen, reasoning of Ollama and OpenRouter) are deliberately not declared: they are
// the model's scratchpad, not its answer.
type oaChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage       `json:"usage"`
	Error *oaStreamError `json:"error"`
}

type oaUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type oaStreamError struct {
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

func (e *oaStreamError) UnmarshalJSON(b []byte) error {
	// Some servers send a bare string.
	var s string
	if json.Unmarshal(b, &s) == nil {
		e.Message = s
		return nil
	}
	type plain oaStreamError
	return json.Unmarshal(b, (*plain)(e))
}

func (openaiWire) decode(c *client, resp *http.Response, emit func(string)) (*Response, error) {
	if isJSON(resp) {
		return decodeOpenAIWhole(c, resp, emit)
	}
	var (
		out      Response
		calls    []*ToolCall
		args     []strings.Builder
		slot     = map[int]int{} // the vendor's tool-call index → position in calls
		finish   string
		finished bool
		text     strings.Builder
	)
	sse := newSSEReader(resp.Body)
	for {
		ev, err := sse.Next()
		if errors.Is(err, io.EOF) {
			if !finished {
				return nil, io.ErrUnexpectedEOF
			}
			// A few servers close without [DONE] once they have finished.
			break
		}
		if err != nil {
			return nil, err
		}
		data := strings.TrimSpace(string(ev.Data))
		if data == "[DONE]" {
			break
		}
		if data == "" {
			continue
		}
		var ch oaChunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return nil, fmt.Errorf("a chunk is not JSON (%v): %.200s", err, data)
		}
		if ch.Error != nil {
			typ := ch.Error.Type
			var code string
			if json.Unmarshal(ch.Error.Code, &code) == nil && code != "" {
				typ = code
			}
			return nil, c.streamError(typ, ch.Error.Message)
		}
		if ch.Usage != nil {
			out.Usage = Usage{InputTokens: ch.Usage.PromptTokens, OutputTokens: ch.Usage.CompletionTokens}
		}
		for _, choice := range ch.Choices {
			if choice.Index != 0 {
				continue
			}
			if d := choice.Delta.Content; d != nil {
				text.WriteString(*d)
				emit(*d)
			}
			for _, tc := range choice.Delta.ToolCalls {
				idx := len(calls)
				if tc.Index != nil {
					idx = *tc.Index
				} else if tc.ID == "" && len(calls) > 0 {
					idx = len(calls) - 1 // no index, no id: more of the last call
				}
				pos, ok := slot[idx]
				// A new id at a known index is a new call (servers that number every
				// call 0, as some do).
				if ok && tc.ID != "" && calls[pos].ID != "" && calls[pos].ID != tc.ID {
					ok = false
				}
				if !ok {
					pos = len(calls)
					slot[idx] = pos
					calls = append(calls, &ToolCall{})
					args = append(args, strings.Builder{})
				}
				if tc.ID != "" {
					calls[pos].ID = tc.ID
				}
				// Names come whole in one chunk from most servers, repeated in every
				// chunk from a few, and in pieces from fewer still.
				if n := tc.Function.Name; n != "" && n != calls[pos].Name {
					calls[pos].Name += n
				}
				args[pos].WriteString(tc.Function.Arguments)
			}
			if choice.FinishReason != nil && *choice.FinishReason != "" {
				finish, finished = *choice.FinishReason, true
			}
		}
	}
	out.Text = text.String()
	for i, tc := range calls {
		tc.Arguments = argsJSON(args[i].String())
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("call_%d", i) // some local servers give none; the answer must name it
		}
		out.ToolCalls = append(out.ToolCalls, *tc)
	}
	out.StopReason = openaiStop(finish, len(out.ToolCalls) > 0)
	return &out, nil
}

func argsJSON(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}

func openaiStop(finish string, calls bool) string {
	switch finish {
	case "tool_calls", "function_call":
		return StopToolUse
	case "length":
		return StopMaxTokens
	case "stop", "":
		// Ollama and others have said "stop" for a turn that calls tools.
		if calls {
			return StopToolUse
		}
		return StopEndTurn
	}
	return finish
}

// decodeOpenAIWhole reads a non-streamed completion, from a server that ignored
// "stream": true.
func decodeOpenAIWhole(c *client, resp *http.Response, emit func(string)) (*Response, error) {
	var v struct {
		Choices []struct {
			Message struct {
				Content   *string      `json:"content"`
				ToolCalls []oaToolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *oaUsage       `json:"usage"`
		Error *oaStreamError `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&v); err != nil {
		return nil, fmt.Errorf("reading the completion: %w", err)
	}
	if v.Error != nil {
		return nil, c.streamError(v.Error.Type, v.Error.Message)
	}
	var out Response
	if v.Usage != nil {
		out.Usage = Usage{InputTokens: v.Usage.PromptTokens, OutputTokens: v.Usage.CompletionTokens}
	}
	if len(v.Choices) == 0 {
		return nil, errors.New("the completion has no choices")
	}
	ch := v.Choices[0]
	if ch.Message.Content != nil {
		out.Text = *ch.Message.Content
		emit(out.Text)
	}
	for i, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: tc.Function.Name, Arguments: argsJSON(tc.Function.Arguments)})
	}
	out.StopReason = openaiStop(ch.FinishReason, len(out.ToolCalls) > 0)
	return &out, nil
}
