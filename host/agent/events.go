package agent

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/tasks"
	"github.com/ferryhq/ferry/host/tools"
)

// Event types, as the side panel and `ferry run --json` see them.
const (
	EventRunStarted       = "run_started"
	EventTextDelta        = "text_delta"
	EventToolCallStarted  = "tool_call_started"
	EventToolCallFinished = "tool_call_finished"
	EventConfirm          = "confirm"
	EventAsk              = "ask"
	EventSubAgent         = "sub_agent_event"
	EventTasksChanged     = "tasks_changed"
	EventCompacted        = "compacted"
	EventLoopPaused       = "loop_paused"
	// EventLengthLimited: a model's answer was cut at its length limit; the run
	// goes on (agent.on_length_limit continue) or fails next.
	EventLengthLimited = "length_limited"
	EventRunFinished   = "run_finished"
	EventRunFailed     = "run_failed"
)

// Event is one thing that happened in a run. One flat shape for every type keeps the
// wire simple (chat.event notifications, JSON Lines): only the fields of the type are
// set.
type Event struct {
	Type           string `json:"type"`
	RunID          string `json:"run_id"`
	ConversationID string `json:"conversation_id"`
	// Seq numbers a run's events from 1, so a listener can tell it missed one.
	Seq int64 `json:"seq"`

	Text string `json:"text,omitempty"` // text_delta, run_finished

	// tool_call_started and tool_call_finished
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	Result     *tools.Result   `json:"result,omitempty"`
	Code       tools.Code      `json:"code,omitempty"`
	DurationMS int64           `json:"duration_ms,omitempty"`

	// sub_agent_event: the sub-agent's own event, and the parent's call that
	// started it. Description and AgentType label it for the UI.
	ParentCallID string `json:"parent_call_id,omitempty"`
	Event        *Event `json:"event,omitempty"`
	Description  string `json:"description,omitempty"`
	AgentType    string `json:"agent_type,omitempty"`

	Tasks []tasks.Task `json:"tasks,omitempty"` // tasks_changed

	// confirm / ask, forwarded from the UI surface (whatever the UI was asked).
	Request any `json:"request,omitempty"`

	Usage  *model.Usage `json:"usage,omitempty"`  // run_finished, run_failed: every model call's, summed
	Status string       `json:"status,omitempty"` // run_finished, run_failed: the run's final status
	// StopReason is why the model's last answer ended (model.Stop*): run_finished,
	// run_failed when the model stopped it (refusal, content_filter, max_tokens),
	// length_limited.
	StopReason string `json:"stop_reason,omitempty"`
	Error      string `json:"error,omitempty"` // run_failed, loop_paused, length_limited
	// Budget says which of the run's budgets ended it (run_failed), so that a UI
	// can say so in its own language.
	Budget *Budget `json:"budget,omitempty"`
}

// bus is a run's pub/sub. Listeners are called in publishing order under one lock, so
// every listener sees one total order even when sub-agents publish concurrently; they
// must not block for long (a notification write, a line to a terminal).
type bus struct {
	mu        sync.Mutex
	seq       int64
	listeners map[int]func(Event)
	next      int
}

func newBus() *bus { return &bus{listeners: map[int]func(Event){}} }

func (b *bus) publish(ev Event) Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	ev.Seq = b.seq
	for _, l := range b.listeners {
		l(ev)
	}
	return ev
}

func (b *bus) subscribe(fn func(Event)) (cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	b.listeners[id] = fn
	return func() {
		b.mu.Lock()
		delete(b.listeners, id)
		b.mu.Unlock()
	}
}

// WrapUI returns a UI that also tells the run a confirmation or a question belongs to
// (confirm and ask events) before asking through ui, so that whoever follows the run
// sees why it is waiting. The host wraps its connection's UI with it.
func (m *Manager) WrapUI(ui tools.UI) tools.UI {
	if ui == nil {
		return nil
	}
	return eventUI{ui}
}

type eventUI struct{ ui tools.UI }

// Unwrap is the UI asked through, so that what it tells beyond tools.UI (the open
// side panels) still reaches the registry.
func (u eventUI) Unwrap() tools.UI { return u.ui }

func (u eventUI) Confirm(ctx context.Context, req tools.ConfirmRequest) (bool, error) {
	a, err := u.ConfirmLasting(ctx, req)
	return a.Approved, err
}

// ConfirmLasting passes a lasting answer on (tools.LastingUI).
func (u eventUI) ConfirmLasting(ctx context.Context, req tools.ConfirmRequest) (tools.ConfirmAnswer, error) {
	if r := runFromContext(ctx); r != nil {
		r.publish(Event{Type: EventConfirm, ID: req.CallID, Name: req.Tool, Request: req})
	}
	return tools.ConfirmWhole(ctx, u.ui, req)
}

func (u eventUI) Ask(ctx context.Context, req tools.AskRequest) (tools.AskAnswer, error) {
	if r := runFromContext(ctx); r != nil {
		r.publish(Event{Type: EventAsk, ID: req.CallID, Request: req})
	}
	return u.ui.Ask(ctx, req)
}

// Budget is a run's budget that was used up: "tool_calls" (agent.max_tool_calls) or
// "tokens" (agent.max_tokens_per_run), what the run used and the limit.
type Budget struct {
	Kind    string `json:"kind"`
	Setting string `json:"setting"`
	Used    int    `json:"used"`
	Limit   int    `json:"limit"`
}

// budgetError ends a run whose budget is used up.
type budgetError struct {
	Budget
	msg string
}

func (e *budgetError) Error() string { return e.msg }
