package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

func TestSingleToolCall(t *testing.T) {
	p := &fakeProvider{steps: []step{call("echo", `{"text":"hi"}`), say("It said hi.")}}
	e := newEnv(t, p)
	r, out := e.send("say hi through echo", "")
	if out.Status != storage.RunCompleted || out.Text != "It said hi." || out.Usage.InputTokens != 20 {
		t.Fatalf("outcome %+v", out)
	}
	got := types(e.eventsOf(r.ID))
	want := "run_started tool_call_started tool_call_finished text_delta text_delta run_finished"
	if got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	for _, ev := range e.eventsOf(r.ID) {
		if ev.Type == EventToolCallFinished && (ev.Name != "echo" || ev.Result == nil || !ev.Result.Success || ev.ConversationID != r.ConversationID) {
			t.Fatalf("finished event %+v", ev)
		}
	}
	// The second request carries the result as a tool message, tied to its call.
	reqs := p.requests()
	last := reqs[1].Messages
	if len(last) != 3 || last[2].Role != model.RoleTool || last[2].ToolCallID != last[1].ToolCalls[0].ID ||
		last[2].Content != `{"success":true,"result":{"echo":"hi"}}` {
		t.Fatalf("second request messages %+v", last)
	}
	if !strings.Contains(reqs[0].System, "No browser is connected") {
		t.Errorf("system prompt does not say no browser is connected")
	}
	var names []string
	for _, s := range reqs[0].Tools {
		names = append(names, s.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "echo") || !strings.Contains(strings.Join(names, ","), "agent") {
		t.Errorf("tools offered: %v", names)
	}

	// Stored: the conversation, its four messages, the run and its two model calls.
	ctx := context.Background()
	msgs, _ := e.db.Messages(ctx, r.ConversationID)
	if len(msgs) != 4 || msgs[0].Role != "user" || msgs[1].Role != "assistant" || len(msgs[1].ToolCalls) == 0 || msgs[2].Role != "tool" || msgs[3].Content != "It said hi." {
		t.Fatalf("stored messages %+v", msgs)
	}
	run, err := e.db.GetRun(ctx, r.ID)
	if err != nil || run.Status != storage.RunCompleted || run.ToolCalls != 1 || run.InputTokens != 20 || run.Model != "fake-1" || run.FinishedAt.IsZero() {
		t.Fatalf("run %+v %v", run, err)
	}
	conv, _ := e.db.GetConversation(ctx, r.ConversationID)
	if conv.Status != storage.ConversationIdle || conv.Title != "say hi through echo" {
		t.Fatalf("conversation %+v", conv)
	}
}

func TestDiagnosticsRecords(t *testing.T) {
	p := &fakeProvider{steps: []step{call("echo", `{"text":"hi"}`), say("done")}}
	e := newEnv(t, p)
	e.reg.Register(tools.Tool{Name: "closed_door", Description: "never available", Parameters: json.RawMessage(`{"type":"object"}`),
		Available: func(context.Context, *tools.Call) (bool, string) { return false, "the door is locked" },
		Run:       func(context.Context, *tools.Call) (any, error) { return nil, nil }})
	r, _ := e.send("go", "")
	var got struct {
		Run        storage.Run         `json:"run"`
		ModelCalls []storage.ModelCall `json:"model_calls"`
	}
	res, err := e.m.runsGet(context.Background(), runParams{RunID: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	json.Unmarshal(b, &got)
	if len(got.ModelCalls) != 2 {
		t.Fatalf("%d model calls recorded", len(got.ModelCalls))
	}
	c := got.ModelCalls[0]
	var req recordedRequest
	if err := json.Unmarshal(c.Request, &req); err != nil {
		t.Fatal(err)
	}
	var echo *model.ToolSpec
	for i := range req.Tools {
		if req.Tools[i].Name == "echo" {
			echo = &req.Tools[i]
		}
	}
	if echo == nil || !strings.Contains(string(echo.Parameters), `"sleep_ms"`) {
		t.Fatalf("recorded tools lack echo's schema: %s", c.Request)
	}
	if len(req.Unavailable) != 1 || req.Unavailable[0].Reason != "the door is locked" {
		t.Fatalf("recorded unavailable %+v", req.Unavailable)
	}
	if c.ProviderID+"/"+c.Model != "fake/fake-1" || c.Ordinal != 1 || c.Purpose != "turn" || !strings.Contains(string(c.Response), `"tool_calls"`) ||
		!strings.Contains(string(c.Attempts), `"status":200`) || c.InputTokens != 10 {
		t.Fatalf("record %+v", c)
	}
	if !strings.Contains(string(got.ModelCalls[1].Response), `"text":"done"`) {
		t.Fatalf("second response %s", got.ModelCalls[1].Response)
	}
	// Retention: a record older than diagnostics.retention_days goes at the next start.
	e.set(SettingDiagnosticsDays, "1")
	e.db.Now = func() time.Time { return time.Now().Add(48 * time.Hour) }
	e.m.prune(context.Background())
	if calls, _ := e.db.ModelCalls(context.Background(), r.ID); len(calls) != 0 {
		t.Fatalf("%d records survived retention", len(calls))
	}
}

func TestParallelToolCalls(t *testing.T) {
	p := &fakeProvider{steps: []step{
		call("echo", `{"sleep_ms":150}`, "echo", `{"sleep_ms":150,"text":"b"}`, "echo", `{"sleep_ms":150,"text":"c"}`,
			"poke", `{"tab_id":7,"text":"7a","sleep_ms":60}`, "poke", `{"tab_id":7,"text":"7b","sleep_ms":60}`, "poke", `{"tab_id":7,"text":"7c"}`,
			"poke", `{"tab_id":8,"text":"8a","sleep_ms":60}`),
		say("ok"),
	}}
	e := newEnv(t, p)
	readPeak, writePeak = concurrency{}, concurrency{}
	writeOrder.seq = nil
	start := time.Now()
	_, out := e.send("many", "")
	took := time.Since(start)
	if out.Status != storage.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	if readPeak.peak() != 3 {
		t.Errorf("read calls at once: %d, want 3", readPeak.peak())
	}
	// Writes to tab 7 one at a time, in the model's order; tab 8's beside them.
	if writePeak.peak() != 2 {
		t.Errorf("write calls at once: %d, want 2 (tab 7's chain beside tab 8's)", writePeak.peak())
	}
	var seven []string
	for _, s := range writeOrder.seq {
		if strings.HasPrefix(s, "7") {
			seven = append(seven, s)
		}
	}
	if strings.Join(seven, ",") != "7a,7b,7c" {
		t.Errorf("tab 7 writes ran in order %v", seven)
	}
	// One after another would take 630 ms; a loaded machine gets some slack.
	if took > 600*time.Millisecond {
		t.Logf("took %v: slow machine?", took)
	}
	// Results come back in the order of the calls, whatever order they finished in.
	msgs := p.requests()[1].Messages
	for i, m := range msgs[2:] {
		if m.ToolCallID != msgs[1].ToolCalls[i].ID {
			t.Fatalf("result %d answers %s, want %s", i, m.ToolCallID, msgs[1].ToolCalls[i].ID)
		}
	}
}

func TestErrorsAreResults(t *testing.T) {
	p := &fakeProvider{steps: []step{
		call("no_such_tool", `{}`, "echo", `{"bogus":1}`, "broken", `{}`, "echo", `{not json`),
		say("I could not."),
	}}
	e := newEnv(t, p)
	_, out := e.send("try", "")
	if out.Status != storage.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	msgs := p.requests()[1].Messages
	want := []tools.Code{tools.CodeNotFound, tools.CodeInvalidParams, tools.CodeHandlerError, tools.CodeInvalidParams}
	for i, code := range want {
		var res tools.Result
		if err := json.Unmarshal([]byte(msgs[2+i].Content), &res); err != nil {
			t.Fatal(err)
		}
		if res.Success || res.Code != code || res.Reason == "" {
			t.Errorf("result %d: %s, want code %s", i, msgs[2+i].Content, code)
		}
	}
	// The invalid JSON the model produced is kept, as text, so the history stays valid.
	if got := string(msgs[1].ToolCalls[3].Arguments); got != `"{not json"` {
		t.Errorf("invalid arguments kept as %s", got)
	}
}

func TestCancelMidStream(t *testing.T) {
	streaming := make(chan struct{})
	var sawCancel bool
	p := &fakeProvider{steps: []step{func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		onDelta(model.Delta{Text: "Let me th"})
		close(streaming)
		<-ctx.Done()
		sawCancel = true
		return nil, ctx.Err()
	}}}
	e := newEnv(t, p)
	r, err := e.m.Send(context.Background(), SendRequest{Text: "think"})
	if err != nil {
		t.Fatal(err)
	}
	<-streaming
	if !e.m.Cancel(r.ID) {
		t.Fatal("Cancel found no run")
	}
	out := r.Outcome()
	if out.Status != storage.RunCancelled || !sawCancel {
		t.Fatalf("outcome %+v, provider saw cancel: %v", out, sawCancel)
	}
	evs := e.eventsOf(r.ID)
	if last := evs[len(evs)-1]; last.Type != EventRunFailed || last.Status != storage.RunCancelled {
		t.Fatalf("last event %+v", last)
	}
	run, _ := e.db.GetRun(context.Background(), r.ID)
	calls, _ := e.db.ModelCalls(context.Background(), r.ID)
	if run.Status != storage.RunCancelled || len(calls) != 1 || calls[0].Error == "" {
		t.Fatalf("run %+v, calls %+v", run, calls)
	}
	// A cancelled conversation takes a new message.
	p.steps = []step{say("hello again")}
	if _, out := e.send("again", r.ConversationID); out.Status != storage.RunCompleted {
		t.Fatalf("next run %+v", out)
	}
}

func TestCompaction(t *testing.T) {
	// A tiny window: the system prompt and tools take most of it, and each echo
	// result adds 1,200 bytes.
	p := &fakeProvider{info: model.Info{ID: "tiny", Model: "tiny-1", ContextWindow: 0}}
	e := newEnv(t, p)
	var compactions, turns int
	p.route = func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		if req.System == compactionPrompt {
			compactions++
			if !strings.Contains(req.Messages[0].Content, "first question") {
				t.Errorf("the compaction transcript lacks the oldest turn")
			}
			return &model.Response{Text: "SUMMARY: the user asked a first question; echo ran several times."}, nil
		}
		turns++
		if turns <= 6 {
			return call("echo", `{"size":1200,"text":"`+strconv.Itoa(turns)+`"}`)(ctx, req, onDelta)
		}
		return say("done")(ctx, req, onDelta)
	}
	// Size the window from the fixed part so the test holds whatever the prompt's length.
	e2 := estimateTokens(model.Request{System: e.m.newRun("", p).system(context.Background()), Tools: offerSpecs(e)})
	p.info.ContextWindow = e2 + 1600
	r, out := e.send("first question", "")
	if out.Status != storage.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	if compactions == 0 {
		t.Fatal("no compaction happened")
	}
	reqs := p.requests()
	var after *model.Request
	for i := range reqs {
		if reqs[i].System != compactionPrompt && strings.HasPrefix(reqs[i].Messages[0].Content, "[Summary") {
			after = &reqs[i]
			break
		}
	}
	if after == nil {
		t.Fatal("no request started with the summary")
	}
	if !strings.Contains(after.Messages[0].Content, "SUMMARY: the user asked") {
		t.Fatalf("summary message %q", after.Messages[0].Content)
	}
	// The most recent tool result is kept as it was.
	lastMsg := after.Messages[len(after.Messages)-1]
	if lastMsg.Role != model.RoleTool || !strings.Contains(lastMsg.Content, "xxxx") {
		t.Fatalf("the newest tool result was not kept: %+v", lastMsg)
	}
	if after.Messages[1].Role == model.RoleTool {
		t.Fatal("the kept part starts with a tool result cut from its call")
	}
	for _, rq := range reqs {
		if rq.System != compactionPrompt && estimateTokens(rq) > p.info.ContextWindow {
			t.Errorf("a request of %d tokens went past the window of %d", estimateTokens(rq), p.info.ContextWindow)
		}
	}
	// Stored: a summary row; the whole history is still there for the person.
	msgs, _ := e.db.Messages(context.Background(), r.ConversationID)
	var summaries int
	for _, m := range msgs {
		if m.Role == storage.RoleSummary {
			summaries++
			if m.SummaryOf <= 0 {
				t.Errorf("summary row without summary_of")
			}
		}
	}
	if summaries != compactions || msgs[0].Content != "first question" {
		t.Fatalf("%d summary rows for %d compactions; first message %q", summaries, compactions, msgs[0].Content)
	}
	// A later run over the conversation starts from the summary too.
	loaded := e.m.newRun(r.ConversationID, p)
	if err := loaded.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(loaded.history[0].Content, "[Summary") || loaded.history[len(loaded.history)-1].Content != "done" {
		t.Fatalf("reloaded history starts %q, ends %q", loaded.history[0].Content, loaded.history[len(loaded.history)-1].Content)
	}
	for _, m := range loaded.history[1:] {
		if strings.Contains(m.Content, "first question") {
			t.Fatal("a summarised message came back in the reloaded history")
		}
	}
}

func offerSpecs(e *env) []model.ToolSpec {
	r := e.m.newRun("", e.prov)
	return r.offer(context.Background()).specs
}

func TestLoopDetectedPauses(t *testing.T) {
	again := call("echo", `{"text":"same"}`)
	for _, tc := range []struct {
		name   string
		ui     *fakeUI
		status string
		text   string
	}{
		{"no UI", nil, storage.RunFailed, "loop guard"},
		{"person says no", &fakeUI{answer: false}, storage.RunCancelled, "chose not to continue"},
		{"person says yes", &fakeUI{answer: true}, storage.RunCompleted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakeProvider{steps: []step{again, again, again, say("changed approach")}}
			e := newEnv(t, p)
			e.set(tools.SettingRepeatLimit, "2")
			if tc.ui != nil {
				e.reg.SetUI(tc.ui)
			}
			r, out := e.send("loop", "")
			if out.Status != tc.status || !strings.Contains(out.Error, tc.text) {
				t.Fatalf("outcome %+v", out)
			}
			if !strings.Contains(types(e.eventsOf(r.ID)), EventLoopPaused) {
				t.Errorf("no loop_paused event")
			}
			if tc.ui != nil && (len(tc.ui.confirms) != 1 || !strings.Contains(tc.ui.confirms[0].Message, "Continue the run?")) {
				t.Errorf("confirmations %+v", tc.ui.confirms)
			}
		})
	}
}

func TestMaxToolCalls(t *testing.T) {
	p := &fakeProvider{steps: []step{call("echo", `{"text":"1"}`, "echo", `{"text":"2"}`, "echo", `{"text":"3"}`), say("stopping")}}
	e := newEnv(t, p)
	e.set(SettingMaxToolCalls, "2")
	r, out := e.send("lots", "")
	if out.Status != storage.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	reqs := p.requests()
	if len(reqs[1].Tools) != 0 {
		t.Errorf("tools still offered after the cap: %d", len(reqs[1].Tools))
	}
	// The three calls run at once: the pipeline lets exactly two through, whichever
	// come first, and refuses the third with the reason.
	limited := 0
	for _, m := range reqs[1].Messages[2:5] {
		if strings.Contains(m.Content, "RATE_LIMITED") && strings.Contains(m.Content, SettingMaxToolCalls) {
			limited++
		}
	}
	if limited != 1 {
		t.Errorf("%d of the three calls were refused by the cap, want 1: %+v", limited, reqs[1].Messages[2:5])
	}
	run, _ := e.db.GetRun(context.Background(), r.ID)
	if run.ToolCalls != 2 {
		t.Errorf("run made %d calls", run.ToolCalls)
	}
	// The refusal is in the audit log like every other.
	if n := e.auditCount(t, tools.CodeRateLimited); n != 1 {
		t.Errorf("%d RATE_LIMITED audit rows, want 1", n)
	}
}

func TestTasksChangedEvent(t *testing.T) {
	p := &fakeProvider{steps: []step{call("create_task", `{"subject":"read"}`), say("ok")}}
	e := newEnv(t, p)
	r, _ := e.send("plan", "")
	var found bool
	for _, ev := range e.eventsOf(r.ID) {
		if ev.Type == EventTasksChanged && len(ev.Tasks) == 1 && ev.Tasks[0].Subject == "read" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no tasks_changed event: %s", types(e.eventsOf(r.ID)))
	}
	if list, _ := e.db.ListTasks(context.Background(), r.ConversationID); len(list) != 1 {
		t.Fatalf("the task went to another conversation's list")
	}
}

func TestProviderErrorFailsTheRun(t *testing.T) {
	p := &fakeProvider{steps: []step{func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		return nil, &model.Error{Status: 401, Message: "the API key was refused"}
	}}}
	e := newEnv(t, p)
	r, out := e.send("hi", "")
	if out.Status != storage.RunFailed || !strings.Contains(out.Error, "the API key was refused") {
		t.Fatalf("outcome %+v", out)
	}
	evs := e.eventsOf(r.ID)
	if evs[len(evs)-1].Type != EventRunFailed {
		t.Fatal("no run_failed event")
	}
	if _, err := e.m.Send(context.Background(), SendRequest{Text: "x", ProviderID: "missing"}); err == nil || !strings.Contains(err.Error(), "no provider named missing") {
		t.Fatalf("unknown provider: %v", err)
	}
}

// The runaway: a model asking again and again for a page action the page
// reports unavailable. The refusals count toward the loop guard like results, so
// the run stops (no one to ask here) after repeat_limit of them, not never.
func TestUnavailableActionRepeatedStops(t *testing.T) {
	again := call("add_task", `{"text":"agenda"}`)
	steps := make([]step, 20)
	for i := range steps {
		steps[i] = again
	}
	p := &fakeProvider{steps: steps}
	e := newEnv(t, p)
	if err := e.reg.Register(tools.Tool{
		Name: "add_task", Description: "add a todo", Kind: tools.KindWrite,
		Parameters: json.RawMessage(`{"text": {"type": "string", "required": true}}`),
		Available: func(ctx context.Context, c *tools.Call) (bool, string) {
			return false, "the page reports add_task unavailable"
		},
		Run: func(ctx context.Context, c *tools.Call) (any, error) {
			t.Error("an unavailable action ran")
			return nil, nil
		},
	}); err != nil {
		t.Fatal(err)
	}
	_, out := e.send("add agenda", "")
	if out.Status != storage.RunFailed || !strings.Contains(out.Error, "loop guard") || !strings.Contains(out.Error, "ACTION_UNAVAILABLE") {
		t.Fatalf("outcome %+v, want a run stopped by the loop guard naming the refusal", out)
	}
	// Five refusals (tools.loop.repeat_limit), then the sixth ask is the loop.
	if n := e.auditCount(t, tools.CodeActionUnavailable); n != 5 {
		t.Errorf("%d ACTION_UNAVAILABLE rows, want 5", n)
	}
	if n := len(p.requests()); n != 6 {
		t.Errorf("the model was asked %d times, want 6", n)
	}
}

// A run has a cap on tool calls by default: a model that never stops calling
// tools with new arguments (no loop the guard could see) ends at 200 calls.
func TestDefaultToolCallCap(t *testing.T) {
	var n atomic.Int32
	p := &fakeProvider{route: func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		i := n.Add(1)
		return &model.Response{StopReason: "tool_use", Usage: model.Usage{InputTokens: 1, OutputTokens: 1},
			ToolCalls: []model.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: "echo", Arguments: json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i))}}}, nil
	}}
	e := newEnv(t, p)
	r, out := e.send("never stop", "")
	if out.Status != storage.RunFailed || !strings.Contains(out.Error, "cap of 200 tool calls") || !strings.Contains(out.Error, SettingMaxToolCalls) {
		t.Fatalf("outcome %+v, want the run stopped at its default cap of 200 calls", out)
	}
	run, _ := e.db.GetRun(context.Background(), r.ID)
	if run.ToolCalls != 200 {
		t.Errorf("run made %d calls, want 200", run.ToolCalls)
	}
	if b := failedBudget(e, r.ID); b == nil || *b != (Budget{Kind: "tool_calls", Setting: SettingMaxToolCalls, Used: 200, Limit: 200}) {
		t.Errorf("run_failed budget %+v", b)
	}
}

// A run stops once its tokens reach agent.max_tokens_per_run, before it asks the
// model again, saying which setting and how much; the default is a cap, not none.
func TestTokenBudget(t *testing.T) {
	p := &fakeProvider{route: func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		return &model.Response{StopReason: "tool_use", Usage: model.Usage{InputTokens: 10, OutputTokens: 5},
			ToolCalls: []model.ToolCall{{ID: fmt.Sprintf("c%d", len(req.Messages)), Name: "echo", Arguments: json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, len(req.Messages)))}}}, nil
	}}
	e := newEnv(t, p)
	if got := e.m.opts.Settings.Snapshot(context.Background()).Int(SettingMaxTokensPerRun); got <= 0 {
		t.Errorf("default %s = %d, want a cap", SettingMaxTokensPerRun, got)
	}
	e.set(SettingMaxTokensPerRun, "40")
	r, out := e.send("spend", "")
	if out.Status != storage.RunFailed || !strings.Contains(out.Error, "used 45 tokens, its budget of 40") || !strings.Contains(out.Error, SettingMaxTokensPerRun) {
		t.Fatalf("outcome %+v, want the run stopped by its token budget", out)
	}
	if n := len(p.requests()); n != 3 {
		t.Errorf("the model was asked %d times, want 3 (15 tokens each, stopped at 45 of 40)", n)
	}
	if out.Usage.InputTokens+out.Usage.OutputTokens != 45 {
		t.Errorf("usage %+v", out.Usage)
	}
	// The end event says which budget, for a UI to say it in its language.
	if b := failedBudget(e, r.ID); b == nil || *b != (Budget{Kind: "tokens", Setting: SettingMaxTokensPerRun, Used: 45, Limit: 40}) {
		t.Errorf("run_failed budget %+v", b)
	}
}

func failedBudget(e *env, runID string) *Budget {
	for _, ev := range e.eventsOf(runID) {
		if ev.Type == EventRunFailed {
			return ev.Budget
		}
	}
	return nil
}
