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

func (anthropicWire) endpoint(base string) string {
	// People paste https://api.anthropic.com/v1 as often as the bare host.
	return strings.TrimSuffix(base, "/v1") + "/v1/messages"
}

func (anthropicWire) setHeaders(h http.Header, key string) {
	h.Set("anthropic-version", anthropicVersion)
	if key != "" {
		h.Set("x-api-key", key)
	}
}

func (anthropicWire) errorOf(body []byte) (string, string) { return vendorError(body) }

type anRequest struct {
	Model     string      `json:"model"`
	MaxTokens int         `json:"max_tokens"`
	System    string      `json:"system,omitempty"`
	Messages  []anMessage `json:"messages"`
	Tools     []anTool    `json:"tools,omitempty"`
	Stream    bool        `json:"stream"`
}

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
}

type anSource struct {
	Type      string `json:"type"` // base64 or url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
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

func (anthropicWire) encode(c *client, req Request) ([]byte, error) {
	r := anRequest{Model: c.info.Model, MaxTokens: c.maxTokens, System: req.System, Stream: true}
	if req.MaxTokens > 0 {
		r.MaxTokens = req.MaxTokens
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
			add("user", blocks...)
		case RoleAssistant:
			var blocks []anBlock
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
	return marshal(r)
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
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta struct {
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

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// input counts every token of the prompt, cached or not: what fills the context.
func (u anUsage) input() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

func (anthropicWire) decode(c *client, resp *http.Response, emit func(string)) (*Response, error) {
	var (
		out   Response
		text  strings.Builder
		calls = map[int]*ToolCall{} // by content block index
		args  = map[int]*strings.Builder{}
		order []int
		stop  string
	)
	sse := newSSEReader(resp.Body)
	for done := false; !done; {
		ev, err := sse.Next()
		if errors.Is(err, io.EOF) {
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
			out.Usage.InputTokens = e.Message.Usage.input()
			out.Usage.OutputTokens = e.Message.Usage.OutputTokens
		case "content_block_start":
			switch e.ContentBlock.Type {
			case "text":
				text.WriteString(e.ContentBlock.Text)
				emit(e.ContentBlock.Text)
			case "tool_use":
				calls[e.Index] = &ToolCall{ID: e.ContentBlock.ID, Name: e.ContentBlock.Name}
				args[e.Index] = &strings.Builder{}
				order = append(order, e.Index)
			}
			// thinking, redacted_thinking and server tools' blocks are not the answer.
		case "content_block_delta":
			switch e.Delta.Type {
			case "text_delta":
				text.WriteString(e.Delta.Text)
				emit(e.Delta.Text)
			case "input_json_delta":
				if b := args[e.Index]; b != nil {
					b.WriteString(e.Delta.PartialJSON)
				}
			}
		case "message_delta":
			if e.Delta.StopReason != "" {
				stop = e.Delta.StopReason
			}
			if e.Usage != nil {
				// output_tokens here is the running total; input_tokens appears only
				// in newer versions, and then is the final count.
				out.Usage.OutputTokens = e.Usage.OutputTokens
				if in := e.Usage.input(); in > 0 {
					out.Usage.InputTokens = in
				}
			}
		case "message_stop":
			done = true
		case "error":
			if e.Error == nil {
				return nil, c.streamError("", "")
			}
			return nil, c.streamError(e.Error.Type, e.Error.Message)
		}
		// ping, content_block_stop and event types added later need nothing.
	}
	out.Text = text.String()
	for _, i := range order {
		tc := calls[i]
		tc.Arguments = argsJSON(args[i].String())
		out.ToolCalls = append(out.ToolCalls, *tc)
	}
	switch stop {
	case "end_turn", "stop_sequence", "":
		out.StopReason = StopEndTurn
		if len(out.ToolCalls) > 0 {
			out.StopReason = StopToolUse
		}
	default:
		out.StopReason = stop // tool_use, max_tokens, pause_turn, refusal…
	}
	return &out, nil
}
