package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

// recordedRequest is the diagnostics record of what a model was given: the request
// as the provider received it, plus the tools that were held back and why, which the
// model never sees but a person debugging its choices needs.
type recordedRequest struct {
	System      string              `json:"system,omitempty"`
	Messages    []model.Message     `json:"messages"`
	Tools       []model.ToolSpec    `json:"tools"`
	Unavailable []tools.Unavailable `json:"unavailable"`
	MaxTokens   int                 `json:"max_tokens,omitempty"`
}

type recordedAttempt struct {
	Status     int    `json:"status"`
	Error      string `json:"error,omitempty"`
	WaitMS     int64  `json:"wait_ms,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// callModel makes one model call, streaming its text as text_delta events when asked,
// and records it for diagnostics.
func (r *Run) callModel(ctx context.Context, purpose string, req model.Request, unavailable []tools.Unavailable, stream bool) (*model.Response, error) {
	var amu sync.Mutex
	attempts := []recordedAttempt{}
	onDelta := func(d model.Delta) {
		if stream && d.Text != "" {
			r.publish(Event{Type: EventTextDelta, Text: d.Text})
		}
	}
	onAttempt := func(a model.Attempt) {
		amu.Lock()
		attempts = append(attempts, recordedAttempt{Status: a.Status, Error: a.Err, WaitMS: a.Wait.Milliseconds(), DurationMS: a.Duration.Milliseconds()})
		amu.Unlock()
	}
	started := time.Now()
	resp, err := r.prov.Stream(model.WithTraceID(ctx, r.traceID), req, onDelta, onAttempt)
	latency := time.Since(started)
	if resp != nil {
		r.mu.Lock()
		r.usage = r.usage.Add(resp.Usage)
		r.mu.Unlock()
	}
	if r.stored {
		amu.Lock()
		at, _ := json.Marshal(attempts)
		amu.Unlock()
		r.record(purpose, req, unavailable, resp, err, started, latency, at)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("the model call failed: %w", err)
	}
	if resp == nil {
		return nil, fmt.Errorf("the model call returned no response")
	}
	return resp, nil
}

func (r *Run) record(purpose string, req model.Request, unavailable []tools.Unavailable, resp *model.Response, callErr error, started time.Time, latency time.Duration, attempts []byte) {
	if unavailable == nil {
		unavailable = []tools.Unavailable{}
	}
	specs := req.Tools
	if specs == nil {
		specs = []model.ToolSpec{}
	}
	reqJSON, err := json.Marshal(recordedRequest{System: req.System, Messages: req.Messages, Tools: specs, Unavailable: unavailable, MaxTokens: req.MaxTokens})
	if err != nil {
		reqJSON, _ = json.Marshal(map[string]string{"error": "the request could not be encoded: " + err.Error()})
	}
	info := r.prov.Info()
	rec := storage.ModelCall{
		RunID: r.ID, Purpose: purpose, ProviderID: info.ID, Model: info.Model, Request: reqJSON,
		LatencyMS: latency.Milliseconds(), Attempts: attempts, StartedAt: started,
	}
	if resp != nil {
		rec.Response, _ = json.Marshal(resp)
		u := resp.Usage
		rec.InputTokens, rec.OutputTokens = u.InputTokens, u.OutputTokens
		rec.CacheReadTokens, rec.CacheWriteTokens, rec.ReasoningTokens = u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens
		rec.StopReason = resp.StopReason
	}
	if callErr != nil {
		rec.Error = callErr.Error()
	}
	// Recorded even when the run was cancelled: the call was made.
	if _, err := r.m.db.AddModelCall(context.Background(), rec); err != nil {
		r.m.log.Warn().Err(err).Str("run", r.ID).Msg("recording a model call")
	}
}

// estimateTokens is the request's JSON bytes divided by 4: tokenizers give 3 to 4.5
// bytes a token on English prose and JSON, and compaction needs only to know when the
// request nears the window, not the exact count. Attached images count by their
// pixels (imageTokens each), not by their base64 bytes.
func estimateTokens(v any) int {
	b, _ := json.Marshal(v)
	urlBytes, images := imageAdjustment(v)
	return (len(b)-urlBytes)/4 + images*imageTokens
}

// compactAt is the share of the context window at which the history is compacted.
const compactAt = 0.8

// maybeCompact summarises the older turns into one message when the request has
// reached 80% of the provider's context window. The most recent turns (with their
// tool results) are kept as they are, about a third of what room the system prompt
// and the tools leave.
func (r *Run) maybeCompact(ctx context.Context, req *model.Request) error {
	window := r.prov.Info().ContextWindow
	if window <= 0 || float64(estimateTokens(req)) < compactAt*float64(window) {
		return nil
	}
	fixed := estimateTokens(model.Request{System: req.System, Tools: req.Tools})
	keep := max((window-fixed)/3, 0)
	c := cutPoint(r.history, keep)
	first := 1
	if len(r.history) > 0 && strings.HasPrefix(r.history[0].Content, summaryMessage("").Content) && r.history[0].Role == model.RoleUser {
		first = 2 // a summary alone is nothing new to summarise
	}
	if c < first {
		r.m.log.Warn().Str("run", r.ID).Int("estimate", estimateTokens(req)).Int("window", window).
			Msg("the request nears the context window, but the recent turns alone fill it: nothing to compact")
		return nil
	}
	summary, err := r.summarise(ctx, r.history[:c], window)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		// The call goes on uncompacted: the provider says plainly if it is too long.
		r.m.log.Warn().Err(err).Str("run", r.ID).Msg("compaction failed")
		return nil
	}
	var ord int64
	if r.persist {
		ord, err = r.m.db.AppendMessage(context.WithoutCancel(ctx), r.ConversationID, storage.StoredMessage{
			Role: storage.RoleSummary, Content: summary, SummaryOf: r.ordinals[c-1], RunID: r.ID,
		})
		if err != nil {
			return err
		}
	}
	r.history = append([]model.Message{summaryMessage(summary)}, r.history[c:]...)
	r.ordinals = append([]int64{ord}, r.ordinals[c:]...)
	req.Messages = r.history
	r.publish(Event{Type: EventCompacted, Text: summary})
	return nil
}

// cutPoint is the index of the first message to keep: the newest messages that fit
// in keep tokens (at least the last one), never starting on a tool result, whose
// call must stay with it.
func cutPoint(history []model.Message, keep int) int {
	c, size := len(history), 0
	for i := len(history) - 1; i >= 0; i-- {
		size += estimateTokens(history[i])
		if size > keep && i < len(history)-1 {
			break
		}
		c = i
	}
	for c > 0 && c < len(history) && history[c].Role == model.RoleTool {
		c--
	}
	return c
}

const compactionPrompt = `You compact the earlier part of a conversation between a user and Ferry, an agent that works on the web and in the user's browser, so that the conversation can go on within the model's context window. Write a summary the agent can continue from: the user's goals and instructions (keep their exact wording where it matters), decisions made, facts found with their sources (URLs), what each tool call achieved or why it failed, the state of the task list, and what was about to happen next. Leave out pleasantries and anything superseded. Plain text, no preamble.`

// summarise asks the model for a summary of older messages, given as one transcript.
func (r *Run) summarise(ctx context.Context, older []model.Message, window int) (string, error) {
	var b strings.Builder
	for _, m := range older {
		switch m.Role {
		case model.RoleUser:
			fmt.Fprintf(&b, "USER: %s\n\n", m.Content)
		case model.RoleAssistant:
			if m.Content != "" {
				fmt.Fprintf(&b, "AGENT: %s\n\n", m.Content)
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "AGENT CALLED %s (call %s) with %s\n\n", c.Name, c.ID, cut(string(c.Arguments), 1000))
			}
		case model.RoleTool:
			fmt.Fprintf(&b, "RESULT of call %s: %s\n\n", m.ToolCallID, cut(m.Content, 2000))
		}
	}
	text := b.String()
	// The transcript itself must fit: keep its newest part.
	if limit := window * 3; len(text) > limit {
		text = "…" + text[len(text)-limit:]
	}
	resp, err := r.callModel(ctx, "compaction", model.Request{
		System:   compactionPrompt,
		Messages: []model.Message{{Role: model.RoleUser, Content: "Summarise this conversation so far:\n\n" + text}},
	}, nil, false)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(resp.Text) == "" {
		return "", fmt.Errorf("the model returned an empty summary")
	}
	return resp.Text, nil
}
