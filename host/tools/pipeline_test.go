package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

type fakeUI struct {
	mu       sync.Mutex
	answer   string // "yes", "no", "hang", "error"
	confirms []ConfirmRequest
	ask      func(ctx context.Context, req AskRequest) (AskAnswer, error)
}

func (u *fakeUI) Confirm(ctx context.Context, req ConfirmRequest) (bool, error) {
	u.mu.Lock()
	u.confirms = append(u.confirms, req)
	a := u.answer
	u.mu.Unlock()
	switch a {
	case "yes":
		return true, nil
	case "hang":
		<-ctx.Done()
		return false, ctx.Err()
	case "error":
		return false, errors.New("side panel closed")
	}
	return false, nil
}

func (u *fakeUI) Ask(ctx context.Context, req AskRequest) (AskAnswer, error) {
	if u.ask != nil {
		return u.ask(ctx, req)
	}
	return AskAnswer{Answer: "blue"}, nil
}

type env struct {
	t   *testing.T
	db  *storage.DB
	log *storage.AuditLog
	reg *Registry
	ui  *fakeUI
}

func newEnv(t testing.TB) *env {
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	audit := db.OpenAuditLog(storage.AuditOptions{OnError: func(err error) { t.Errorf("audit: %v", err) }})
	reg := NewRegistry(Options{Settings: config.NewLive(db, nil), Audit: audit, Log: zerolog.Nop()})
	t.Cleanup(func() { audit.Close(); db.Close() })
	e := &env{db: db, log: audit, reg: reg, ui: &fakeUI{answer: "yes"}}
	if tt, ok := t.(*testing.T); ok {
		e.t = tt
	}
	reg.SetUI(e.ui)
	return e
}

func (e *env) set(key, value string) {
	e.t.Helper()
	if err := e.db.SetSetting(context.Background(), key, value); err != nil {
		e.t.Fatal(err)
	}
	e.reg.RefreshSettings()
}

func (e *env) rows(f storage.AuditFilter) []storage.AuditEntry {
	e.t.Helper()
	if err := e.log.Flush(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.db.QueryAudit(context.Background(), f)
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// echo is a builtin that returns its arguments.
func echo(name string) Tool {
	return Tool{
		Name: name, Description: "echo", Kind: KindRead,
		Parameters: json.RawMessage(`{"text": {"type": "string", "required": true}, "n": {"type": "integer"}, "password": {"type": "string", "secret": true}}`),
		Run: func(ctx context.Context, c *Call) (any, error) {
			var v map[string]any
			return v, c.Decode(&v)
		},
	}
}

// TestEveryCode drives the pipeline to each result code of PROTOCOL.md's table of tool results, and
// checks the audit row each call leaves.
func TestEveryCode(t *testing.T) {
	type tc struct {
		name  string
		tool  Tool
		setup func(e *env)
		call  Call
		code  Code // "" means success
		want  string
		ran   bool // whether Run may have been reached
	}
	var ran atomic.Int32
	counted := func(t Tool) Tool {
		run := t.Run
		t.Run = func(ctx context.Context, c *Call) (any, error) { ran.Add(1); return run(ctx, c) }
		return t
	}
	slow := echo("slow")
	slow.Timeout = 50 * time.Millisecond
	slow.Run = func(ctx context.Context, c *Call) (any, error) { <-ctx.Done(); return nil, ctx.Err() }
	stubborn := echo("stubborn")
	stubborn.Timeout = 50 * time.Millisecond
	stubborn.Run = func(ctx context.Context, c *Call) (any, error) {
		time.Sleep(200 * time.Millisecond)
		return "late", nil
	}
	boom := echo("boom")
	boom.Run = func(ctx context.Context, c *Call) (any, error) { return nil, errors.New("disk on fire") }
	panicky := echo("panicky")
	panicky.Run = func(ctx context.Context, c *Call) (any, error) { panic("nil map") }
	ssrf := echo("ssrf")
	ssrf.Run = func(ctx context.Context, c *Call) (any, error) {
		return nil, Failf(CodePermissionDenied, "127.0.0.1 is a loopback address")
	}
	full := echo("full")
	full.Available = func(ctx context.Context, c *Call) (bool, string) { return false, "the list is full (8 of 8)" }
	confirmed := echo("confirmed")
	confirmed.Confirm = true
	writer := echo("writer")
	writer.Kind = KindWrite
	writer.Permissions = []string{PermWriteStore}
	expectBad := echo("expect_bad")
	expectBad.Run = func(ctx context.Context, c *Call) (any, error) {
		return nil, Failf(CodeExpectationFailed, "expect_bad ran, but its expected result was not observed: row t4 never appeared")
	}
	args := json.RawMessage(`{"text":"hi"}`)

	cases := []tc{
		{name: "success", tool: echo("e"), call: Call{Tool: "e", Arguments: args}, want: "hi", ran: true},
		{name: "not found", tool: echo("e"), call: Call{Tool: "nope", Arguments: args}, code: CodeNotFound, want: `no tool named "nope"`},
		{name: "invalid params", tool: echo("e"), call: Call{Tool: "e", Arguments: json.RawMessage(`{"n":"x","extra":1}`)}, code: CodeInvalidParams,
			want: "/extra: property is not allowed (no such parameter); /n: expected integer, but got string; /text: required property is missing"},
		{name: "arguments not an object", tool: echo("e"), call: Call{Tool: "e", Arguments: json.RawMessage(`[1]`)}, code: CodeInvalidParams, want: "must be a JSON object"},
		{name: "unavailable", tool: full, call: Call{Tool: "full", Arguments: args}, code: CodeActionUnavailable, want: "the list is full (8 of 8)"},
		{name: "disabled by policy", tool: echo("e"), setup: func(e *env) { e.set(SettingDisabled, "x, e") },
			call: Call{Tool: "e", Arguments: args}, code: CodePermissionDenied, want: "disabled by the setting tools.disabled"},
		{name: "origin denied", tool: echo("e"), setup: func(e *env) { e.set(SettingDeniedOrigins, "https://evil.example") },
			call: Call{Tool: "e", Arguments: args, Origin: "https://evil.example/"}, code: CodePermissionDenied, want: "tools.denied_origins"},
		{name: "origin denied as typed in the options page", tool: echo("e"), setup: func(e *env) { e.set(SettingDeniedOrigins, " HTTPS://Evil.Example:443/ ") },
			call: Call{Tool: "e", Arguments: args, Origin: "https://evil.example"}, code: CodePermissionDenied, want: "tools.denied_origins"},
		{name: "origin denied by a list stored before it was checked", tool: echo("e"), setup: func(e *env) { e.set(SettingDeniedOrigins, "evil.example, https://Evil.Example") },
			call: Call{Tool: "e", Arguments: args, Origin: "https://evil.example/page"}, code: CodePermissionDenied, want: "tools.denied_origins"},
		{name: "write flag off", tool: writer, call: Call{Tool: "writer", Arguments: args}, code: CodePermissionDenied, want: "ferry config set tools.write_store true"},
		{name: "write flag on and opt-in", tool: writer, setup: func(e *env) { e.set(SettingWriteStore, "true") },
			call: Call{Tool: "writer", Arguments: args}, want: "hi", ran: true},
		{name: "too deep", tool: echo("e"), call: Call{Tool: "e", Arguments: args, TraceID: "t1", Depth: 4}, code: CodeLoopDetected, want: "4 deep"},
		{name: "repeated", tool: echo("e"), setup: func(e *env) {
			e.set(SettingRepeatLimit, "2")
			for i := 0; i < 2; i++ {
				e.reg.Call(context.Background(), &Call{Tool: "e", Arguments: json.RawMessage(`{ "text" : "hi" }`), ConversationID: "c1"})
			}
		}, call: Call{Tool: "e", Arguments: args, ConversationID: "c1"}, code: CodeLoopDetected, want: "same result 2 times in a row"},
		{name: "rate limited", tool: echo("e"), setup: func(e *env) {
			e.set(SettingRateConversation, "1")
			e.reg.Call(context.Background(), &Call{Tool: "e", Arguments: json.RawMessage(`{"text":"a"}`), ConversationID: "c2"})
		}, call: Call{Tool: "e", Arguments: args, ConversationID: "c2"}, code: CodeRateLimited, want: "tools.rate.per_conversation"},
		{name: "global rate limited", tool: echo("e"), setup: func(e *env) {
			e.set(SettingRateGlobal, "1")
			e.reg.Call(context.Background(), &Call{Tool: "e", Arguments: json.RawMessage(`{"text":"a"}`)})
		}, call: Call{Tool: "e", Arguments: args}, code: CodeRateLimited, want: "tools.rate.global"},
		// Caller policy: every refusal of the call's scope is the pipeline's, and audited.
		{name: "outside agent, tool not allowed", tool: echo("e"), setup: func(e *env) { e.set(SettingAllowedTools, "*,-e") },
			call: Call{Tool: "e", Arguments: args, Scope: &Scope{Principal: PrincipalMCP, Outside: true}}, code: CodePermissionDenied, want: "mcp.allowed_tools"},
		{name: "outside agent through a run", tool: echo("e"), setup: func(e *env) { e.set(SettingAllowedTools, "*,-e") },
			call: Call{Tool: "e", Arguments: args, Scope: (&Scope{Principal: PrincipalSocket, Outside: true}).ForRun("r1", "c1", nil, nil)},
			code: CodePermissionDenied, want: "through a run it started"},
		{name: "outside agent, bad arguments to a refused tool", tool: echo("e"), setup: func(e *env) { e.set(SettingAllowedTools, "*,-e") },
			call: Call{Tool: "e", Arguments: json.RawMessage(`{"x":1}`), Scope: &Scope{Outside: true}}, code: CodePermissionDenied, want: "not among the tools"},
		{name: "page reaches a builtin", tool: echo("e"), call: Call{Tool: "e", Arguments: args, Scope: &Scope{Principal: PrincipalPage, Origin: "https://a.example", PageTab: 3}},
			code: CodeNotFound, want: "a page can run only page actions"},
		{name: "sub-agent type", tool: echo("e"), call: Call{Tool: "e", Arguments: args, Scope: (*Scope)(nil).Narrow(Allow{Who: "a researcher sub-agent",
			Permits: func(name, _ string, _ Source) bool { return name != "e" }}, "r2", nil)}, code: CodeNotFound, want: "not among the tools of a researcher sub-agent"},
		{name: "run's cap", tool: echo("e"), setup: func(e *env) {}, call: Call{Tool: "e", Arguments: args, Scope: &Scope{Budget: spent(1)}},
			code: CodeRateLimited, want: "agent.max_tool_calls"},
		{name: "data flow, person says no", tool: echo("e"), setup: func(e *env) { e.ui.answer = "no" },
			call: Call{Tool: "e", Arguments: args, Scope: &Scope{Gate: askingGate{}}}, code: CodeUserRejected, want: "declined"},
		{name: "data flow, nobody to ask", tool: echo("e"), setup: func(e *env) { e.reg.SetUI(nil) },
			call: Call{Tool: "e", Arguments: args, Scope: &Scope{Gate: askingGate{}}}, code: CodeUserRejected, want: "no UI is connected"},
		{name: "data flow, approved", tool: echo("e"), call: Call{Tool: "e", Arguments: args, Scope: &Scope{Gate: askingGate{}}}, want: "hi", ran: true},
		{name: "data flow check fails", tool: echo("e"), call: Call{Tool: "e", Arguments: args, Scope: &Scope{Gate: askingGate{fail: true}}},
			code: CodeHandlerError, want: "data-flow check of e failed"},
		{name: "confirmed yes", tool: confirmed, call: Call{Tool: "confirmed", Arguments: args}, want: "hi", ran: true},
		{name: "user rejected", tool: confirmed, setup: func(e *env) { e.ui.answer = "no" },
			call: Call{Tool: "confirmed", Arguments: args}, code: CodeUserRejected, want: "declined"},
		{name: "no UI to confirm", tool: confirmed, setup: func(e *env) { e.reg.SetUI(nil) },
			call: Call{Tool: "confirmed", Arguments: args}, code: CodeUserRejected, want: "no UI is connected"},
		{name: "UI failed to confirm", tool: confirmed, setup: func(e *env) { e.ui.answer = "error" },
			call: Call{Tool: "confirmed", Arguments: args}, code: CodeUserRejected, want: "side panel closed"},
		{name: "confirm by policy", tool: writer, setup: func(e *env) {
			e.set(SettingWriteStore, "true")
			e.set(SettingConfirmWrites, "true")
			e.ui.answer = "no"
		}, call: Call{Tool: "writer", Arguments: args}, code: CodeUserRejected, want: "declined"},
		{name: "confirm timeout", tool: confirmed, setup: func(e *env) { e.ui.answer = "hang"; e.set(SettingConfirmTimeout, "1") },
			call: Call{Tool: "confirmed", Arguments: args}, code: CodeConfirmTimeout, want: "no answer to the confirmation"},
		{name: "handler error", tool: boom, call: Call{Tool: "boom", Arguments: args}, code: CodeHandlerError, want: "boom failed: disk on fire", ran: true},
		{name: "handler panic", tool: panicky, call: Call{Tool: "panicky", Arguments: args}, code: CodeHandlerError, want: "internal error: nil map", ran: true},
		{name: "handler chooses code", tool: ssrf, call: Call{Tool: "ssrf", Arguments: args}, code: CodePermissionDenied, want: "loopback", ran: true},
		{name: "timeout", tool: slow, call: Call{Tool: "slow", Arguments: args}, code: CodeTimeout, want: "did not finish within 50ms", ran: true},
		{name: "timeout ignoring ctx", tool: stubborn, call: Call{Tool: "stubborn", Arguments: args}, code: CodeTimeout, want: "did not finish", ran: true},
		{name: "expectation failed", tool: expectBad, call: Call{Tool: "expect_bad", Arguments: args}, code: CodeExpectationFailed, want: "row t4 never appeared", ran: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.t = t
			must(t, e.reg.Register(counted(c.tool)))
			if c.setup != nil {
				c.setup(e)
			}
			ran.Store(0)
			call := c.call
			call.Caller = "test"
			res := e.reg.Call(context.Background(), &call)
			if c.code == "" {
				if !res.Success {
					t.Fatalf("got %+v, want success", res)
				}
				if m, _ := res.Result.(map[string]any); m["text"] != c.want {
					t.Fatalf("result %v, want text %q", res.Result, c.want)
				}
			} else if res.Success || res.Code != c.code || !strings.Contains(res.Reason, c.want) {
				t.Fatalf("got %+v, want %s containing %q", res, c.code, c.want)
			}
			if !c.ran && ran.Load() != 0 {
				t.Fatalf("%s: the handler ran, but nothing may run for this code", c.name)
			}
			// The audit row: one for this call, with its code, trace and depth.
			rows := e.rows(storage.AuditFilter{Since: time.Now().Add(-time.Minute)})
			var row *storage.AuditEntry
			for i := range rows {
				if rows[i].CallID == call.ID {
					row = &rows[i]
				}
			}
			if row == nil {
				t.Fatalf("no audit row for call %s among %d", call.ID, len(rows))
			}
			if row.Code != string(c.code) || row.Success != res.Success || row.TraceID == "" || row.TraceID != call.TraceID ||
				row.Depth != call.Depth || row.Caller != "test" || row.Tool == "" {
				t.Fatalf("audit row %+v does not match call %+v / result %+v", row, call, res)
			}
			if !res.Success && !strings.Contains(row.Result, c.want) {
				t.Fatalf("audit row result %q lacks the reason", row.Result)
			}
		})
	}
}

func TestExpectationInResult(t *testing.T) {
	e := newEnv(t)
	e.t = t
	tool := echo("add_task")
	tool.Run = func(ctx context.Context, c *Call) (any, error) {
		return Outcome{Result: map[string]any{"text": "x"}, Expect: "new row shown", Changed: map[string]any{"added": []string{"t4"}}}, nil
	}
	must(t, e.reg.Register(tool))
	res := e.reg.Call(context.Background(), &Call{Tool: "add_task", Arguments: json.RawMessage(`{"text":"x"}`)})
	b, _ := json.Marshal(res)
	if string(b) != `{"success":true,"result":{"text":"x"},"expect":"new row shown","changed":{"added":["t4"]}}` {
		t.Fatalf("result %s", b)
	}
}

func TestAuditRedactsSecretsAndMarksDangerous(t *testing.T) {
	e := newEnv(t)
	e.t = t
	tool := echo("login")
	tool.Dangerous = true
	must(t, e.reg.Register(tool))
	raw := Tool{Name: "raw", Run: tool.Run, Parameters: json.RawMessage(`{"type":"object","properties":{"creds":{"type":"object","properties":{"pin":{"type":"string","format":"password"}}},"list":{"type":"array","items":{"type":"string","x-secret":true}}}}`)}
	must(t, e.reg.Register(raw))
	e.reg.Call(context.Background(), &Call{Tool: "login", Arguments: json.RawMessage(`{"text":"bob","password":"hunter2"}`)})
	e.reg.Call(context.Background(), &Call{Tool: "raw", Arguments: json.RawMessage(`{"creds":{"pin":"1234"},"list":["a","b"]}`)})
	// Invalid arguments are redacted too: the secret was still sent.
	e.reg.Call(context.Background(), &Call{Tool: "login", Arguments: json.RawMessage(`{"password":"hunter2"}`)})
	rows := e.rows(storage.AuditFilter{})
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if strings.Contains(string(r.Arguments), "hunter2") || strings.Contains(string(r.Arguments), "1234") || strings.Contains(string(r.Arguments), `"a"`) {
			t.Fatalf("secret in audit row: %s", r.Arguments)
		}
		if r.Tool == "login" && !r.Dangerous {
			t.Fatalf("dangerous tool not marked: %+v", r)
		}
	}
	if got := string(rows[1].Arguments); got != `{"creds":{"pin":"[redacted]"},"list":["[redacted]","[redacted]"]}` {
		t.Fatalf("redacted arguments %s", got)
	}
}

func TestNestedCallsChainTrace(t *testing.T) {
	e := newEnv(t)
	e.t = t
	// A tool that calls itself through the pipeline: depth grows, and re-entering the
	// same tool in the same trace is caught at once.
	var inner Result
	self := echo("self")
	self.Run = func(ctx context.Context, c *Call) (any, error) {
		inner = e.reg.Call(ctx, &Call{Tool: "self", Arguments: json.RawMessage(`{"text":"again"}`)})
		return "outer done", nil
	}
	must(t, e.reg.Register(self))
	outer := &Call{Tool: "self", Arguments: json.RawMessage(`{"text":"x"}`), ConversationID: "c"}
	res := e.reg.Call(context.Background(), outer)
	if !res.Success || inner.Code != CodeLoopDetected || !strings.Contains(inner.Reason, "already running in this call chain") {
		t.Fatalf("outer %+v inner %+v", res, inner)
	}
	rows := e.rows(storage.AuditFilter{Tool: "self"})
	if len(rows) != 2 || rows[0].TraceID != rows[1].TraceID || rows[0].Depth+rows[1].Depth != 1 || rows[0].ConversationID != "c" {
		t.Fatalf("rows %+v", rows)
	}

	// Chains of distinct tools stop past depth 3.
	depths := []int{}
	for _, n := range []string{"a", "b", "c", "d", "f"} {
		name := n
		next := map[string]string{"a": "b", "b": "c", "c": "d", "d": "f", "f": ""}[name]
		tool := echo(name)
		tool.Run = func(ctx context.Context, c *Call) (any, error) {
			depths = append(depths, c.Depth)
			if next == "" {
				return "end", nil
			}
			r := e.reg.Call(ctx, &Call{Tool: next, Arguments: json.RawMessage(`{"text":"x"}`)})
			return r, nil
		}
		must(t, e.reg.Register(tool))
	}
	res = e.reg.Call(context.Background(), &Call{Tool: "a", Arguments: json.RawMessage(`{"text":"x"}`)})
	if len(depths) != 4 || depths[3] != 3 {
		t.Fatalf("depths %v", depths)
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), `"code":"LOOP_DETECTED"`) {
		t.Fatalf("deep chain %s", b)
	}
}

func TestParallelSiblingsAreNotALoop(t *testing.T) {
	e := newEnv(t)
	e.t = t
	gate := make(chan struct{})
	tool := echo("wait")
	tool.Run = func(ctx context.Context, c *Call) (any, error) { <-gate; return "ok", nil }
	must(t, e.reg.Register(tool))
	var wg sync.WaitGroup
	results := make([]Result, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.reg.Call(context.Background(), &Call{Tool: "wait", TraceID: "turn", Arguments: json.RawMessage(`{"text":"` + string(rune('a'+i)) + `"}`)})
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(gate)
	wg.Wait()
	for _, r := range results {
		if !r.Success {
			t.Fatalf("sibling refused: %+v", r)
		}
	}
}

func TestAskUser(t *testing.T) {
	e := newEnv(t)
	e.t = t
	must(t, e.reg.Register(AskUser(e.reg)))
	res := e.reg.Call(context.Background(), &Call{Tool: "ask_user", Arguments: json.RawMessage(`{"question":"Colour?","options":["red","blue"]}`)})
	if b, _ := json.Marshal(res); string(b) != `{"success":true,"result":{"answer":"blue"}}` {
		t.Fatalf("%s", b)
	}
	e.set(SettingAskTimeout, "10")
	e.ui.ask = func(ctx context.Context, req AskRequest) (AskAnswer, error) {
		if req.TimeoutMS != 10000 {
			t.Errorf("timeout_ms %d", req.TimeoutMS)
		}
		<-ctx.Done()
		return AskAnswer{}, ctx.Err()
	}
	// The 10 s of the setting would slow the suite: a shorter clock via the context
	// is not possible from outside, so check the mapping on a cancelled wait instead.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res = e.reg.Call(ctx, &Call{Tool: "ask_user", Arguments: json.RawMessage(`{"question":"Colour?"}`)})
	if res.Success || res.Code != CodeHandlerError || !strings.Contains(res.Reason, "cancelled") {
		t.Fatalf("cancelled ask: %+v", res)
	}
	e.reg.SetUI(nil)
	res = e.reg.Call(context.Background(), &Call{Tool: "ask_user", Arguments: json.RawMessage(`{"question":"Colour?"}`)})
	if res.Code != CodeActionUnavailable || !strings.Contains(res.Reason, "no UI is connected") {
		t.Fatalf("no UI: %+v", res)
	}
	res = e.reg.Call(context.Background(), &Call{Tool: "ask_user", Arguments: json.RawMessage(`{"question":"x","multiple":true}`)})
	if res.Code != CodeInvalidParams || !strings.Contains(res.Reason, "/options: is required") {
		t.Fatalf("multiple without options: %+v", res)
	}
}

func TestAskUserTimeoutAnswersNull(t *testing.T) {
	e := newEnv(t)
	e.t = t
	tool := AskUser(e.reg)
	must(t, e.reg.Register(tool))
	e.ui.ask = func(ctx context.Context, req AskRequest) (AskAnswer, error) {
		<-ctx.Done()
		return AskAnswer{}, ctx.Err()
	}
	// Policy with a short ask timeout, put straight into the cache: the setting's
	// smallest value (10 s) is too slow for a unit test.
	p := ParsePolicy(nil)
	p.AskTimeout = 50 * time.Millisecond
	snap := config.Of(nil)
	e.reg.policy.mu.Lock()
	e.reg.policy.src, e.reg.policy.cur, e.reg.policy.snap = sameSnapshot{snap}, p, snap
	e.reg.policy.mu.Unlock()
	res := e.reg.Call(context.Background(), &Call{Tool: "ask_user", Arguments: json.RawMessage(`{"question":"?"}`)})
	if b, _ := json.Marshal(res); string(b) != `{"success":true,"result":{"answer":null,"reason":"timeout"}}` {
		t.Fatalf("%s", b)
	}
}

// sameSnapshot serves one snapshot for ever, so a policy put into the cache stays.
type sameSnapshot struct{ s *config.Snapshot }

func (c sameSnapshot) Snapshot(context.Context) *config.Snapshot { return c.s }

func TestConcurrentCalls(t *testing.T) {
	e := newEnv(t)
	e.t = t
	e.set(SettingRateGlobal, "0")
	e.set(SettingRateConversation, "0")
	must(t, e.reg.Register(echo("e")))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if g == 0 && i%10 == 0 {
					// Registrations race with calls.
					must(t, e.reg.Register(Tool{Name: "p", Source: SourcePage, Origin: "https://a.example", TabID: i, Run: echo("x").Run}))
					e.reg.RemoveTab(i)
				}
				args, _ := json.Marshal(map[string]any{"text": "x", "n": g*1000 + i})
				res := e.reg.Call(context.Background(), &Call{Tool: "e", Arguments: args, ConversationID: "c"})
				if !res.Success {
					t.Errorf("%+v", res)
				}
			}
		}()
	}
	wg.Wait()
	if rows := e.rows(storage.AuditFilter{Tool: "e", Limit: 1000}); len(rows) != 400 {
		t.Fatalf("%d audit rows, want 400", len(rows))
	}
}

// spent is a cap of limit calls, all used.
func spent(limit int) *Budget {
	b := NewBudget(limit)
	for b.take() {
	}
	return b
}

// askingGate wants the person to approve every call, with a flow.
type askingGate struct{ fail bool }

func (g askingGate) Check(ctx context.Context, call *Call, t Listing, e Effect) (FlowVerdict, error) {
	if g.fail {
		return FlowVerdict{}, errors.New("lookup failed")
	}
	return FlowVerdict{Confirm: true, Reason: "would send data", Flow: &Flow{Sources: []string{"workspace"}, Destination: "https://b.example"}}, nil
}

func (askingGate) Observe(ctx context.Context, call *Call, t Listing, p Provenance, res *Result) {
	res.Sources = []string{"seen"}
}

func (askingGate) Taint() Taint { return Taint{Untrusted: true} }

// TestFlowConfirmationCarriesRequesterAndFlow: the card the person sees says who
// asks (the model of which run, started by whom) and what would go where; a page
// never answers for a data flow.
func TestFlowConfirmationCarriesRequesterAndFlow(t *testing.T) {
	e := newEnv(t)
	e.t = t
	must(t, e.reg.Register(echo("e")))
	scope := (&Scope{Principal: PrincipalMCP, Client: "claude-code", Outside: true}).ForRun("run1", "conv1", nil, askingGate{})
	res := e.reg.Call(context.Background(), &Call{Tool: "e", Arguments: json.RawMessage(`{"text":"x"}`), Caller: "model", Scope: scope})
	if !res.Success || strings.Join(res.Sources, ",") != "seen" {
		t.Fatalf("result %+v", res)
	}
	if len(e.ui.confirms) != 1 {
		t.Fatalf("%d confirmations asked, want 1", len(e.ui.confirms))
	}
	got := e.ui.confirms[0]
	if got.Flow == nil || got.Flow.Destination != "https://b.example" || got.Message != "would send data" {
		t.Errorf("card: %+v flow %+v", got, got.Flow)
	}
	if r := got.Requester; r == nil || r.Kind != "model" || r.RunID != "run1" || r.ConversationID != "conv1" || r.Client != "claude-code" {
		t.Errorf("requester: %+v", got.Requester)
	}
}
