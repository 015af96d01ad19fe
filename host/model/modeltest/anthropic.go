package modeltest

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

type anBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
}

// anBlocks reads content: a string or a list of blocks.
func anBlocks(raw json.RawMessage) ([]anBlock, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anBlock{{Type: "text", Text: &s}}, nil
	}
	var bs []anBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, fmt.Errorf("content: Input should be a valid list")
	}
	return bs, nil
}

func imageOf(b anBlock) (string, error) {
	if b.Source == nil {
		return "", fmt.Errorf("source: Field required")
	}
	switch b.Source.Type {
	case "base64":
		if b.Source.MediaType == "" || b.Source.Data == "" {
			return "", fmt.Errorf("source.media_type and source.data: Field required")
		}
		return "data:" + b.Source.MediaType + ";base64," + b.Source.Data, nil
	case "url":
		return b.Source.URL, nil
	}
	return "", fmt.Errorf("source.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'base64', 'url'", b.Source.Type)
}

func decodeAnthropic(req *Request) *vendorErr {
	var v struct {
		Model     string          `json:"model"`
		MaxTokens *int            `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Stream    bool            `json:"stream"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	bad := func(format string, args ...any) *vendorErr {
		return &vendorErr{400, "invalid_request_error", fmt.Sprintf(format, args...), ""}
	}
	if err := json.Unmarshal(req.Body, &v); err != nil {
		return bad("There was an issue with your request body: %v", err)
	}
	req.Model, req.Stream = v.Model, v.Stream
	for i, t := range v.Tools {
		req.Tools = append(req.Tools, Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
		if len(t.InputSchema) == 0 {
			return bad("tools.%d.input_schema: Field required", i)
		}
	}
	if v.MaxTokens == nil {
		return bad("max_tokens: Field required")
	}
	req.MaxTokens = *v.MaxTokens
	if v.Model == "" {
		return bad("model: Field required")
	}
	if len(v.System) > 0 {
		if err := json.Unmarshal(v.System, &req.System); err != nil {
			bs, err := anBlocks(v.System)
			if err != nil {
				return bad("system: Input should be a valid string")
			}
			var texts []string
			for _, b := range bs {
				if b.Text != nil {
					texts = append(texts, *b.Text)
				}
			}
			req.System = strings.Join(texts, "\n")
		}
	}
	if len(v.Messages) == 0 {
		return bad("messages: at least one message is required")
	}
	var pendingUse []string // tool_use ids the next message must answer
	for i, m := range v.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return bad("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if i == 0 && m.Role != "user" {
			return bad("messages: first message must use the \"user\" role")
		}
		if i > 0 && v.Messages[i-1].Role == m.Role {
			return bad("messages: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row", m.Role)
		}
		bs, err := anBlocks(m.Content)
		if err != nil {
			return bad("messages.%d.%v", i, err)
		}
		if len(bs) == 0 {
			return bad("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		msg := Message{Role: m.Role}
		var texts []string
		answered := map[string]bool{}
		seenOther := false
		for j, b := range bs {
			msg.Blocks = append(msg.Blocks, b.Type)
			switch b.Type {
			case "text":
				if b.Text == nil || *b.Text == "" {
					return bad("messages.%d.content.%d.text: text content blocks must be non-empty", i, j)
				}
				texts = append(texts, *b.Text)
				seenOther = true
			case "image":
				img, err := imageOf(b)
				if err != nil {
					return bad("messages.%d.content.%d.%v", i, j, err)
				}
				msg.Images = append(msg.Images, img)
				seenOther = true
			case "tool_use":
				if m.Role != "assistant" {
					return bad("messages.%d.content.%d: tool_use blocks may only appear in assistant messages", i, j)
				}
				var obj map[string]any
				if json.Unmarshal(b.Input, &obj) != nil || obj == nil {
					return bad("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
				}
				if b.ID == "" || b.Name == "" {
					return bad("messages.%d.content.%d.tool_use: id and name are required", i, j)
				}
				msg.ToolCalls = append(msg.ToolCalls, Call{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
			case "tool_result":
				if m.Role != "user" {
					return bad("messages.%d.content.%d: tool_result blocks may only appear in user messages", i, j)
				}
				if seenOther {
					return bad("messages.%d: `tool_result` blocks must come first in the content of a user message, before any other content", i)
				}
				res := ToolResult{CallID: b.ToolUseID, IsError: b.IsError}
				if len(b.Content) > 0 {
					inner, err := anBlocks(b.Content)
					if err != nil {
						return bad("messages.%d.content.%d.tool_result.%v", i, j, err)
					}
					var rt []string
					for _, ib := range inner {
						switch ib.Type {
						case "text":
							if ib.Text == nil || *ib.Text == "" {
								return bad("messages.%d.content.%d.content: text content blocks must be non-empty", i, j)
							}
							rt = append(rt, *ib.Text)
						case "image":
							if _, err := imageOf(ib); err != nil {
								return bad("messages.%d.content.%d.content.%v", i, j, err)
							}
							res.Images++
						default:
							return bad("messages.%d.content.%d.content: unexpected block type %q", i, j, ib.Type)
						}
					}
					res.Content = strings.Join(rt, "\n")
				}
				answered[b.ToolUseID] = true
				msg.ToolResults = append(msg.ToolResults, res)
			case "thinking", "redacted_thinking":
			default:
				return bad("messages.%d.content.%d.type: Input tag '%s' found using 'type' does not match any of the expected tags", i, j, b.Type)
			}
		}
		msg.Text = strings.Join(texts, "\n")
		if len(pendingUse) > 0 || len(answered) > 0 {
			var missing []string
			for _, id := range pendingUse {
				if !answered[id] {
					missing = append(missing, id)
				}
				delete(answered, id)
			}
			if len(missing) > 0 {
				return bad("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
			}
			for id := range answered {
				return bad("messages.%d.content: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, id)
			}
		}
		pendingUse = nil
		for _, c := range msg.ToolCalls {
			pendingUse = append(pendingUse, c.ID)
		}
		req.Messages = append(req.Messages, msg)
	}
	if len(pendingUse) > 0 {
		return bad("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(v.Messages)-1, strings.Join(pendingUse, ", "))
	}
	return nil
}

func streamAnthropic(st *streamer, req Request, fallbackModel string, cache cacheSplit) {
	model := req.Model
	if model == "" {
		model = fallbackModel
	}
	t := st.turn
	in := t.InputTokens
	if in == 0 {
		in = estimateTokens(len(req.Body))
	}
	if t.CachedTokens > 0 {
		cache.read = t.CachedTokens
	}
	// As the API counts: input_tokens is only what was neither read from the
	// cache nor written to it.
	cache.read, cache.written = min(cache.read, in), min(cache.written, in-min(cache.read, in))
	in -= cache.read + cache.written
	if !st.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake%d", req.N), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "cache_creation_input_tokens": cache.written, "cache_read_input_tokens": cache.read, "output_tokens": 1}}}) {
		return
	}
	index := 0
	block := func(start map[string]any, deltas []map[string]any) bool {
		if !st.send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start}) {
			return false
		}
		for _, d := range deltas {
			if !st.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d}) {
				return false
			}
		}
		ok := st.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
		return ok
	}
	if t.Reasoning != "" {
		var ds []map[string]any
		for _, p := range st.pieces(t.Reasoning) {
			ds = append(ds, map[string]any{"type": "thinking_delta", "thinking": p})
		}
		ds = append(ds, map[string]any{"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"})
		if !block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, ds) {
			return
		}
	}
	if !st.send("ping", map[string]any{"type": "ping"}) {
		return
	}
	if t.Text != "" {
		var ds []map[string]any
		for _, p := range st.pieces(t.Text) {
			ds = append(ds, map[string]any{"type": "text_delta", "text": p})
		}
		if !block(map[string]any{"type": "text", "text": ""}, ds) {
			return
		}
	}
	if t.StreamError {
		st.send("error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
		return
	}
	out := len(t.Text) + len(t.Reasoning)
	for i, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_fake%d_%d", req.N, i)
		}
		// The real stream opens every tool_use with an empty partial_json.
		ds := []map[string]any{{"type": "input_json_delta", "partial_json": ""}}
		for _, p := range st.pieces(c.Arguments) {
			ds = append(ds, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		if !block(map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": map[string]any{}}, ds) {
			return
		}
		out += len(c.Name) + len(c.Arguments)
	}
	stop := t.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(t.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	outTok := t.OutputTokens
	if outTok == 0 {
		outTok = estimateTokens(out)
	}
	if !st.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outTok}}) {
		return
	}
	st.send("message_stop", map[string]any{"type": "message_stop"})
}

// promptCache is the Anthropic fake's prompt cache, which behaves as the API's: a
// request's prompt is cut into pieces (each tool, each system block, each message
// block) in the order the API caches them (tools, system, messages); a
// cache_control breakpoint writes the prefix up to it, for five minutes from its
// last use; a request reads the longest cached prefix that ends at one of its
// breakpoints or at any of the 20 pieces before one. Prefixes shorter than
// minCachedTokens are never cached, as the API's minimum.
type promptCache struct {
	entries map[[32]byte]time.Time // prefix hash → expiry
}

const (
	cacheTTL        = 5 * time.Minute
	cacheLookback   = 20
	minCachedTokens = 1024
)

// cacheSplit is how a prompt's input tokens divide.
type cacheSplit struct{ read, written int }

// pieces reads the prompt as the cache sees it: each piece's bytes without its
// cache_control marker, and whether it carries one.
func cachePieces(body []byte) (pieces [][]byte, marks []bool) {
	var v struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil, nil
	}
	add := func(prefix string, raw json.RawMessage) {
		var m map[string]json.RawMessage
		marked := false
		if json.Unmarshal(raw, &m) == nil {
			_, marked = m["cache_control"]
			delete(m, "cache_control")
			raw, _ = json.Marshal(m)
		}
		pieces = append(pieces, append([]byte(prefix), raw...))
		marks = append(marks, marked)
	}
	blocks := func(prefix string, raw json.RawMessage) {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil {
			for _, b := range list {
				add(prefix, b)
			}
			return
		}
		if len(raw) > 0 {
			add(prefix, raw)
		}
	}
	for _, t := range v.Tools {
		add("tool:", t)
	}
	blocks("system:", v.System)
	for _, m := range v.Messages {
		blocks(m.Role+":", m.Content)
	}
	return pieces, marks
}

// use looks the request up and writes its breakpoints, at time now.
func (c *promptCache) use(body []byte, now time.Time) cacheSplit {
	if c.entries == nil {
		c.entries = map[[32]byte]time.Time{}
	}
	pieces, marks := cachePieces(body)
	hashes := make([][32]byte, len(pieces))
	tokens := make([]int, len(pieces)) // cumulative, up to and including piece i
	h := sha256.New()
	total := 0
	for i, p := range pieces {
		h.Write(p)
		copy(hashes[i][:], h.Sum(nil))
		total += len(p)
		tokens[i] = estimateTokens(total)
	}
	var split cacheSplit
	for i := range pieces {
		if !marks[i] {
			continue
		}
		for j := i; j >= 0 && j >= i-cacheLookback; j-- {
			if exp, ok := c.entries[hashes[j]]; ok && now.Before(exp) && tokens[j] > split.read {
				split.read = tokens[j]
				c.entries[hashes[j]] = now.Add(cacheTTL)
			}
		}
	}
	last := -1
	for i := range pieces {
		if marks[i] && tokens[i] >= minCachedTokens {
			if _, ok := c.entries[hashes[i]]; !ok || now.After(c.entries[hashes[i]]) {
				last = i
			}
			c.entries[hashes[i]] = now.Add(cacheTTL)
		}
	}
	if last >= 0 && tokens[last] > split.read {
		split.written = tokens[last] - split.read
	}
	return split
}
