package e2e

// execute_script's confirmation, the whole way: ferryHost.request('tools.call')
// in the worker → the host's pipeline, whose assessment asks a person before a
// page script on an origin nobody allowed → ui.confirm → a card in the side
// panel (opened as a page of the extension) → approve or reject → the script
// runs in the page, or not. An origin in browser.scripts_auto_approve_origins
// is not asked about, and a sandbox script never is.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/tests/browsertest"
)

func TestExecuteScriptConfirmation(t *testing.T) {
	s := start(t, 90*time.Second)
	srv := fixtureServer(t)
	page := srv.URL + "/script.html"

	var opened scToolResult
	s.must("tools.call", map[string]any{"name": "open_tab", "arguments": map[string]any{"url": page}}, &opened)
	var tab struct {
		TabID int `json:"tab_id"`
	}
	if !opened.Success || json.Unmarshal(opened.Result, &tab) != nil || tab.TabID == 0 {
		t.Fatalf("open_tab %s: %+v %s", page, opened, opened.Result)
	}
	panel := openPanel(t, s)

	park := func(args map[string]any) parked { return s.park("execute_script", args) }
	wait := func(p parked) scToolResult { return p.wait(nil) }
	// unasked waits for a call that must not ask: it settles with no card shown.
	unasked := func(p parked) scToolResult {
		t.Helper()
		return p.wait(func() {
			if card, _ := browsertest.Eval[bool](panel, `document.querySelector('.prompt.confirm') !== null`); card {
				text, _ := browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm').innerText`)
				t.Fatalf("a confirmation card appeared for a script that must not ask:\n%s", text)
			}
		})
	}
	title := func() string {
		t.Helper()
		var r scToolResult
		s.must("tools.call", map[string]any{"name": "browser_info", "arguments": map[string]any{"tab_id": tab.TabID}}, &r)
		var info struct {
			Title string `json:"title"`
		}
		if !r.Success || json.Unmarshal(r.Result, &info) != nil {
			t.Fatalf("browser_info: %+v %s", r, r.Result)
		}
		return info.Title
	}
	pageScript := func(code string) map[string]any {
		return map[string]any{"code": code, "target": "page", "tab_id": tab.TabID}
	}
	origin := srv.URL // http://127.0.0.1:port

	// Approved on the card: the script runs, and its value comes back.
	{
		call := park(pageScript(`document.title = 'approved-ran'; window.ran.push('approved'); return 'done'`))
		s.waitIn(panel, "confirmation card", `document.querySelector('.prompt.confirm') !== null`)
		card, _ := browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm').innerText`)
		for _, want := range []string{"execute_script", origin, "browser.scripts_auto_approve_origins", "approved-ran"} {
			if !strings.Contains(card, want) {
				t.Errorf("the confirmation card lacks %q:\n%s", want, card)
			}
		}
		if dangerous, _ := browsertest.Eval[bool](panel, `document.querySelector('.prompt.confirm').classList.contains('dangerous')`); !dangerous {
			t.Errorf("the card of a page script is not marked dangerous")
		}
		if r, ok := call.settled(); ok {
			t.Fatalf("the script call settled before anyone answered: %+v", r)
		}
		s.click(panel, `.prompt.confirm button:not(.quiet)`)
		r := wait(call)
		if !r.Success || r.Code != "" {
			t.Fatalf("approved page script: %+v %s", r, r.Result)
		}
		var res struct {
			Value json.RawMessage `json:"value"`
			Type  string          `json:"type"`
		}
		if json.Unmarshal(r.Result, &res) != nil || string(res.Value) != `"done"` || res.Type != "string" {
			t.Errorf("approved page script's result: %s", r.Result)
		}
		if got := title(); got != "approved-ran" {
			t.Errorf("the page's title after the approved script: %q, want approved-ran", got)
		}
		s.waitIn(panel, "card gone", `document.querySelector('.prompt.confirm') === null`)
	}

	// Rejected on the card: USER_REJECTED, and the page is untouched.
	{
		call := park(pageScript(`document.title = 'rejected-ran'; window.ran.push('rejected'); return 'nope'`))
		s.waitIn(panel, "confirmation card", `document.querySelector('.prompt.confirm') !== null`)
		s.click(panel, `.prompt.confirm button.deny`)
		r := wait(call)
		if r.Success || r.Code != "USER_REJECTED" {
			t.Fatalf("rejected page script: %+v, want USER_REJECTED", r)
		}
		if got := title(); got != "approved-ran" {
			t.Errorf("the page's title after the rejected script: %q: the script ran", got)
		}
		s.waitIn(panel, "card gone", `document.querySelector('.prompt.confirm') === null`)
	}

	// A sandbox script never asks (the origin is still not allowed here).
	{
		r := unasked(park(map[string]any{"code": "6 * 7", "target": "sandbox"}))
		if !r.Success || !strings.Contains(string(r.Result), `"value":42`) {
			t.Errorf("sandbox script: %+v %s", r, r.Result)
		}
	}

	// The page's origin allowed in the setting: no card, the script runs.
	{
		var set json.RawMessage
		s.must("settings.set", map[string]any{"key": "browser.scripts_auto_approve_origins", "value": "https://example.com, " + origin}, &set)
		r := unasked(park(pageScript(`document.title = 'auto-ran'; window.ran.push('auto'); return window.ran`)))
		if !r.Success || !strings.Contains(string(r.Result), `["approved","auto"]`) {
			t.Fatalf("page script on an auto-approved origin: %+v %s", r, r.Result)
		}
		if got := title(); got != "auto-ran" {
			t.Errorf("the page's title after the auto-approved script: %q", got)
		}
		// Back to the default: the same page asks again.
		s.must("settings.set", map[string]any{"key": "browser.scripts_auto_approve_origins", "value": nil}, &set)
		call := park(pageScript(`document.title = 'asked-again'`))
		s.waitIn(panel, "confirmation card once the origin is no longer allowed", `document.querySelector('.prompt.confirm') !== null`)
		s.click(panel, `.prompt.confirm button.deny`)
		if r := wait(call); r.Code != "USER_REJECTED" {
			t.Errorf("after the setting was cleared: %+v, want USER_REJECTED", r)
		}
	}

	// Each call is in the audit log with its code, newest first.
	var audit struct {
		Entries []struct {
			Tool    string `json:"tool"`
			Code    string `json:"code"`
			Success bool   `json:"success"`
		} `json:"entries"`
	}
	s.must("audit.query", map[string]any{}, &audit)
	var rows []string
	for _, e := range audit.Entries {
		if e.Tool == "execute_script" {
			rows = append(rows, fmt.Sprintf("%v/%s", e.Success, e.Code))
		}
	}
	if got, want := strings.Join(rows, " "), "false/USER_REJECTED true/ true/ false/USER_REJECTED true/"; got != want {
		t.Errorf("audit rows of execute_script: %s, want %s (newest first)", got, want)
	}
}
