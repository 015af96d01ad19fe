package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
)

// presenceUI is a fakeUI that also says how many side panels are open.
type presenceUI struct {
	*fakeUI
	open  atomic.Int64
	known atomic.Bool
}

func (u *presenceUI) PanelsOpen() (int, bool) { return int(u.open.Load()), u.known.Load() }

// wrapped hides presenceUI behind a wrapper, as the agent's event UI does.
type wrapped struct{ UI }

func (w wrapped) Unwrap() UI { return w.UI }

func TestPresence(t *testing.T) {
	e := newEnv(t)
	e.t = t
	must(t, e.reg.Register(AskUser(e.reg)))
	confirmed := echo("confirmed")
	confirmed.Confirm = true
	must(t, e.reg.Register(confirmed))
	ui := &presenceUI{fakeUI: e.ui}
	e.reg.SetUI(wrapped{ui})
	ctx := context.Background()
	askAvailable := func() (bool, string) {
		avail, unavail := e.reg.List(ctx, 0)
		for _, l := range avail {
			if l.Name == "ask_user" {
				return true, ""
			}
		}
		for _, u := range unavail {
			if u.Name == "ask_user" {
				return false, u.Reason
			}
		}
		t.Fatal("ask_user neither available nor unavailable")
		return false, ""
	}
	confirm := func() Result {
		return e.reg.Call(ctx, &Call{Tool: "confirmed", Arguments: json.RawMessage(`{"text":"hi"}`)})
	}

	// Unknown (an extension that never says): asked as before.
	if ok, _ := askAvailable(); !ok {
		t.Fatal("ask_user unavailable before any presence")
	}
	if r := confirm(); !r.Success || len(e.ui.confirms) != 1 {
		t.Fatalf("confirm with unknown presence: %+v", r)
	}

	// Known and none open: ask_user says why, a confirmation is denied without asking.
	ui.known.Store(true)
	if ok, reason := askAvailable(); ok || !strings.Contains(reason, "no side panel is open: open Ferry's side panel") {
		t.Fatalf("ask_user with no panel: %v %q", ok, reason)
	}
	r := confirm()
	if r.Success || r.Code != CodeUserRejected || !strings.Contains(r.Reason, "no side panel is open") {
		t.Fatalf("confirm with no panel: %+v", r)
	}
	if len(e.ui.confirms) != 1 {
		t.Fatalf("the UI was asked with no panel open: %d confirmations", len(e.ui.confirms))
	}

	// One open: back to asking.
	ui.open.Store(1)
	if ok, _ := askAvailable(); !ok {
		t.Fatal("ask_user unavailable with a panel open")
	}
	if r := confirm(); !r.Success || len(e.ui.confirms) != 2 {
		t.Fatalf("confirm with a panel: %+v", r)
	}
}
