package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ferryhq/ferry/storage"
)

// Assess decides per call: a trusted target runs unasked, another is confirmed with
// the tool's message and marked dangerous, a failure stops the call before any
// question, and a panicking Assess asks rather than failing open.
func TestAssessPerCall(t *testing.T) {
	e := newEnv(t)
	e.t = t
	var ran atomic.Int32
	tool := echo("script")
	tool.Run = func(ctx context.Context, c *Call) (any, error) { ran.Add(1); return "ok", nil }
	tool.Assess = func(ctx context.Context, c *Call) (Assessment, error) {
		var a struct{ Text string }
		c.Decode(&a)
		switch a.Text {
		case "trusted":
			return Assessment{}, nil
		case "gone":
			return Assessment{}, Failf(CodeActionUnavailable, "no tab 7")
		case "broken":
			return Assessment{}, errors.New("lookup failed")
		case "panic":
			panic("boom")
		}
		return Assessment{Confirm: true, Dangerous: true, Message: "Run in " + a.Text + "?"}, nil
	}
	must(t, e.reg.Register(tool))
	if l := e.reg.All(0); len(l) != 1 || !l[0].Confirm {
		t.Fatalf("a tool with Assess is listed as one that may confirm: %+v", l)
	}
	call := func(text string) Result {
		return e.reg.Call(context.Background(), &Call{Tool: "script", Arguments: json.RawMessage(`{"text":"` + text + `"}`)})
	}

	if r := call("trusted"); !r.Success || len(e.ui.confirms) != 0 {
		t.Fatalf("trusted: %+v, %d confirmations", r, len(e.ui.confirms))
	}
	if r := call("https://a.example"); !r.Success || len(e.ui.confirms) != 1 {
		t.Fatalf("untrusted approved: %+v, %d confirmations", r, len(e.ui.confirms))
	}
	if c := e.ui.confirms[0]; c.Message != "Run in https://a.example?" || !c.Dangerous {
		t.Fatalf("confirmation asked %+v", c)
	}
	e.ui.answer = "no"
	if r := call("https://b.example"); r.Code != CodeUserRejected {
		t.Fatalf("declined: %+v", r)
	}
	if r := call("gone"); r.Code != CodeActionUnavailable || r.Reason != "no tab 7" {
		t.Fatalf("failure: %+v", r)
	}
	if r := call("broken"); r.Code != CodeHandlerError || !strings.Contains(r.Reason, "lookup failed") {
		t.Fatalf("error: %+v", r)
	}
	before := len(e.ui.confirms)
	if r := call("panic"); r.Code != CodeUserRejected || len(e.ui.confirms) != before+1 {
		t.Fatalf("panic: %+v", r)
	}
	if n := ran.Load(); n != 2 {
		t.Fatalf("ran %d times, want 2", n)
	}
	for _, row := range e.rows(storage.AuditFilter{}) {
		if wantDangerous := strings.Contains(string(row.Arguments), "example") || strings.Contains(string(row.Arguments), "panic"); row.Dangerous != wantDangerous {
			t.Errorf("audit row %s dangerous=%v", row.Arguments, row.Dangerous)
		}
	}

	// The policy's confirmation still applies when Assess says nothing.
	e.ui.answer = "yes"
	e.set(SettingConfirm, "script")
	before = len(e.ui.confirms)
	if r := call("trusted"); !r.Success || len(e.ui.confirms) != before+1 {
		t.Fatalf("policy confirm: %+v", r)
	}
}
