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

// The card names who asks, from the call's entry path.
func TestConfirmNamesRequester(t *testing.T) {
	e := newEnv(t)
	e.t = t
	tool := echo("act")
	tool.Confirm = true
	must(t, e.reg.Register(tool))
	for _, tc := range []struct {
		call Call
		want Requester
	}{
		{Call{Caller: "model", RunID: "r1", ConversationID: "c1", Origin: "https://bound.example"}, Requester{Kind: "model", RunID: "r1", ConversationID: "c1"}},
		{Call{Caller: "page", Origin: "https://shop.example"}, Requester{Kind: "page", Origin: "https://shop.example"}},
		{Call{Caller: "mcp"}, Requester{Kind: "mcp"}},
		{Call{Caller: "socket"}, Requester{Kind: "socket"}},
		{Call{Caller: "cli"}, Requester{Kind: "cli"}},
		{Call{Caller: "extension"}, Requester{Kind: "extension"}},
	} {
		c := tc.call
		c.Tool, c.Arguments = "act", json.RawMessage(`{"text":"x"}`)
		if r := e.reg.Call(context.Background(), &c); !r.Success {
			t.Fatalf("%s: %+v", c.Caller, r)
		}
		got := e.ui.confirms[len(e.ui.confirms)-1].Requester
		if got == nil || *got != tc.want {
			t.Errorf("caller %s: requester %+v, want %+v", c.Caller, got, tc.want)
		}
	}
	if r := e.reg.Call(context.Background(), &Call{Tool: "act", Arguments: json.RawMessage(`{"text":"x"}`)}); !r.Success {
		t.Fatal(r)
	}
	if got := e.ui.confirms[len(e.ui.confirms)-1].Requester; got != nil {
		t.Errorf("a call with no caller names requester %+v", got)
	}
}

// A confirmed call is bound to the document it was judged for: Locate runs only when
// a person is asked, its document is on the card and on the call Run sees; an
// Assessment's document does the same for a call nobody is asked about.
func TestConfirmBindsDocument(t *testing.T) {
	e := newEnv(t)
	e.t = t
	var located atomic.Int32
	var seen []*Document
	doc := &Document{TabID: 7, ID: "D1", URL: "http://127.0.0.1:1/a", Origin: "http://127.0.0.1:1"}
	tool := echo("click")
	tool.Kind = KindWrite
	tool.Locate = func(ctx context.Context, c *Call) (*Document, error) {
		located.Add(1)
		var a struct{ Text string }
		c.Decode(&a)
		if a.Text == "gone" {
			return nil, Failf(CodeActionUnavailable, "no tab 7")
		}
		return doc, nil
	}
	tool.Run = func(ctx context.Context, c *Call) (any, error) { seen = append(seen, c.Document); return "ok", nil }
	must(t, e.reg.Register(tool))
	call := func(text string) Result {
		return e.reg.Call(context.Background(), &Call{Tool: "click", Arguments: json.RawMessage(`{"text":"` + text + `"}`)})
	}
	if r := call("x"); !r.Success || located.Load() != 0 || len(seen) != 1 || seen[0] != nil {
		t.Fatalf("unconfirmed call: %+v, located %d, document %v", r, located.Load(), seen)
	}
	e.set(SettingConfirmWrites, "true")
	if r := call("x"); !r.Success || located.Load() != 1 || seen[1] != doc {
		t.Fatalf("confirmed call: %+v, located %d, document %v", r, located.Load(), seen[1])
	}
	if c := e.ui.confirms[len(e.ui.confirms)-1]; c.Page != doc || c.Origin != doc.Origin {
		t.Errorf("the card shows page %+v origin %q, want the located document", c.Page, c.Origin)
	}
	before := len(e.ui.confirms)
	if r := call("gone"); r.Code != CodeActionUnavailable || len(e.ui.confirms) != before || len(seen) != 2 {
		t.Fatalf("a document that cannot be located: %+v; asked %d", r, len(e.ui.confirms)-before)
	}

	// Assess names the document (and a read that writes): no Locate, confirm_writes applies.
	other := &Document{TabID: 8, ID: "D2", URL: "https://b.example/", Origin: "https://b.example"}
	nav := echo("open")
	nav.Locate = tool.Locate
	nav.Assess = func(ctx context.Context, c *Call) (Assessment, error) {
		return Assessment{Write: true, Document: other}, nil
	}
	nav.Run = tool.Run
	must(t, e.reg.Register(nav))
	located.Store(0)
	if r := e.reg.Call(context.Background(), &Call{Tool: "open", Arguments: json.RawMessage(`{"text":"x"}`)}); !r.Success || located.Load() != 0 || seen[2] != other {
		t.Fatalf("assessed write: %+v located %d document %v", r, located.Load(), seen[2])
	}
	if c := e.ui.confirms[len(e.ui.confirms)-1]; c.Tool != "open" || c.Page != other {
		t.Errorf("a read that writes is not confirmed under confirm_writes: %+v", c)
	}
	e.set(SettingConfirmWrites, "false")
	before = len(e.ui.confirms)
	if r := e.reg.Call(context.Background(), &Call{Tool: "open", Arguments: json.RawMessage(`{"text":"x"}`)}); !r.Success || len(e.ui.confirms) != before || seen[3] != other {
		t.Fatalf("assessed document without a confirmation: %+v document %v", r, seen[3])
	}
}
