package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/host/flow"
	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/tasks"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

// Run is one pass of the loop over a conversation, or one sub-agent.
type Run struct {
	ID             string
	ConversationID string

	m      *Manager
	prov   model.Provider
	bus    *bus
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	out    Outcome
	onEnd  func()

	traceID string
	depth   int
	tabID   int
	// persist: messages go to the conversation (top-level runs); stored: the run
	// has a row in runs and its model calls are recorded.
	persist, stored bool

	// scope is what the run's calls may reach (who started it, an outside agent's
	// allowed tools, a sub-agent's type, the cap on calls, the data-flow gate): the
	// pipeline's permit and confirm steps read it on every call.
	scope *tools.Scope

	// Sub-agents: the parent run and the type.
	parent    *Run
	agentType string
	extra     string // added to the system prompt

	history  []model.Message
	ordinals []int64 // each history message's stored ordinal (persisted runs)

	mu sync.Mutex
	// children counts the sub-agents this run started; the run waits for them
	// before its end is recorded (the pipeline returns a cancelled call at once,
	// without waiting for its handler). Once ending, it starts no more.
	children  int
	ending    bool
	childGone *sync.Cond
	usage     model.Usage
	lastStop  string // the stop reason of the latest answer
}

// addChild counts a sub-agent in; false when the run is already ending.
func (r *Run) addChild() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ending {
		return false
	}
	r.children++
	return true
}

func (r *Run) childDone() {
	r.mu.Lock()
	r.children--
	r.childGone.Broadcast()
	r.mu.Unlock()
}

// Outcome is how a run ended.
type Outcome struct {
	Status string      `json:"status"` // storage.RunCompleted, RunFailed, RunCancelled, RunInterrupted
	Text   string      `json:"text"`
	Error  string      `json:"error,omitempty"`
	Usage  model.Usage `json:"usage"`
	// StopReason is why the model's last answer ended, when it answered.
	StopReason string `json:"stop_reason,omitempty"`
}

// stopped ends a run whose model ended its answer for a reason other than being
// done: it refused, the vendor's filter stopped it, or the length limit cut it.
type stopped struct {
	reason string // model.Stop*
	msg    string
}

func (s *stopped) Error() string { return s.msg }

// Subscribe adds a listener to the run's events from now on; the returned function
// removes it.
func (r *Run) Subscribe(fn func(Event)) (unsubscribe func()) { return r.bus.subscribe(fn) }

// Done is closed when the run has ended and its end is recorded.
func (r *Run) Done() <-chan struct{} { return r.done }

// Outcome is how the run ended; valid once Done is closed.
func (r *Run) Outcome() Outcome { <-r.done; return r.out }

// Wait waits for the run to end, or for ctx.
func (r *Run) Wait(ctx context.Context) (Outcome, error) {
	select {
	case <-r.done:
		return r.out, nil
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
}

// Cancel stops the run: the model call or the tool calls under way are cancelled,
// and the run ends as cancelled.
func (r *Run) Cancel() { r.cancel(errUserStop) }

// gate is the run's data-flow state, when the host keeps one.
func (r *Run) gate() *flow.Conv {
	g, _ := r.scope.Gate.(*flow.Conv)
	return g
}

type runKey struct{}

// runFromContext is the run whose tool call is being handled (the agent tool needs
// its parent).
func runFromContext(ctx context.Context) *Run {
	r, _ := ctx.Value(runKey{}).(*Run)
	return r
}

func (r *Run) publish(ev Event) {
	ev.RunID, ev.ConversationID = r.ID, r.ConversationID
	r.bus.publish(ev)
}

// execute runs the loop to its end, records the end and announces it.
func (r *Run) execute() {
	defer close(r.done)
	defer r.cancel(nil)
	r.publish(Event{Type: EventRunStarted, AgentType: r.agentType})
	text, err := r.loop(r.ctx)
	r.mu.Lock()
	r.ending = true
	for r.children > 0 {
		r.childGone.Wait()
	}
	r.mu.Unlock()
	out := Outcome{Status: storage.RunCompleted, Text: text}
	r.mu.Lock()
	out.Usage = r.usage
	calls := r.scope.Budget.Used()
	out.StopReason = r.lastStop
	r.mu.Unlock()
	if err != nil {
		out.Status, out.Error = storage.RunFailed, err.Error()
		var st *stopped
		if !errors.As(err, &st) {
			out.StopReason = ""
		}
		switch cause := context.Cause(r.ctx); {
		case r.ctx.Err() == nil:
		case errors.Is(cause, errShutdown):
			out.Status = storage.RunInterrupted
			out.Error = "the host process is exiting; resume the conversation to go on"
		case errors.Is(cause, errUserStop):
			out.Status, out.Error = storage.RunCancelled, "cancelled"
		case errors.Is(cause, errSubTimeout):
			out.Error = cause.Error()
		default:
			out.Status, out.Error = storage.RunCancelled, "cancelled: "+cause.Error()
		}
		var ce *cancelled
		if errors.As(err, &ce) {
			out.Status, out.Error = storage.RunCancelled, ce.reason
		}
	}
	var budget *Budget
	if be := (*budgetError)(nil); errors.As(err, &be) {
		budget = &be.Budget
	}
	r.out = out
	if r.stored {
		u := out.Usage
		if ferr := r.m.db.FinishRun(context.Background(), r.ID, out.Status, out.Error, storage.Tokens{Input: u.InputTokens, Output: u.OutputTokens,
			CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens, Reasoning: u.ReasoningTokens}, calls); ferr != nil {
			r.m.log.Error().Err(ferr).Str("run", r.ID).Msg("recording the end of a run")
		}
	}
	// Forgotten before the end is announced, so a listener that answers the end
	// with a new message finds the conversation free.
	if r.onEnd != nil {
		r.onEnd()
	}
	u := out.Usage
	if out.Status == storage.RunCompleted {
		r.publish(Event{Type: EventRunFinished, Text: text, Usage: &u, Status: out.Status, StopReason: out.StopReason})
	} else {
		// The usage of a failed run was billed all the same.
		r.publish(Event{Type: EventRunFailed, Text: text, Error: out.Error, Status: out.Status, Usage: &u, StopReason: out.StopReason, Budget: budget})
	}
}

// cancelled ends a run as cancelled with a reason of its own (the person said no to
// going on after the loop guard stopped it).
type cancelled struct{ reason string }

func (c *cancelled) Error() string { return c.reason }

// load reads the conversation's history as the model is to see it: from the newest
// summary on.
func (r *Run) load(ctx context.Context) error {
	msgs, err := r.m.db.Messages(ctx, r.ConversationID)
	if err != nil {
		return err
	}
	start, from := -1, int64(0)
	for i, m := range msgs {
		if m.Role == storage.RoleSummary {
			start, from = i, m.SummaryOf
		}
	}
	if start >= 0 {
		r.history = append(r.history, summaryMessage(msgs[start].Content))
		r.ordinals = append(r.ordinals, msgs[start].Ordinal)
	}
	for _, m := range msgs {
		if m.Role == storage.RoleSummary || m.Ordinal <= from {
			continue
		}
		msg := model.Message{Role: model.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Images: m.Images}
		if len(m.Reasoning) > 0 {
			if err := json.Unmarshal(m.Reasoning, &msg.Reasoning); err != nil {
				return fmt.Errorf("message %d of conversation %s: reasoning: %w", m.Ordinal, r.ConversationID, err)
			}
		}
		if len(m.ToolCalls) > 0 {
			if err := json.Unmarshal(m.ToolCalls, &msg.ToolCalls); err != nil {
				return fmt.Errorf("message %d of conversation %s: tool calls: %w", m.Ordinal, r.ConversationID, err)
			}
		}
		r.history = append(r.history, msg)
		r.ordinals = append(r.ordinals, m.Ordinal)
	}
	return nil
}

// append adds a message to the history, and to the conversation when the run
// persists.
func (r *Run) append(ctx context.Context, msg model.Message) error {
	var ord int64
	if r.persist {
		sm := storage.StoredMessage{Role: string(msg.Role), Content: msg.Content, ToolCallID: msg.ToolCallID, Images: msg.Images, RunID: r.ID}
		if len(msg.ToolCalls) > 0 {
			sm.ToolCalls, _ = json.Marshal(msg.ToolCalls)
		}
		if !msg.Reasoning.Empty() {
			sm.Reasoning, _ = json.Marshal(msg.Reasoning)
		}
		var err error
		// The record must survive a cancelled run: what the model said and what the
		// tools did has happened.
		if ord, err = r.m.db.AppendMessage(context.WithoutCancel(ctx), r.ConversationID, sm); err != nil {
			return err
		}
	}
	r.history = append(r.history, msg)
	r.ordinals = append(r.ordinals, ord)
	return nil
}

// answerDangling gives every tool call of the last assistant turn that has no result
// (the host exited while it ran) a result saying so, as the vendors require one per
// call and the model must know the call may have had effects.
func (r *Run) answerDangling(ctx context.Context) error {
	for i := len(r.history) - 1; i >= 0; i-- {
		msg := r.history[i]
		if msg.Role != model.RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, later := range r.history[i+1:] {
			if later.Role == model.RoleTool {
				answered[later.ToolCallID] = true
			}
		}
		for _, c := range msg.ToolCalls {
			if answered[c.ID] {
				continue
			}
			res := tools.Result{Code: tools.CodeHandlerError, Reason: "the host process exited before this call's result arrived; it may have had effects: check before repeating it"}
			if err := r.append(ctx, toolMessage(c.ID, res)); err != nil {
				return err
			}
		}
		return nil
	}
	return nil
}

// toolMessage is one tool's result as the model reads it: the result JSON, led by
// where its content came from and that it is untrusted when the run's data-flow
// gate labelled it so. Whatever the content holds stays inside JSON strings.
func toolMessage(id string, res tools.Result) model.Message {
	var v any = res
	if len(res.Sources) > 0 {
		v = struct {
			ContentFrom []string `json:"content_from"`
			Trust       string   `json:"trust"`
			tools.Result
		}{res.Sources, untrustedNote, res}
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(tools.Result{Code: tools.CodeHandlerError, Reason: "the result could not be encoded as JSON: " + err.Error()})
	}
	return model.Message{Role: model.RoleTool, ToolCallID: id, Content: string(b)}
}

// loop is the agent loop: ask the model, run the tools it asks for, give it the
// results, until it answers without calling a tool.
func (r *Run) loop(ctx context.Context) (string, error) {
	// carried is the answer so far: the text of this turn, with the parts of it
	// that came before a length-limit continuation.
	var carried strings.Builder
	continuations := 0
	for {
		if err := ctx.Err(); err != nil {
			return "", context.Cause(ctx)
		}
		if err := r.tokenBudget(ctx); err != nil {
			return carried.String(), err
		}
		offer := r.offer(ctx)
		req := model.Request{System: r.system(ctx), Messages: r.history, Tools: offer.specs}
		if err := r.maybeCompact(ctx, &req); err != nil {
			return "", err
		}
		if pm, ok := r.pageMessage(ctx); ok {
			req.Messages = append(req.Messages[:len(req.Messages):len(req.Messages)], pm)
		}
		resp, err := r.callModel(ctx, "turn", req, offer.unavailable, true)
		if err != nil {
			return carried.String(), err
		}
		calls, stop, err := r.answered(ctx, resp, &carried, &continuations)
		if err != nil || stop {
			return carried.String(), err
		}
		if len(calls) == 0 {
			continue // asked to go on after the length limit, or a paused turn
		}
		// The cap itself is the pipeline's (each call beyond it is RATE_LIMITED and
		// audited); a model that calls tools when none were offered is stopped here.
		capped := offer.capped
		results := r.runTools(ctx, calls, offer)
		if ctx.Err() != nil {
			// A call cut short by the run stopping failed for that reason, not its own:
			// the model (on resume) must know it may still have had effects.
			for i := range results {
				if !results[i].Success {
					results[i] = tools.Result{Code: tools.CodeHandlerError, Reason: fmt.Sprintf(
						"the run stopped (%v) while this call ran; it may have had effects: check before repeating it", context.Cause(ctx))}
				}
			}
		}
		for i, c := range calls {
			if err := r.append(ctx, r.toolResultMessage(c.ID, results[i])); err != nil {
				return "", err
			}
		}
		if err := ctx.Err(); err != nil {
			return "", context.Cause(ctx)
		}
		if capped {
			limit := r.scope.Budget.Limit()
			return "", &budgetError{Budget{Kind: "tool_calls", Setting: SettingMaxToolCalls, Used: r.scope.Budget.Used(), Limit: limit}, fmt.Sprintf(
				"the model kept calling tools after the run reached its cap of %d tool calls (setting %s); send a message to go on, or raise the cap with `ferry config set %s N` (0: no cap)", limit, SettingMaxToolCalls, SettingMaxToolCalls)}
		}
		if err := r.loopGuard(ctx, calls, results); err != nil {
			return "", err
		}
	}
}

// tokenBudget stops a run that has used its tokens (agent.max_tokens_per_run)
// before it asks the model again: every turn resends the whole context, so a run
// that goes on unseen is where money burns.
func (r *Run) tokenBudget(ctx context.Context) error {
	limit := r.m.opts.Settings.Snapshot(ctx).Int(SettingMaxTokensPerRun)
	if limit <= 0 {
		return nil
	}
	r.mu.Lock()
	used := r.usage.InputTokens + r.usage.OutputTokens
	r.mu.Unlock()
	if used < limit {
		return nil
	}
	return &budgetError{Budget{Kind: "tokens", Setting: SettingMaxTokensPerRun, Used: used, Limit: limit}, fmt.Sprintf(
		"the run used %d tokens, its budget of %d (setting %s), and stopped before asking the model again; "+
			"send a message to go on, or raise the budget with `ferry config set %s N` (0: no cap)", used, limit, SettingMaxTokensPerRun, SettingMaxTokensPerRun)}
}

// continuePrompt asks a model whose answer was cut at its length limit to go on.
const continuePrompt = "[Your previous answer was cut off at the length limit. Continue exactly where it stopped, without repeating anything.]"

// cutCallPrompt tells a model that a tool call it was writing was cut off.
const cutCallPrompt = "[Your previous answer was cut off at the length limit while you were writing a tool call; the call was not run. Make it again with shorter arguments, or split the work into smaller calls.]"

// answered takes a model's answer into the history and decides what follows from
// why it ended: the tool calls to run, or stop (the run's answer is in carried),
// or neither (the loop asks the model again).
func (r *Run) answered(ctx context.Context, resp *model.Response, carried *strings.Builder, continuations *int) (calls []model.ToolCall, stop bool, err error) {
	r.mu.Lock()
	r.lastStop = resp.StopReason
	r.mu.Unlock()
	calls = sanitize(resp.ToolCalls)
	cut := resp.StopReason == model.StopMaxTokens
	if cut {
		// Arguments cut off are not the call the model meant: never run them.
		calls = nil
	}
	content := resp.Text
	if resp.Refusal != "" {
		content = strings.TrimSpace(content + "\n" + resp.Refusal)
	}
	// A refusal Anthropic's classifier cut (no refusal text) leaves the history:
	// sent back, the partial turn would be refused again.
	if content != "" || len(calls) > 0 {
		if resp.StopReason != model.StopRefusal || resp.Refusal != "" {
			if err := r.append(ctx, model.Message{Role: model.RoleAssistant, Content: content, ToolCalls: calls, Reasoning: resp.Reasoning}); err != nil {
				return nil, true, err
			}
		}
	}
	carried.WriteString(resp.Text)
	switch resp.StopReason {
	case model.StopRefusal:
		why := "the model refused to answer"
		if resp.Refusal != "" {
			carried.Reset()
			carried.WriteString(resp.Refusal)
			why += ": " + resp.Refusal
		} else {
			why += " (the vendor's safety system stopped the answer): rephrase the request"
		}
		return nil, true, &stopped{reason: model.StopRefusal, msg: why}
	case model.StopContentFilter:
		return nil, true, &stopped{reason: model.StopContentFilter, msg: "the vendor's content filter withheld or cut the answer: rephrase the request, or use another provider"}
	case model.StopMaxTokens:
		limit := "the model's length limit"
		if n := r.prov.Info().MaxTokens; n > 0 {
			limit = fmt.Sprintf("the length limit of %d tokens", n)
		}
		what := "the answer was cut off at " + limit
		if len(resp.ToolCalls) > 0 {
			what += " while it was writing a tool call, which was not run"
		}
		r.publish(Event{Type: EventLengthLimited, Text: resp.Text, StopReason: model.StopMaxTokens, Error: what})
		if r.m.opts.Settings.Snapshot(ctx).String(SettingOnLengthLimit) != LengthContinue || *continuations >= maxContinuations {
			fix := fmt.Sprintf("raise it with `ferry provider add %s --max-tokens N`", r.prov.Info().ID)
			if *continuations >= maxContinuations {
				what += fmt.Sprintf(" %d times in a row", *continuations+1)
			} else {
				fix += fmt.Sprintf(", or set %s continue", SettingOnLengthLimit)
			}
			return nil, true, &stopped{reason: model.StopMaxTokens, msg: what + ": " + fix}
		}
		*continuations++
		prompt := continuePrompt
		if len(resp.ToolCalls) > 0 {
			prompt = cutCallPrompt
		}
		return nil, false, r.append(ctx, model.Message{Role: model.RoleUser, Content: prompt})
	case model.StopPauseTurn:
		return nil, false, nil // Anthropic goes on when sent the conversation as it is
	}
	if len(calls) == 0 {
		return nil, true, nil
	}
	carried.Reset()
	return calls, false, nil
}

// sanitize keeps every tool call's arguments valid JSON, so the history can always be
// stored and sent again: arguments that do not parse are kept as a JSON string of
// the text the model produced (the pipeline reports them as INVALID_PARAMS).
func sanitize(calls []model.ToolCall) []model.ToolCall {
	for i, c := range calls {
		if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
			b, _ := json.Marshal(string(c.Arguments))
			calls[i].Arguments = b
		}
		if calls[i].ID == "" {
			calls[i].ID = "call_" + strconv.Itoa(i) + "_" + newID()[:8]
		}
	}
	return calls
}

// offer is the tools of one turn.
type offer struct {
	specs       []model.ToolSpec
	unavailable []tools.Unavailable
	byModel     map[string]tools.Listing
	capped      bool // the run's cap on calls is reached: no tools offered
}

// offer is what the model is shown this turn: the tools the run's scope may call
// (the registry's rule, the one the pipeline enforces), none once the cap is reached.
func (r *Run) offer(ctx context.Context) offer {
	o := offer{byModel: map[string]tools.Listing{}}
	avail, unavail := r.m.reg.ModelList(ctx, r.tabID)
	o.unavailable = r.m.reg.OfferedUnavailable(ctx, r.scope, r.tabID, unavail)
	if r.scope.Budget.Left() == 0 {
		o.capped = true
		return o
	}
	for _, l := range r.m.reg.Offered(ctx, r.scope, avail) {
		o.specs = append(o.specs, model.ToolSpec{Name: l.ModelName, Description: l.Description, Parameters: l.Parameters})
		o.byModel[l.ModelName] = l
	}
	return o
}

// runTools runs one turn's calls: concurrently, except that calls that write to the
// same tab run one after another in the order the model gave them (two writes racing
// on one page would make both results meaningless).
func (r *Run) runTools(ctx context.Context, calls []model.ToolCall, o offer) []tools.Result {
	results := make([]tools.Result, len(calls))
	chains := map[string][]int{}
	var keys []string
	var wg sync.WaitGroup
	for i, c := range calls {
		l, ok := o.byModel[c.Name]
		if ok && l.Kind == tools.KindWrite {
			k := r.tabKey(c.Arguments)
			if _, seen := chains[k]; !seen {
				keys = append(keys, k)
			}
			chains[k] = append(chains[k], i)
			continue
		}
		wg.Go(func() { results[i] = r.callTool(ctx, c, o) })
	}
	for _, k := range keys {
		chain := chains[k]
		wg.Go(func() {
			for _, i := range chain {
				results[i] = r.callTool(ctx, calls[i], o)
			}
		})
	}
	wg.Wait()
	return results
}

// tabKey is the tab a write is aimed at: its tab_id argument, or the conversation's
// tab, which is where a tool without one acts.
func (r *Run) tabKey(args json.RawMessage) string {
	var p struct {
		TabID json.Number `json:"tab_id"`
	}
	if json.Unmarshal(args, &p) == nil && p.TabID != "" {
		return "tab:" + p.TabID.String()
	}
	return "tab:" + strconv.Itoa(r.tabID)
}

func (r *Run) callTool(ctx context.Context, c model.ToolCall, o offer) tools.Result {
	start := time.Now()
	r.publish(Event{Type: EventToolCallStarted, ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	name, _ := r.m.reg.Resolve(c.Name, r.tabID)
	res := r.m.reg.Call(context.WithValue(ctx, runKey{}, r), &tools.Call{
		ID: c.ID, Tool: c.Name, Arguments: c.Arguments, Caller: "model", TabID: r.tabID,
		TraceID: r.traceID, Depth: r.depth, ConversationID: r.ConversationID, RunID: r.ID,
		Scope: r.scope,
	})
	rc := res
	r.publish(Event{Type: EventToolCallFinished, ID: c.ID, Name: c.Name, Result: &rc, Code: res.Code, DurationMS: time.Since(start).Milliseconds()})
	if res.Success && (name == "create_task" || name == "update_task") {
		r.tasksChanged(ctx)
	}
	return res
}

// tasksChanged announces the conversation's task list after the model changed it.
func (r *Run) tasksChanged(ctx context.Context) {
	conv := r.ConversationID
	if conv == "" {
		conv = tasks.DefaultConversation
	}
	list, err := r.m.db.ListTasks(ctx, conv)
	if err != nil {
		return
	}
	out := make([]tasks.Task, len(list))
	for i, t := range list {
		out[i] = tasks.Task{ID: strconv.FormatInt(t.ID, 10), Subject: t.Subject, Description: t.Description,
			Status: t.Status, UpdatedAt: t.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z")}
	}
	r.publish(Event{Type: EventTasksChanged, Tasks: out})
}

// loopGuard pauses the run when the loop guard stopped a call, and asks the person
// whether to go on. Without anyone to ask, the run ends with the guard's reason.
func (r *Run) loopGuard(ctx context.Context, calls []model.ToolCall, results []tools.Result) error {
	for i, res := range results {
		if res.Code != tools.CodeLoopDetected {
			continue
		}
		r.publish(Event{Type: EventLoopPaused, ID: calls[i].ID, Name: calls[i].Name, Error: res.Reason})
		ui := r.m.reg.UI()
		if ui == nil || r.parent != nil {
			// A sub-agent does not stop its parent's person with its own loops: it
			// fails, and the parent model sees why.
			return fmt.Errorf("stopped by the loop guard: %s", res.Reason)
		}
		wait := r.m.opts.Settings.Snapshot(ctx).Seconds(tools.SettingAskTimeout)
		cctx, cancel := context.WithTimeout(context.WithValue(ctx, runKey{}, r), wait)
		ok, err := ui.Confirm(cctx, tools.ConfirmRequest{
			CallID: calls[i].ID, Tool: calls[i].Name, Arguments: calls[i].Arguments,
			Message:   "The agent seems to be repeating itself: " + res.Reason + " Continue the run?",
			TimeoutMS: wait.Milliseconds(),
		})
		cancel()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err != nil || !ok {
			return &cancelled{reason: "stopped by the loop guard, and the person chose not to continue: " + res.Reason}
		}
		r.m.reg.ForgetRepeats(r.ID)
		return nil
	}
	return nil
}

// summaryMessage is how a compaction summary is put before the kept messages.
func summaryMessage(summary string) model.Message {
	return model.Message{Role: model.RoleUser, Content: "[Summary of the earlier part of this conversation, compacted to fit the model's context window]\n\n" + strings.TrimSpace(summary)}
}
