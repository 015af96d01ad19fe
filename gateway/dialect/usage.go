package dialect

import (
	"bytes"
	"encoding/json"
	"time"
)

func jsonTime(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }

// Usage is what an answer cost. Input counts every prompt token, cached ones
// included; Cached is the part read from the vendor's prompt cache.
type Usage struct {
	Input  int64
	Output int64
	Cached int64
	// Reasoning is the part of Output spent thinking, when the vendor says.
	Reasoning int64
	// Final: the vendor's own figures for the whole answer arrived.
	Final bool
}

// Total is what counts against a token quota.
func (u Usage) Total() int64 { return u.Input + u.Output }

// EstimateBytes turns bytes of text into an estimate of its tokens, for the usage
// of a stream cut before the vendor's figures came (about four bytes a token).
func EstimateBytes(n int64) int64 { return (n + 3) / 4 }

type oaUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *oaUsage) usage() Usage {
	out := Usage{Input: u.PromptTokens, Output: u.CompletionTokens, Final: true}
	if u.PromptTokensDetails != nil {
		out.Cached = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		out.Reasoning = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

type anUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// merge takes the fields an event carries: message_start has them all, and
// message_delta the final output count (and, in newer versions, input counts).
func (u *Usage) merge(a *anUsage) {
	if a.InputTokens != nil || a.CacheCreationInputTokens != nil || a.CacheReadInputTokens != nil {
		in := val(a.InputTokens) + val(a.CacheCreationInputTokens) + val(a.CacheReadInputTokens)
		if in > 0 || a.InputTokens != nil {
			u.Input = in
		}
		if a.CacheReadInputTokens != nil {
			u.Cached = *a.CacheReadInputTokens
		}
	}
	if a.OutputTokens != nil {
		u.Output = *a.OutputTokens
	}
}

// WholeUsage reads the usage of a whole (not streamed) answer.
func WholeUsage(d Dialect, body []byte) (Usage, bool) {
	if d == Anthropic {
		var v struct {
			Usage *anUsage `json:"usage"`
		}
		if json.Unmarshal(body, &v) != nil || v.Usage == nil {
			return Usage{}, false
		}
		var u Usage
		u.merge(v.Usage)
		u.Final = true
		return u, true
	}
	var v struct {
		Usage *oaUsage `json:"usage"`
	}
	if json.Unmarshal(body, &v) != nil || v.Usage == nil {
		return Usage{}, false
	}
	return v.Usage.usage(), true
}

// Meter watches a stream's events as they pass: what the answer has produced so
// far, the vendor's figures when they come, and an error the vendor sent in the
// stream.
type Meter struct {
	D Dialect
	// HideUsage drops OpenAI's usage-only chunk, which the gateway asked for and
	// the client did not.
	HideUsage bool

	Usage    Usage
	OutBytes int64 // bytes of text, reasoning and tool arguments produced
	Done     bool  // the stream's end event came ([DONE], message_stop)
	// Err is the vendor's error event, when one came.
	Err *StreamError
}

// StreamError is an error the vendor sent inside a stream.
type StreamError struct {
	Type    string
	Message string
}

var doneData = []byte("[DONE]")

// Event reads one event (its name, "" when it had none, and its data) and tells
// whether it goes on to the client.
func (m *Meter) Event(name string, data []byte) bool {
	if m.D == Anthropic {
		m.anthropic(name, data)
		return true
	}
	return m.openai(data)
}

func (m *Meter) openai(data []byte) bool {
	if bytes.Equal(bytes.TrimSpace(data), doneData) {
		m.Done = true
		return true
	}
	var c struct {
		Choices []struct {
			Delta struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
				Reasoning        string `json:"reasoning"`
				Refusal          string `json:"refusal"`
				ToolCalls        []struct {
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
		Usage *oaUsage `json:"usage"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &c) != nil {
		return true
	}
	if c.Error != nil {
		m.Err = &StreamError{Type: c.Error.Type, Message: c.Error.Message}
		return true
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		m.OutBytes += int64(len(d.Content) + len(d.ReasoningContent) + len(d.Reasoning) + len(d.Refusal))
		for _, tc := range d.ToolCalls {
			m.OutBytes += int64(len(tc.Function.Name) + len(tc.Function.Arguments))
		}
	}
	if c.Usage != nil {
		m.Usage = c.Usage.usage()
		if len(c.Choices) == 0 && m.HideUsage {
			return false
		}
	}
	return true
}

func (m *Meter) anthropic(name string, data []byte) {
	var e struct {
		Type    string `json:"type"`
		Message *struct {
			Usage *anUsage `json:"usage"`
		} `json:"message"`
		Delta *struct {
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
			Thinking    string `json:"thinking"`
		} `json:"delta"`
		Usage *anUsage `json:"usage"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil {
		return
	}
	if e.Type == "" {
		e.Type = name
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil && e.Message.Usage != nil {
			m.Usage.merge(e.Message.Usage)
		}
	case "content_block_delta":
		if e.Delta != nil {
			m.OutBytes += int64(len(e.Delta.Text) + len(e.Delta.PartialJSON) + len(e.Delta.Thinking))
		}
	case "message_delta":
		if e.Usage != nil {
			m.Usage.merge(e.Usage)
		}
	case "message_stop":
		m.Done = true
		m.Usage.Final = true
	case "error":
		m.Err = &StreamError{}
		if e.Error != nil {
			m.Err.Type, m.Err.Message = e.Error.Type, e.Error.Message
		}
	}
}

// Final is the usage to charge once the stream has ended: the vendor's figures,
// or, for a stream cut before them, an estimate from what passed (marked so).
func (m *Meter) Final(inputEstimate int64) Usage {
	u := m.Usage
	if m.D == OpenAI && !u.Final {
		u = Usage{}
	}
	if !u.Final {
		if u.Input == 0 {
			u.Input = inputEstimate
		}
		if est := EstimateBytes(m.OutBytes); est > u.Output {
			u.Output = est
		}
	}
	return u
}
