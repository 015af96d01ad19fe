package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// guardRun is one call through the guard alone, with the result the tool gives.
type guardRun struct {
	g   *guard
	p   *Policy
	now time.Time
}

func newGuardRun() *guardRun {
	return &guardRun{g: newGuard(), p: ParsePolicy(nil), now: time.Unix(1_800_000_000, 0)}
}

func (r *guardRun) call(ctx context.Context, c Call, args, result string) *Failure {
	c.Arguments = []byte(args)
	if c.TraceID == "" {
		c.TraceID = NewID()
	}
	write := c.Tool == "browser_click" || c.Tool == "open_tab"
	a, f := r.g.admit(ctx, &c, c.Arguments, write, r.p, r.now)
	if f != nil {
		return f
	}
	a.done(Result{Success: true, Result: result}, r.now)
	return nil
}

// The same call with the same result is a loop; the same call whose result changes
// (a tab read after it navigated, a poll whose answer moves) is progress, however
// often it comes.
func TestGuardKnowsProgress(t *testing.T) {
	r := newGuardRun()
	c := Call{Tool: "get_tab_content", Caller: "mcp"}
	for i := 0; i < 100; i++ {
		r.now = r.now.Add(time.Second)
		if f := r.call(context.Background(), c, `{"tab_id":1}`, fmt.Sprintf("page %d", i)); f != nil {
			t.Fatalf("call %d with a new result each time: %v", i, f)
		}
	}
	for i := 0; i < 5; i++ {
		if f := r.call(context.Background(), c, `{"tab_id":1}`, "stuck"); f != nil {
			t.Fatalf("repeat %d under the limit: %v", i, f)
		}
	}
	f := r.call(context.Background(), c, `{"tab_id":1}`, "stuck")
	if f == nil || f.Code != CodeLoopDetected || !strings.Contains(f.Reason, "same result 5 times") || !strings.Contains(f.Reason, "ferry config set tools.loop.repeat_limit") {
		t.Fatalf("sixth same result: %v", f)
	}
	// Other arguments are another call.
	if f := r.call(context.Background(), c, `{"tab_id":2}`, "stuck"); f != nil {
		t.Fatalf("another tab: %v", f)
	}
	// The window passes: counting starts again.
	r.now = r.now.Add(2 * time.Minute)
	if f := r.call(context.Background(), c, `{"tab_id":1}`, "stuck"); f != nil {
		t.Fatalf("after the window: %v", f)
	}
}

// A click whose result never changes goes on while the reads after it bring new
// pages; two calls taking turns with the same results are a loop all the same.
func TestGuardCycles(t *testing.T) {
	r := newGuardRun()
	c := Call{Tool: "x", RunID: "run1"}
	for i := 0; i < 30; i++ {
		if f := r.call(context.Background(), Call{Tool: "browser_click", RunID: "run1"}, `{"ref":"e3"}`, "clicked"); f != nil {
			t.Fatalf("click %d: %v", i, f)
		}
		if f := r.call(context.Background(), Call{Tool: "get_tab_content", RunID: "run1"}, `{}`, fmt.Sprint("page ", i)); f != nil {
			t.Fatalf("read %d: %v", i, f)
		}
	}
	var f *Failure
	for i := 0; i < 20 && f == nil; i++ {
		c.Tool = []string{"browser_click", "browser_snapshot"}[i%2]
		f = r.call(context.Background(), c, `{}`, "same as ever")
	}
	if f == nil || f.Code != CodeLoopDetected || !strings.HasPrefix(f.Reason, "browser_click") {
		t.Fatalf("a click and a snapshot taking turns with the same results were not stopped at the click: %v", f)
	}

	// A read that came back the same five times runs once more after a click, to
	// see what it did; when the page moved on, that is progress.
	r = newGuardRun()
	read := func(result string) *Failure {
		return r.call(context.Background(), Call{Tool: "get_tab_content", RunID: "run2"}, `{}`, result)
	}
	for i := 0; i < 5; i++ {
		read("page 1")
	}
	if f := read("page 1"); f == nil {
		t.Fatal("a sixth same read was not stopped")
	}
	r.call(context.Background(), Call{Tool: "browser_click", RunID: "run2"}, `{"selector":"#next"}`, "clicked")
	if f := read("page 2"); f != nil {
		t.Fatalf("the read after a click: %v", f)
	}
}

// Repeats and rates are counted per run and per outside client session: one
// `ferry mcp` looping stops that session alone.
func TestGuardScopes(t *testing.T) {
	r := newGuardRun()
	one, two := WithSession(context.Background(), "s1"), WithSession(context.Background(), "s2")
	c := Call{Tool: "list_tabs", Caller: "mcp"}
	for i := 0; i < 5; i++ {
		r.call(one, c, `{}`, "same")
		r.call(two, c, `{}`, "same")
	}
	if f := r.call(one, c, `{}`, "same"); f == nil || !strings.Contains(f.Reason, "this client session") {
		t.Fatalf("session one's sixth repeat: %v", f)
	}
	if f := r.call(context.Background(), Call{Tool: "list_tabs", Caller: "mcp", RunID: "r9"}, `{}`, "same"); f != nil {
		t.Fatalf("a run is its own scope: %v", f)
	}
	r.p.RateConversation = 3
	three := WithSession(context.Background(), "s3")
	for i := 0; i < 3; i++ {
		if f := r.call(three, c, fmt.Sprint(`{"n":`, i, `}`), fmt.Sprint(i)); f != nil {
			t.Fatal(f)
		}
	}
	f := r.call(three, c, `{"n":9}`, "9")
	if f == nil || f.Code != CodeRateLimited || !strings.Contains(f.Reason, "for this client session") || !strings.Contains(f.Reason, "ferry config set tools.rate.per_conversation") {
		t.Fatalf("rate: %v", f)
	}
	if f := r.call(WithSession(context.Background(), "s4"), c, `{"n":9}`, "9"); f != nil {
		t.Fatalf("another session has its own bucket: %v", f)
	}
}

// The defaults let an outside agent read a page a second for ten minutes (open,
// read, snapshot: three calls a page), and still stop a runaway that fires calls as
// fast as it can.
func TestGuardDefaultsForRealWork(t *testing.T) {
	r := newGuardRun()
	ctx := WithSession(context.Background(), "agent")
	for i := 0; i < 600; i++ {
		r.now = r.now.Add(time.Second)
		for _, tool := range []string{"open_tab", "get_tab_content", "browser_snapshot"} {
			if f := r.call(ctx, Call{Tool: tool, Caller: "mcp"}, fmt.Sprintf(`{"page":%d}`, i), fmt.Sprint(tool, i)); f != nil {
				t.Fatalf("page %d, %s: %v", i, tool, f)
			}
		}
	}
	runaway := WithSession(context.Background(), "runaway")
	var f *Failure
	n := 0
	for ; n < 100_000 && f == nil; n++ {
		r.now = r.now.Add(time.Millisecond)
		f = r.call(runaway, Call{Tool: "web_fetch", Caller: "mcp"}, fmt.Sprintf(`{"n":%d}`, n), fmt.Sprint(n))
	}
	if f == nil || f.Code != CodeRateLimited {
		t.Fatalf("a runaway of a call a millisecond was not stopped: %v", f)
	}
	t.Logf("a runaway of a call a millisecond stopped after %d calls: %s", n, f.Reason)
}

func TestForgetRepeats(t *testing.T) {
	e := newEnv(t)
	must(t, e.reg.Register(echo("e")))
	e.set(SettingRepeatLimit, "2")
	call := func() Result {
		return e.reg.Call(context.Background(), &Call{Tool: "e", Arguments: []byte(`{"text":"hi"}`), RunID: "r1"})
	}
	call()
	call()
	if res := call(); res.Code != CodeLoopDetected {
		t.Fatalf("third: %+v", res)
	}
	e.reg.ForgetRepeats("r1")
	if res := call(); !res.Success {
		t.Fatalf("after the person let the run go on: %+v", res)
	}
}

// Every refusal counts toward the loop guard, not only results of calls that ran: a
// model asking again and again for what the pipeline keeps refusing (an unknown
// tool, one outside its scope, bad arguments, a page action the page says is
// unavailable, a disabled tool) is stopped like any loop, and a refusal whose
// reason changes is news, never a loop.
func TestGuardCountsRefusals(t *testing.T) {
	e := newEnv(t)
	must(t, e.reg.Register(echo("e")))
	unavailable := echo("add_task")
	unavailable.Available = func(ctx context.Context, c *Call) (bool, string) {
		return false, "the page reports add_task unavailable: sign in first"
	}
	must(t, e.reg.Register(unavailable))
	e.set(SettingRepeatLimit, "3")
	e.set(SettingDisabled, "disabled_one")
	disabled := echo("disabled_one")
	must(t, e.reg.Register(disabled))

	for _, c := range []struct {
		name  string
		call  Call
		first Code
	}{
		{"lookup", Call{Tool: "no_such_tool", Arguments: []byte(`{"text":"hi"}`)}, CodeNotFound},
		{"scope", Call{Tool: "e", Arguments: []byte(`{"text":"hi"}`), Scope: &Scope{PageTab: 7}}, CodeNotFound},
		{"validation", Call{Tool: "e", Arguments: []byte(`{"n":"x"}`)}, CodeInvalidParams},
		{"availability", Call{Tool: "add_task", Arguments: []byte(`{"text":"agenda"}`)}, CodeActionUnavailable},
		{"permission", Call{Tool: "disabled_one", Arguments: []byte(`{"text":"hi"}`)}, CodePermissionDenied},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := "run-" + c.name
			call := func() Result {
				cc := c.call
				cc.RunID, cc.Caller = run, "model"
				return e.reg.Call(context.Background(), &cc)
			}
			for i := 1; i <= 3; i++ {
				if res := call(); res.Code != c.first {
					t.Fatalf("refusal %d: %s %s, want %s", i, res.Code, res.Reason, c.first)
				}
			}
			res := call()
			if res.Code != CodeLoopDetected || !strings.Contains(res.Reason, "refused 3 times in a row") || !strings.Contains(res.Reason, string(c.first)) {
				t.Fatalf("fourth same refusal: %s %s, want LOOP_DETECTED naming %s", res.Code, res.Reason, c.first)
			}
			// The person lets the run go on: counting starts again.
			e.reg.ForgetRepeats(run)
			if res := call(); res.Code != c.first {
				t.Fatalf("after ForgetRepeats: %s %s, want %s", res.Code, res.Reason, c.first)
			}
		})
	}

	// The same call refused for a new reason each time brings news every time.
	n := 0
	changing := echo("changing")
	changing.Available = func(ctx context.Context, c *Call) (bool, string) {
		n++
		return false, fmt.Sprintf("still loading (%d%%)", n*10)
	}
	must(t, e.reg.Register(changing))
	for i := 0; i < 8; i++ {
		res := e.reg.Call(context.Background(), &Call{Tool: "changing", Arguments: []byte(`{"text":"x"}`), RunID: "run-changing", Caller: "model"})
		if res.Code != CodeActionUnavailable {
			t.Fatalf("refusal %d with a new reason: %s %s", i, res.Code, res.Reason)
		}
	}
}

// A call that showed a card carries it in its result: what was asked and how it
// ended, so the conversation keeps both; one that showed none carries nothing. A
// card waits five minutes by default.
func TestConfirmationIsRecorded(t *testing.T) {
	if d := ParsePolicy(nil).ConfirmTimeout; d < 5*time.Minute {
		t.Errorf("default %s is %s, want at least 5 minutes", SettingConfirmTimeout, d)
	}
	for _, c := range []struct {
		ui     string
		code   Code
		answer string
	}{
		{"yes", "", AnswerApproved},
		{"no", CodeUserRejected, AnswerDenied},
		{"error", CodeUserRejected, AnswerFailed},
		{"hang", CodeConfirmTimeout, AnswerTimeout},
	} {
		t.Run(c.ui, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				tool := echo("confirmed")
				tool.Confirm, tool.ConfirmMessage = true, "Add a todo on the demo page?"
				must(t, e.reg.Register(tool))
				must(t, e.reg.Register(echo("plain")))
				e.ui.answer = c.ui
				res := e.reg.Call(context.Background(), &Call{Tool: "confirmed", Arguments: []byte(`{"text":"hi"}`), Origin: "http://127.0.0.1:8080"})
				if res.Code != c.code {
					t.Fatalf("%s %s, want %q", res.Code, res.Reason, c.code)
				}
				got := res.Confirmation
				if got == nil || got.Answer != c.answer || got.Message != "Add a todo on the demo page?" || got.Origin != "http://127.0.0.1:8080" || got.TimeoutMS != 300_000 {
					t.Fatalf("confirmation %+v, want %s of the card asked", got, c.answer)
				}
				if c.answer == AnswerTimeout && got.WaitedMS != 300_000 {
					t.Errorf("a timed-out card waited %d ms, want the 300000 of the default", got.WaitedMS)
				}
				b, _ := json.Marshal(res)
				if !strings.Contains(string(b), `"confirmation":{"message":"Add a todo on the demo page?"`) {
					t.Errorf("the result as sent lacks the card: %s", b)
				}
				// A secret of the arguments the message repeats is not kept.
				secret := echo("secretive")
				secret.Assess = func(ctx context.Context, c *Call) (Assessment, error) {
					var v struct{ Password string }
					c.Decode(&v)
					return Assessment{Confirm: true, Message: "Type " + v.Password + " into the login form?"}, nil
				}
				must(t, e.reg.Register(secret))
				res = e.reg.Call(context.Background(), &Call{Tool: "secretive", Arguments: []byte(`{"text":"hi","password":"hunter2-very-secret"}`)})
				if res.Confirmation == nil || strings.Contains(res.Confirmation.Message, "hunter2") || !strings.Contains(res.Confirmation.Message, Redacted) {
					t.Errorf("a card repeating a secret is kept as %+v", res.Confirmation)
				}
				if res := e.reg.Call(context.Background(), &Call{Tool: "plain", Arguments: []byte(`{"text":"hi"}`)}); res.Confirmation != nil {
					t.Errorf("a call with no card carries %+v", res.Confirmation)
				}
			})
		})
	}
}
