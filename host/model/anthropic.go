package model

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// anthropicWire speaks the Anthropic Messages API.
type anthropicWire struct{}

// anthropicVersion pins the API version; the streaming events read below are those
// of this version.
const anthropicVersion = "2023-06-01"

func (anthropicWire) endpoint(base string, _ Options) string {
	// People paste https://api.anthropic.com/v1 (or …/v1/messages) as often as the
	// bare host.
	base = strings.TrimSuffix(base, "/messages")
	return strings.TrimSuffix(base, "/v1") + "/v1/messages"
}

func (anthropicWire) vendorHeaders(h http.Header, key string, _ Options) {
	h.Set("anthropic-version", anthropicVersion)
	if key != "" {
		h.Set("x-api-key", key)
	}
}

func (anthropicWire) adapt(o Options, s OptionSettings, e *Error) (Options, string, bool) {
	// An Anthropic-compatible server that does not know cache_control.
	if o.PromptCache && (s.PromptCache == "" || s.PromptCache == OptionAuto) && e.Status == http.StatusBadRequest &&
		strings.Contains(e.Message, "cache_control") {
		o.PromptCache = false
		return o, "prompt cache off: the server refused cache_control (--prompt-cache off keeps it so)", true
	}
	return o, "", false
}

type anRequest struct {
	Model     string      `json:"model"`
	MaxTokens int         `json:"max_tokens"`
	System    []anBlock   `json:"system,omitempty"`
	Messages  []anMessage `json:"messages"`
	Tools     []anTool    `json:"tools,omitempty"`
	Stream    bool        `json:"stream"`
}

// anCache marks a prompt-cache breakpoint: the prompt up to and including the block
// is cached for five minutes, each hit renewing it.
type anCache struct {
	Type string `json:"type"` // ephemeral
}

var ephemeral = &anCache{Type: "ephemeral"}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

// anBlock is any content block; only the fields of its type are set.
type anBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   []anBlock       `json:"content,omitempty"`
	Source    *anSource       `json:"source,omitempty"`
	// thinking and redacted_thinking blocks
	Thinking  *string `json:"thinking,omitempty"`
	Signature string  `json:"signature,omitempty"`
	Data      string  `json:"data,omitempty"`

	CacheControl *anCache `json:"cache_control,omitempty"`

	ephemeral bool // of an ephemeral message: never a breakpoint
}

type anSource struct {
	Type      string `json:"type"` // base64 or url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *anCache        `json:"cache_control,omitempty"`
}

func textBlock(s string) anBlock { return anBlock{Type: "text", Text: &s} }

// imageBlock turns a data: URL (or an http(s) URL) into an image block.
func imageBlock(img string) (anBlock, error) {
	if rest, ok := strings.CutPrefix(img, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mt, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || mt == "" {
			return anBlock{}, fmt.Errorf("image %.40q… is not a data URL with a media type", img)
		}
		if !isB64 {
			data = base64.StdEncoding.EncodeToString([]byte(data))
		}
		return anBlock{Type: "image", Source: &anSource{Type: "base64", MediaType: mt, Data: data}}, nil
	}
	if strings.HasPrefix(img, "https://") || strings.HasPrefix(img, "http://") {
		return anBlock{Type: "image", Source: &anSource{Type: "url", URL: img}}, nil
	}
	return anBlock{}, fmt.Errorf("image %.40q… is neither a data: URL nor an http(s) URL", img)
}

func (anthropicWire) encode(c *client, req Request, o Options) ([]byte, error) {
	r := anRequest{Model: c.info.Model, MaxTokens: c.maxTokens(req), Stream: true}
	if req.System != "" {
		r.System = []anBlock{textBlock(req.System)}
	}
	// Anthropic wants user and assistant turns to alternate, every tool_use answered
	// by a tool_result in the very next user message, and no empty content: so
	// consecutive turns of one role become one message, tool results join the user
	// turn, and empty text is left out.
	add := func(role string, blocks ...anBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role {
			r.Messages[n-1].Content = append(r.Messages[n-1].Content, blocks...)
			return
		}
		r.Messages = append(r.Messages, anMessage{Role: role, Content: blocks})
	}
	images := func(imgs []string) ([]anBlock, error) {
		var out []anBlock
		for _, img := range imgs {
			b, err := imageBlock(img)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		return out, nil
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			blocks, err := images(m.Images)
			if err != nil {
				return nil, err
			}
			if m.Content != "" {
				blocks = append(blocks, textBlock(m.Content))
			}
			for i := range blocks {
				blocks[i].ephemeral = m.Ephemeral
			}
			add("user", blocks...)
		case RoleAssistant:
			var blocks []anBlock
			// Thinking goes back first and unchanged, as the API requires of a
			// turn whose thinking led to a tool call; thinking without its
			// signature (another vendor's) cannot be sent.
			if rs := m.Reasoning; rs != nil && rs.Signature != "" {
				t := rs.Text
				blocks = append(blocks, anBlock{Type: "thinking", Thinking: &t, Signature: rs.Signature})
			}
			if rs := m.Reasoning; rs != nil {
				for _, d := range rs.Redacted {
					blocks = append(blocks, anBlock{Type: "redacted_thinking", Data: d})
				}
			}
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, textBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: toolInput(tc.Arguments)})
			}
			add("assistant", blocks...)
		case RoleTool:
			res := anBlock{Type: "tool_result", ToolUseID: m.ToolCallID}
			if m.Content != "" {
				res.Content = append(res.Content, textBlock(m.Content))
			}
			imgs, err := images(m.Images)
			if err != nil {
				return nil, err
			}
			res.Content = append(res.Content, imgs...)
			add("user", res)
		default:
			return nil, fmt.Errorf("message role %q is not one of user, assistant, tool", m.Role)
		}
	}
	for _, t := range req.Tools {
		r.Tools = append(r.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: schemaOrEmpty(t.Parameters)})
	}
	if o.PromptCache {
		markCache(&r)
	}
	return marshal(r)
}

// markCache sets the four breakpoints the API allows where the prompt of the next
// turn will repeat this one's: after the tools, after the system prompt, after the
// conversation as the previous request ended it, and after the whole conversation.
// The next request then reads from the cache everything up to its previous
// breakpoint, which this request wrote, however many blocks came between (the API
// looks back only 20 blocks from a breakpoint for an earlier hit).
func markCache(r *anRequest) {
	if n := len(r.Tools); n > 0 {
		r.Tools[n-1].CacheControl = ephemeral
	}
	if n := len(r.System); n > 0 {
		r.System[n-1].CacheControl = ephemeral
	}
	last := len(r.Messages) - 1
	mark := func(i int) {
		if i < 0 {
			return
		}
		blocks := r.Messages[i].Content
		for j := len(blocks) - 1; j >= 0; j-- {
			// Thinking blocks cannot carry a breakpoint; an ephemeral block would
			// cache a prefix the next request does not have.
			if t := blocks[j].Type; t != "thinking" && t != "redacted_thinking" && !blocks[j].ephemeral {
				blocks[j].CacheControl = ephemeral
				return
			}
		}
	}
	mark(last)
	// The previous request ended with the user message before the latest
	// assistant turn.
	for i := last - 1; i > 0; i-- {
		if r.Messages[i].Role == "assistant" {
			mark(i - 1)
			break
		}
	}
}

// toolInput is the call's arguments as the object Anthropic requires. Arguments the
// model produced that are not an object (the pipeline refused them already) are
// sent as {} rather than failing the whole conversation.
func toolInput(args json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return args
}

type anEvent struct {
	Type    string `json:"type"`
	Message struct {
		Usage anUsage `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Text      string `json:"text"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokensDetails      *struct {
		ThinkingTokens int `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// usage normalises Anthropic's counts: its input_tokens is only the uncached part
// of the prompt, so the whole prompt is the sum of the three.
func (u anUsage) usage() Usage {
	out := Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
	if d := u.OutputTokensDetails; d != nil {
		out.ReasoningTokens = d.ThinkingTokens
	}
	return out
}

// anMessageState is one message being assembled from its events.
type anMessageState struct {
	text      strings.Builder
	thinking  strings.Builder
	signature string
	redacted  []string
	calls     map[int]*ToolCall // by content block index
	args      map[int]*strings.Builder
	order     []int
	stop      string
	usage     Usage
}

func newAnMessage() *anMessageState {
	return &anMessageState{calls: map[int]*ToolCall{}, args: map[int]*strings.Builder{}}
}

func (anthropicWire) decode(c *client, resp *http.Response, emit func(string)) (*Response, error) {
	m := newAnMessage()
	sse := newSSEReader(resp.Body)
	for done := false; !done; {
		ev, err := sse.Next()
		if errors.Is(err, io.EOF) {
			// Only message_stop says the answer is finished.
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
		if len(ev.Data) == 0 {
			continue
		}
		var e anEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return nil, fmt.Errorf("an event is not JSON (%v): %.200s", err, ev.Data)
		}
		switch e.Type {
		case "message_start":
			// A second message_start is a proxy that retried upstream and spliced
			// the new answer onto the broken one: the answer is the last message
			// begun, and what came before it would repeat its tool calls.
			m = newAnMessage()
			m.usage = e.Message.Usage.usage()
		case "content_block_start":
			switch b := e.ContentBlock; b.Type {
			case "text":
				m.text.WriteString(b.Text)
				emit(b.Text)
			case "tool_use", "server_tool_use":
				if b.Type == "server_tool_use" {
					break // run by the vendor; its result is in the answer
				}
				if _, dup := m.calls[e.Index]; !dup {
					m.order = append(m.order, e.Index)
				}
				m.calls[e.Index] = &ToolCall{ID: b.ID, Name: b.Name}
				m.args[e.Index] = &strings.Builder{}
			case "thinking":
				m.thinking.WriteString(b.Thinking)
				if b.Signature != "" {
					m.signature = b.Signature
				}
			case "redacted_thinking":
				m.redacted = append(m.redacted, b.Data)
			}
		case "content_block_delta":
			switch e.Delta.Type {
			case "text_delta":
				m.text.WriteString(e.Delta.Text)
				emit(e.Delta.Text)
			case "input_json_delta":
				if b := m.args[e.Index]; b != nil {
					b.WriteString(e.Delta.PartialJSON)
				}
			case "thinking_delta":
				m.thinking.WriteString(e.Delta.Thinking)
			case "signature_delta":
				m.signature = e.Delta.Signature
			}
		case "message_delta":
			if e.Delta.StopReason != "" {
				m.stop = e.Delta.StopReason
			}
			if e.Usage != nil {
				// output_tokens here is the running total; the input counts appear
				// only in newer versions, and then are the final ones.
				u := e.Usage.usage()
				m.usage.OutputTokens = u.OutputTokens
				if u.ReasoningTokens > 0 {
					m.usage.ReasoningTokens = u.ReasoningTokens
				}
				if u.InputTokens > 0 {
					m.usage.InputTokens, m.usage.CacheReadTokens, m.usage.CacheWriteTokens = u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens
				}
			}
		case "message_stop":
			done = true
		case "error":
			if e.Error == nil {
				return nil, c.streamFailure(0, "", "")
			}
			return nil, c.streamFailure(0, e.Error.Type, e.Error.Message)
		}
		// ping, content_block_stop and event types added later need nothing.
	}
	out := &Response{Text: m.text.String(), Usage: m.usage}
	if t := m.thinking.String(); t != "" || m.signature != "" || len(m.redacted) > 0 {
		out.Reasoning = &Reasoning{Text: t, Signature: m.signature, Redacted: m.redacted}
	}
	seen := map[string]bool{}
	for _, i := range m.order {
		tc := m.calls[i]
		if seen[tc.ID] {
			continue // one call, one id: the API refuses a history that repeats one
		}
		seen[tc.ID] = true
		tc.Arguments = argsJSON(m.args[i].String())
		out.ToolCalls = append(out.ToolCalls, *tc)
	}
	switch m.stop {
	case "end_turn", "stop_sequence":
		out.StopReason = StopEndTurn
		if len(out.ToolCalls) > 0 {
			out.StopReason = StopToolUse
		}
	case "":
		return nil, &Error{Provider: c.info.ID, Type: "incomplete", Retryable: true,
			Message: "the stream ended (message_stop) without a stop_reason: the answer may be cut short",
			Fix:     "try again; a proxy between Ferry and the vendor may be rewriting the stream"}
	case "model_context_window_exceeded":
		out.StopReason = StopMaxTokens
	default:
		out.StopReason = m.stop // tool_use, max_tokens, pause_turn, refusal…
	}
	return out, nil
}
