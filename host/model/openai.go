package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// openaiWire speaks Chat Completions as OpenAI defines it and as DeepSeek, Qwen,
// Ollama, vLLM, llama.cpp and LM Studio implement it.
type openaiWire struct{}

func (openaiWire) endpoint(base string, o Options) string {
	// A base URL pasted whole, endpoint included, works as well as one without.
	base = strings.TrimSuffix(base, "/chat/completions")
	if o.APIVersion != "" {
		return base + "/chat/completions?api-version=" + url.QueryEscape(o.APIVersion)
	}
	return base + "/chat/completions"
}

// setKey: local servers need no key (and some refuse a bogus one), so none is sent
// when none is set; Azure wants its own header.
func (openaiWire) vendorHeaders(h http.Header, key string, o Options) {
	if key == "" {
		return
	}
	if o.KeyHeader == "api-key" {
		h.Set("api-key", key)
		return
	}
	h.Set("Authorization", "Bearer "+key)
}

// adapt learns from a refusal that names an option detection got wrong: Mistral's
// 422 for stream_options (and Fireworks' and older Azure versions' 400s),
// OpenAI's 400 for max_tokens on a reasoning model, a server that knows only
// max_tokens, and DeepSeek's 400 for a history without its reasoning.
func (openaiWire) adapt(o Options, s OptionSettings, e *Error) (Options, string, bool) {
	if e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity {
		return o, "", false
	}
	m := strings.ToLower(e.Message)
	auto := func(v string) bool { return v == "" || v == OptionAuto }
	switch {
	case o.StreamUsage && auto(s.StreamUsage) && strings.Contains(m, "stream_options"):
		o.StreamUsage = false
		return o, "stream_options off: the server refused it (--stream-usage off keeps it so)", true
	case o.MaxTokensField == FieldMaxTokens && auto(s.MaxTokensField) && strings.Contains(m, "max_completion_tokens"):
		o.MaxTokensField = FieldMaxCompletionTokens
		return o, "length field max_completion_tokens: the model refused max_tokens (--max-tokens-field max_completion_tokens keeps it so)", true
	case o.MaxTokensField == FieldMaxCompletionTokens && auto(s.MaxTokensField) && strings.Contains(m, "max_completion_tokens"):
		o.MaxTokensField = FieldMaxTokens
		return o, "length field max_tokens: the server refused max_completion_tokens (--max-tokens-field max_tokens keeps it so)", true
	case !o.SendReasoning && auto(s.SendReasoning) && strings.Contains(m, "reasoning_content") && strings.Contains(m, "passed back"):
		o.SendReasoning = true
		return o, "reasoning sent back: the server requires each turn's reasoning_content (--send-reasoning on keeps it so)", true
	case o.SendReasoning && auto(s.SendReasoning) && strings.Contains(m, "reasoning_content") && strings.Contains(m, "extra_forbidden"):
		o.SendReasoning = false
		return o, "reasoning not sent back: the server refused reasoning_content (--send-reasoning off keeps it so)", true
	}
	return o, "", false
}

type oaRequest struct {
	Model               string       `json:"model"`
	Messages            []oaMessage  `json:"messages"`
	Tools               []oaTool     `json:"tools,omitempty"`
	MaxTokens           int          `json:"max_tokens,omitempty"`
	MaxCompletionTokens int          `json:"max_completion_tokens,omitempty"`
	Stream              bool         `json:"stream"`
	StreamOptions       *oaStreamOpt `json:"stream_options,omitempty"`
}

type oaStreamOpt struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaMessage struct {
	Role string `json:"role"`
	// Content is a string, a list of parts, or null (an assistant turn that only
	// calls tools).
	Content any `json:"content"`
	// ReasoningContent is DeepSeek's: sent back (when the options say so) on every
	// assistant turn, "" included, since its thinking mode refuses a tool-calling
	// turn without it.
	ReasoningContent *string      `json:"reasoning_content,omitempty"`
	ToolCalls        []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string       `json:"tool_call_id,omitempty"`
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

func (openaiWire) encode(c *client, req Request, o Options) ([]byte, error) {
	r := oaRequest{Model: c.info.Model, Stream: true}
	if o.StreamUsage {
		r.StreamOptions = &oaStreamOpt{IncludeUsage: true}
	}
	if o.MaxTokensField == FieldMaxCompletionTokens {
		r.MaxCompletionTokens = c.maxTokens(req)
	} else {
		r.MaxTokens = c.maxTokens(req)
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
			if o.SendReasoning {
				var text string
				if m.Reasoning != nil {
					text = m.Reasoning.Text
				}
				om.ReasoningContent = &text
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

// oaChunk is one streamed chunk (or a whole completion), read loosely: what the
// vendors disagree on (content as a string or as parts, reasoning under two names,
// errors in three shapes) is kept raw and read below.
type oaChunk struct {
	Object  string     `json:"object"`
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage"`
	// Groq puts the usage of a stream here, on its last chunk.
	XGroq *struct {
		Usage *oaUsage `json:"usage"`
	} `json:"x_groq"`
	Error json.RawMessage `json:"error"`
}

type oaChoice struct {
	Index        int      `json:"index"`
	Delta        oaDelta  `json:"delta"`
	Message      *oaDelta `json:"message"` // a whole completion's
	FinishReason *string  `json:"finish_reason"`
}

type oaDelta struct {
	Content          json.RawMessage `json:"content"`           // a string, a list of parts (Mistral), or null
	ReasoningContent json.RawMessage `json:"reasoning_content"` // DeepSeek, Qwen, xAI
	Reasoning        json.RawMessage `json:"reasoning"`         // Ollama, OpenRouter, vLLM, Groq
	Refusal          json.RawMessage `json:"refusal"`           // OpenAI
	ToolCalls        []oaToolDelta   `json:"tool_calls"`
	FunctionCall     *oaFunction     `json:"function_call"` // the legacy single call
}

type oaToolDelta struct {
	Index    *int       `json:"index"`
	ID       string     `json:"id"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name string `json:"name"`
	// Arguments is JSON text in a string; a few servers send the object itself.
	Arguments json.RawMessage `json:"arguments"`
}

func (f oaFunction) args() string {
	var s string
	if json.Unmarshal(f.Arguments, &s) == nil {
		return s
	}
	if len(f.Arguments) == 0 || string(f.Arguments) == "null" {
		return ""
	}
	return string(f.Arguments)
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"` // DeepSeek
}

// usage normalises the vendors' counts. completion_tokens includes the reasoning
// at OpenAI, and excludes it at xAI, whose total_tokens is then prompt + completion
// + reasoning: that sum tells which.
func (u *oaUsage) usage() Usage {
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadTokens = d.CachedTokens
	}
	if out.CacheReadTokens == 0 {
		out.CacheReadTokens = u.PromptCacheHitTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	if r := out.ReasoningTokens; r > 0 && u.TotalTokens == u.PromptTokens+u.CompletionTokens+r {
		out.OutputTokens += r
	}
	return out
}

// textOf reads a text member that may be a string, null, or a list of parts.
func textOf(raw json.RawMessage) string {
	text, _ := contentParts(raw)
	return text
}

// contentParts splits content into its text and its thinking: a string is text;
// Mistral's Magistral sends a list of parts, {"type": "text", "text"} and
// {"type": "thinking", "thinking": [parts]}.
func contentParts(raw json.RawMessage) (text, thinking string) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", ""
	}
	var t, th strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "":
			t.WriteString(p.Text)
		case "thinking", "reasoning":
			th.WriteString(textOf(p.Thinking))
			th.WriteString(p.Text)
		}
	}
	return t.String(), th.String()
}

// oaAnswer assembles an answer from deltas (or from a whole message, one delta).
type oaAnswer struct {
	text, refusal, reasoning strings.Builder
	calls                    []*ToolCall
	args                     []strings.Builder
	slot                     map[int]int // the vendor's tool-call index → position in calls
	finish                   string
	finished                 bool
	usage                    Usage
}

func (a *oaAnswer) add(d oaDelta, emit func(string)) {
	text, thinking := contentParts(d.Content)
	if text != "" {
		a.text.WriteString(text)
		emit(text)
	}
	a.reasoning.WriteString(thinking)
	a.reasoning.WriteString(textOf(d.ReasoningContent))
	a.reasoning.WriteString(textOf(d.Reasoning))
	a.refusal.WriteString(textOf(d.Refusal))
	if f := d.FunctionCall; f != nil {
		// The legacy single call: one call, in pieces, with no id.
		if len(a.calls) == 0 {
			a.calls = append(a.calls, &ToolCall{})
			a.args = append(a.args, strings.Builder{})
		}
		a.calls[0].Name += f.Name
		a.args[0].WriteString(f.args())
	}
	for _, tc := range d.ToolCalls {
		if a.slot == nil {
			a.slot = map[int]int{}
		}
		idx := len(a.calls)
		if tc.Index != nil {
			idx = *tc.Index
		} else if tc.ID == "" && len(a.calls) > 0 {
			idx = len(a.calls) - 1 // no index, no id: more of the last call
		}
		pos, ok := a.slot[idx]
		// A new id at a known index is a new call (servers that number every
		// call 0, as some do).
		if ok && tc.ID != "" && a.calls[pos].ID != "" && a.calls[pos].ID != tc.ID {
			ok = false
		}
		if !ok {
			pos = len(a.calls)
			a.slot[idx] = pos
			a.calls = append(a.calls, &ToolCall{})
			a.args = append(a.args, strings.Builder{})
		}
		if tc.ID != "" {
			a.calls[pos].ID = tc.ID
		}
		// Names come whole in one chunk from most servers, repeated in every
		// chunk from a few, and in pieces from fewer still.
		if n := tc.Function.Name; n != "" && n != a.calls[pos].Name {
			a.calls[pos].Name += n
		}
		a.args[pos].WriteString(tc.Function.args())
	}
}

func (a *oaAnswer) response() *Response {
	out := &Response{Text: a.text.String(), Refusal: a.refusal.String(), Usage: a.usage}
	if r := a.reasoning.String(); r != "" {
		out.Reasoning = &Reasoning{Text: r}
	}
	seen := map[string]bool{}
	for i, tc := range a.calls {
		tc.Arguments = argsJSON(a.args[i].String())
		if tc.ID == "" || seen[tc.ID] {
			tc.ID = fmt.Sprintf("call_%d", i) // some servers give none; the answer must name it
		}
		seen[tc.ID] = true
		out.ToolCalls = append(out.ToolCalls, *tc)
	}
	out.StopReason = openaiStop(a.finish, len(out.ToolCalls) > 0, out.Refusal != "")
	return out
}

// chunkError is the error a chunk carries, in any of the shapes servers use: an
// "error" member (OpenAI, Ollama, OpenRouter, newer llama.cpp), a bare error object
// (vLLM: "object": "error"), or finish_reason "error" (OpenRouter).
func (c *client) chunkError(ch *oaChunk, data []byte) error {
	failed := ch.Object == "error" || (len(ch.Error) > 0 && string(ch.Error) != "null")
	for _, choice := range ch.Choices {
		if choice.FinishReason != nil && *choice.FinishReason == "error" {
			failed = true
		}
	}
	if !failed {
		return nil
	}
	ve := parseVendorError(data)
	if ve.msg == "" && ve.typ == "" {
		ve.msg = "the server ended the answer with finish_reason \"error\" and no message"
	}
	return c.streamFailure(ve.code, ve.typ, ve.msg)
}

func (openaiWire) decode(c *client, resp *http.Response, emit func(string)) (*Response, error) {
	if isJSON(resp) {
		return decodeOpenAIWhole(c, resp, emit)
	}
	var a oaAnswer
	sse := newSSEReader(resp.Body)
	for {
		ev, err := sse.Next()
		if errors.Is(err, io.EOF) {
			if !a.finished {
				return nil, io.ErrUnexpectedEOF
			}
			// A few servers close without [DONE] once they have finished.
			break
		}
		if err != nil {
			return nil, err
		}
		if len(ev.Error) > 0 {
			// llama.cpp's "error:" field.
			ve := parseVendorError(ev.Error)
			if ve.msg == "" {
				ve.msg = strings.TrimSpace(string(ev.Error))
			}
			return nil, c.streamFailure(ve.code, ve.typ, ve.msg)
		}
		data := strings.TrimSpace(string(ev.Data))
		if data == "[DONE]" {
			if !a.finished {
				return nil, &Error{Provider: c.info.ID, Type: "incomplete",
					Message:   "the server ended the stream ([DONE]) without saying the answer was finished (no finish_reason): it was cut short, or the server failed without saying why",
					Fix:       "try again; if it keeps happening, the server's log says what failed",
					Retryable: true}
			}
			break
		}
		if data == "" {
			continue
		}
		var ch oaChunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return nil, fmt.Errorf("a chunk is not JSON (%v): %.200s", err, data)
		}
		if ev.Event == "error" {
			ve := parseVendorError([]byte(data))
			return nil, c.streamFailure(ve.code, ve.typ, ve.msg)
		}
		if err := c.chunkError(&ch, []byte(data)); err != nil {
			return nil, err
		}
		if ch.Usage != nil {
			a.usage = ch.Usage.usage()
		}
		if ch.XGroq != nil && ch.XGroq.Usage != nil {
			a.usage = ch.XGroq.Usage.usage()
		}
		for _, choice := range ch.Choices {
			if choice.Index != 0 {
				continue
			}
			a.add(choice.Delta, emit)
			if choice.FinishReason != nil && *choice.FinishReason != "" {
				a.finish, a.finished = *choice.FinishReason, true
			}
		}
	}
	return a.response(), nil
}

func argsJSON(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}

// openaiStop maps a finish_reason onto the Stop* reasons.
func openaiStop(finish string, calls, refused bool) string {
	if refused {
		return StopRefusal
	}
	switch finish {
	case "tool_calls", "function_call":
		return StopToolUse
	case "length", "max_tokens":
		return StopMaxTokens
	case "content_filter":
		return StopContentFilter
	case "refusal":
		return StopRefusal
	case "stop", "end_turn", "eos", "stop_sequence", "":
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
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the completion: %w", err)
	}
	var v oaChunk
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("the completion is not JSON (%v): %.200s", err, body)
	}
	if err := c.chunkError(&v, body); err != nil {
		return nil, err
	}
	if len(v.Choices) == 0 || v.Choices[0].Message == nil {
		return nil, &Error{Provider: c.info.ID, Type: "incomplete", Message: fmt.Sprintf("the completion has no message: %.200s", body),
			Fix: "the server's answer is not a chat completion; check the base URL", Retryable: true}
	}
	var a oaAnswer
	if v.Usage != nil {
		a.usage = v.Usage.usage()
	}
	ch := v.Choices[0]
	a.add(*ch.Message, emit)
	if ch.FinishReason == nil || *ch.FinishReason == "" {
		return nil, &Error{Provider: c.info.ID, Type: "incomplete", Retryable: true,
			Message: "the completion does not say it is finished (no finish_reason)", Fix: "try again; the server's log says what failed"}
	}
	a.finish = *ch.FinishReason
	return a.response(), nil
}
