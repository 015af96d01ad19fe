// Package model talks to the language models: the OpenAI-compatible Chat Completions
// API (OpenAI, DeepSeek, Qwen, Ollama, vLLM, llama.cpp, LM Studio) and Anthropic
// Messages, both streaming. Keys are read in the host and never leave it.
package model

import (
	"context"
	"encoding/json"
	"time"
)

// Role of a message in a conversation.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // the result of one tool call
)

// Message is one turn, in a vendor-neutral form each provider translates.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant turn asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID ties a RoleTool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Images (data URLs) attached to a user or tool message, for tools such as a
	// screenshot that the model must see.
	Images []string `json:"images,omitempty"`
	// Reasoning is what the model thought before an assistant turn. It is never the
	// answer; it is kept with its turn because some vendors require it back
	// (DeepSeek's thinking mode refuses a history whose tool-calling turns lack it;
	// Anthropic checks the signature of thinking that preceded a tool call).
	Reasoning *Reasoning `json:"reasoning,omitempty"`
	// Ephemeral marks a message told for this request only (the agent's page
	// context, at the end): the next request will not repeat it, so no prompt-cache
	// breakpoint is set on it.
	Ephemeral bool `json:"ephemeral,omitempty"`
}

// Reasoning is a turn's thinking as its vendor gave it.
type Reasoning struct {
	Text string `json:"text,omitempty"`
	// Signature is Anthropic's proof that Text is the model's own thinking.
	Signature string `json:"signature,omitempty"`
	// Redacted holds Anthropic's encrypted redacted_thinking blocks, sent back as
	// they came.
	Redacted []string `json:"redacted,omitempty"`
}

// Empty reports whether there is nothing to keep.
func (r *Reasoning) Empty() bool {
	return r == nil || (r.Text == "" && r.Signature == "" && len(r.Redacted) == 0)
}

// ToolCall is one call the model asked for. Arguments is the JSON text as the model
// produced it (it may be invalid JSON: the pipeline reports that as INVALID_PARAMS).
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolSpec is a tool as offered to the model (its model-visible name).
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model call.
type Request struct {
	System    string     `json:"system,omitempty"`
	Messages  []Message  `json:"messages"`
	Tools     []ToolSpec `json:"tools,omitempty"`
	MaxTokens int        `json:"max_tokens,omitempty"`
}

// Usage is the token count a vendor reported, normalised so that every vendor's
// figures mean the same: InputTokens is the whole prompt, cached parts included
// (what filled the context); CacheReadTokens and CacheWriteTokens are the parts of
// it read from or written to the vendor's prompt cache, billed at other rates;
// OutputTokens is every generated token, ReasoningTokens (the thinking) included.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
}

// Add sums two counts.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
		ReasoningTokens: u.ReasoningTokens + o.ReasoningTokens}
}

// FullPriceInput is the prompt tokens billed at the full input price: neither read
// from the cache nor written to it.
func (u Usage) FullPriceInput() int { return u.InputTokens - u.CacheReadTokens - u.CacheWriteTokens }

// Response is the whole answer of one call once the vendor said it finished.
type Response struct {
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// StopReason is one of the Stop* constants: why the vendor ended the answer.
	StopReason string     `json:"stop_reason"`
	Reasoning  *Reasoning `json:"reasoning,omitempty"`
	// Refusal is the model's refusal text, when it refused (StopRefusal); OpenAI
	// sends it apart from the content, Anthropic as the content itself.
	Refusal string `json:"refusal,omitempty"`
	Usage   Usage  `json:"usage"`
}

// Delta is one piece of a streamed answer, delivered as it arrives.
type Delta struct {
	Text string // a text fragment
}

// Attempt describes one HTTP try of a call, for the diagnostics records.
type Attempt struct {
	Status   int           // HTTP status, 0 for a network error
	Err      string        // what went wrong, "" on success
	Wait     time.Duration // the backoff slept before the next try
	Duration time.Duration
}

// Provider is one configured model endpoint.
type Provider interface {
	// Stream makes one call, sending text deltas to onDelta as they arrive, and
	// returns the assembled response. Retries happen inside (429, 5xx, network);
	// onAttempt (may be nil) hears about each try. Cancelling ctx stops the HTTP
	// request at once.
	Stream(ctx context.Context, req Request, onDelta func(Delta), onAttempt func(Attempt)) (*Response, error)
	// Info names the provider and model, for records and the UI.
	Info() Info
}

// Info identifies a provider.
type Info struct {
	ID            string `json:"id"`
	Kind          string `json:"kind"` // "openai" or "anthropic"
	BaseURL       string `json:"base_url"`
	Model         string `json:"model"`
	ContextWindow int    `json:"context_window"`
	// TextOnly: the model takes no images. Images are left out of its requests,
	// and the agent loop tells it so in the tool result instead.
	TextOnly bool `json:"text_only,omitempty"`
	// MaxTokens is the answer length asked for when a request names none (0: the
	// server chooses).
	MaxTokens int `json:"max_tokens,omitempty"`
	// Options are the request options in force, detected or set.
	Options Options `json:"options"`
}
