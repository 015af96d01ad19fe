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

// Usage is the token count a vendor reported.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Response is the whole answer of one call once the stream has ended.
type Response struct {
	Text       string     `json:"text"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	StopReason string     `json:"stop_reason"` // "end_turn", "tool_use", "max_tokens", …
	Usage      Usage      `json:"usage"`
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
}
