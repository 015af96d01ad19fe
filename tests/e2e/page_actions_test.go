package e2e

// End-to-end tests of page-declared actions: a fixture page declares actions with
// window.ferry (both dialects) and WebMCP; the host registers them as tools of the
// tab; tools.call runs them through the pipeline, back into the page through the
// service worker and the content-script bridge.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/tests/browsertest"
)

type toolResult struct {
	Success bool            `json:"success"`
	Code    string          `json:"code"`
	Reason  string          `json:"reason"`
	Result  json.RawMessage `json:"result"`
	Expect  json.RawMessage `json:"expect"`
	Changed *struct {
		Observed bool `json:"observed"`
		Records  struct {
			Added   []string `json:"added"`
			Removed []string `json:"removed"`
			Updated []string `json:"updated"`
			Total   struct{ From, To int }
		} `json:"records"`
		Actions struct {
			Added   []string `json:"added"`
			Removed []string `json:"removed"`
		} `json:"actions"`
	} `json:"changed"`
}

type toolsList struct {
	Tools []struct {
		Name       string          `json:"name"`
		Source     string          `json:"source"`
		Kind       string          `json:"kind"`
		Parameters json.RawMessage `json:"parameters"`
		TabID      int             `json:"tab_id"`
	} `json:"tools"`
	Unavailable []struct{ Name, Reason string } `json:"unavailable"`
}

func TestPageActions(t *testing.T) {
	s := start(t, 120*time.Second)
	srv := fixtureServer(t)
	url := srv.URL + "/pageactions/todo.html"
	page, tab := s.openTab(url)
	list := func() toolsList {
		var l toolsList
		s.must("tools.list", map[string]any{"tab_id": tab}, &l)
		return l
	}
	pageTool := func(l toolsList, name string) bool {
		for _, tool := range l.Tools {
			if tool.Name == name && tool.Source == "page" {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(15 * time.Second)
	var l toolsList
	for {
		l = list()
		if pageTool(l, "add_task") && pageTool(l, "lookup_price") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page's actions never appeared in tools.list: %+v", l)
		}
		time.Sleep(100 * time.Millisecond)
	}
	call := func(name string, args any) toolResult {
		t.Helper()
		var r toolResult
		s.must("tools.call", map[string]any{"name": name, "arguments": args, "tab_id": tab}, &r)
		return r
	}
	inPage := func(expr string) string {
		t.Helper()
		v, err := browsertest.Eval[string](page, expr)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	rows := func() string {
		return inPage(`[...document.querySelectorAll('#list li')].map(li => li.dataset.taskId).join(',')`)
	}

	t.Run("declared and listed", func(t *testing.T) {
		for _, name := range []string{"add_task", "addNote", "toggle", "never_renders", "lookup_price"} {
			if !pageTool(l, name) {
				t.Errorf("tools.list lacks the page action %s", name)
			}
		}
		for _, tool := range l.Tools {
			switch tool.Name {
			case "add_task":
				p := string(tool.Parameters)
				for _, want := range []string{`"minLength":1`, `"maxLength":80`, `"pattern":"\\S"`, `"required":["text"]`} {
					if !strings.Contains(p, want) {
						t.Errorf("add_task parameters %s lack %s", p, want)
					}
				}
			case "toggle":
				if !strings.Contains(string(tool.Parameters), `"record"`) {
					t.Errorf("toggle has no record parameter: %s", tool.Parameters)
				}
			case "lookup_price":
				if tool.Kind != "read" {
					t.Errorf("a readOnlyHint WebMCP tool is %s, want read", tool.Kind)
				}
			case "list_tabs":
				if tool.Source != "builtin" {
					t.Errorf("list_tabs is %s: a page shadowed a builtin", tool.Source)
				}
			}
		}
		for _, forged := range []string{"forged_by_message", "forged_by_port"} {
			if pageTool(l, forged) {
				t.Errorf("a forged declaration %s was registered", forged)
			}
		}
		for _, u := range l.Unavailable {
			if u.Name == "press_disabled" && !strings.Contains(u.Reason, "disabled") {
				t.Errorf("press_disabled unavailable for %q", u.Reason)
			}
		}
	})

	t.Run("shadowing a builtin is refused and the page told", func(t *testing.T) {
		if err := browsertest.WaitFor(s.ctx, page, `window.__refused.some(r => r.id === 'list_tabs' && /never shadow/.test(r.reason))`); err != nil {
			t.Fatal(err)
		}
		if v := inPage(`String(Boolean(window.__stolenPort))`); v != "false" {
			t.Errorf("a page script saw the bridge's port")
		}
	})

	t.Run("call succeeds with expect and changed", func(t *testing.T) {
		r := call("add_task", map[string]any{"text": "准备明天的议程"})
		if !r.Success {
			t.Fatalf("add_task: %+v", r)
		}
		if !strings.Contains(string(r.Expect), `"met":true`) || !strings.Contains(string(r.Expect), "shown in the list") {
			t.Errorf("expect = %s", r.Expect)
		}
		if r.Changed == nil || !r.Changed.Observed || strings.Join(r.Changed.Records.Added, ",") != "t4" ||
			r.Changed.Records.Total.From != 3 || r.Changed.Records.Total.To != 4 {
			t.Errorf("changed = %+v", r.Changed)
		}
		if r.Changed != nil && !contains(r.Changed.Actions.Added, "toggle@t4") {
			t.Errorf("changed.actions.added = %v, want toggle@t4", r.Changed.Actions.Added)
		}
		if got := rows(); got != "t4,t1,t2,t3" {
			t.Errorf("rows = %s", got)
		}
	})

	t.Run("shorthand dialect", func(t *testing.T) {
		r := call("addNote", map[string]any{"title": "hello"})
		if !r.Success || !strings.Contains(string(r.Result), `"added":"hello"`) {
			t.Fatalf("addNote: %+v %s", r, r.Result)
		}
		if r := call("addNote", map[string]any{}); r.Code != "INVALID_PARAMS" {
			t.Errorf("addNote without title: %+v", r)
		}
	})

	t.Run("invalid params run nothing", func(t *testing.T) {
		before := rows()
		for _, text := range []string{"", "   "} {
			if r := call("add_task", map[string]any{"text": text}); r.Code != "INVALID_PARAMS" {
				t.Errorf("add_task(%q): %+v", text, r)
			}
		}
		if after := rows(); after != before {
			t.Errorf("rows changed %s → %s", before, after)
		}
	})

	t.Run("toggle changes only that record", func(t *testing.T) {
		r := call("toggle", map[string]any{"record": "t1"})
		if !r.Success || r.Changed == nil || strings.Join(r.Changed.Records.Updated, ",") != "t1" ||
			len(r.Changed.Records.Added)+len(r.Changed.Records.Removed) != 0 {
			t.Fatalf("toggle t1: %+v %+v", r, r.Changed)
		}
		if r := call("toggle", map[string]any{"record": "t99"}); r.Code != "ACTION_UNAVAILABLE" {
			t.Errorf("toggle t99: %+v", r)
		}
	})

	t.Run("expectation failed says it ran", func(t *testing.T) {
		r := call("never_renders", map[string]any{})
		if r.Code != "EXPECTATION_FAILED" || !strings.Contains(r.Reason, "ran") {
			t.Errorf("never_renders: %+v", r)
		}
	})

	t.Run("handler error", func(t *testing.T) {
		if r := call("boom", map[string]any{}); r.Code != "HANDLER_ERROR" || !strings.Contains(r.Reason, "kaboom") {
			t.Errorf("boom: %+v", r)
		}
	})

	t.Run("target states", func(t *testing.T) {
		for name, want := range map[string]string{"press_disabled": "disabled", "press_hidden": "hidden", "press_far": "outside the viewport"} {
			r := call(name, map[string]any{})
			if r.Code != "ACTION_UNAVAILABLE" || !strings.Contains(r.Reason, want) {
				t.Errorf("%s: %+v, want ACTION_UNAVAILABLE with %q", name, r, want)
			}
		}
		inPage(`(window.__cover(true), 'ok')`)
		r := call("press_covered", map[string]any{})
		inPage(`(window.__cover(false), 'ok')`)
		if r.Code != "ACTION_UNAVAILABLE" || !strings.Contains(r.Reason, "covered") {
			t.Errorf("press_covered: %+v", r)
		}
	})

	t.Run("available() false", func(t *testing.T) {
		inPage(`(async () => { for (let i = 0; i < 4; i++) document.getElementById('new-task').value = 'x' + i, document.getElementById('add').click(); await new Promise(r => setTimeout(r, 100)); return 'ok'; })()`)
		var r toolResult
		deadline := time.Now().Add(5 * time.Second)
		for {
			r = call("add_task", map[string]any{"text": "one more"})
			if r.Code == "ACTION_UNAVAILABLE" || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if r.Code != "ACTION_UNAVAILABLE" || !strings.Contains(r.Reason, "full") {
			t.Fatalf("add_task at 8: %+v (rows %s)", r, rows())
		}
		l := list()
		if pageTool(l, "add_task") {
			t.Errorf("add_task still offered at 8 tasks")
		}
		found := false
		for _, u := range l.Unavailable {
			found = found || (u.Name == "add_task" && strings.Contains(u.Reason, "full"))
		}
		if !found {
			t.Errorf("add_task's reason missing from unavailable: %+v", l.Unavailable)
		}
	})

	t.Run("webmcp tool with untrusted result, then aborted", func(t *testing.T) {
		r := call("lookup_price", map[string]any{"sku": "A1"})
		if !r.Success || !strings.Contains(string(r.Result), `"untrusted":true`) || !strings.Contains(string(r.Result), `"price":42`) {
			t.Fatalf("lookup_price: %+v %s", r, r.Result)
		}
		inPage(`(window.__abortWebMCP(), 'ok')`)
		if err := waitUntil(10*time.Second, func() bool { return !pageTool(list(), "lookup_price") }); err != nil {
			t.Errorf("lookup_price still listed after its AbortSignal: %v", err)
		}
	})

	t.Run("ferry.execute from the page", func(t *testing.T) {
		got := inPage(`ferry.ready().then(() => ferry.execute('addNote', {title: 'from page'})).then(r => JSON.stringify(r))`)
		if !strings.Contains(got, `"success":true`) || !strings.Contains(got, `"depth":0`) {
			t.Errorf("ferry.execute: %s", got)
		}
		got = inPage(`ferry.execute('list_tabs', {}).then(r => JSON.stringify(r))`)
		if !strings.Contains(got, `"NOT_FOUND"`) {
			t.Errorf("ferry.execute of a builtin: %s", got)
		}
		got = inPage(`ferry.tools().then(r => r.tools.map(t => t.name).sort().join(','))`)
		if strings.Contains(got, "list_tabs") || !strings.Contains(got, "addNote") {
			t.Errorf("ferry.tools: %s", got)
		}
	})

	t.Run("tab close removes the actions", func(t *testing.T) {
		if _, err := browsertest.Eval[bool](s.sw, fmt.Sprintf(`chrome.tabs.remove(%d).then(() => true)`, tab)); err != nil {
			t.Fatal(err)
		}
		if err := waitUntil(10*time.Second, func() bool { return !pageTool(list(), "add_task") }); err != nil {
			t.Errorf("add_task still listed after its tab closed")
		}
		if r := call("addNote", map[string]any{"title": "x"}); r.Code != "NOT_FOUND" {
			t.Errorf("addNote after close: %+v", r)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func waitUntil(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// The page answers the confirmation of its own actions (ferry.on('confirm') with
// confirmTool / rejectTool), without a side panel; a builtin's confirmation never
// reaches it. Regions: actions of another region than the active one are left out
// of the model's view, but still run when called by name.
func TestPageConfirmAndRegions(t *testing.T) {
	s := start(t, 120*time.Second)
	srv := fixtureServer(t)
	url := srv.URL + "/pageactions/confirm.html"
	page, tab := s.openTab(url)
	list := func(model bool) map[string]bool {
		var l toolsList
		s.must("tools.list", map[string]any{"tab_id": tab, "model": model}, &l)
		out := map[string]bool{}
		for _, tool := range l.Tools {
			if tool.Source == "page" {
				out[tool.Name] = true
			}
		}
		for _, u := range l.Unavailable {
			out[u.Name] = true
		}
		return out
	}
	if err := waitUntil(15*time.Second, func() bool { l := list(false); return l["delete_all"] && l["send_mail"] }); err != nil {
		t.Fatalf("the page's actions never appeared: %v", list(false))
	}
	call := func(name string) toolResult {
		t.Helper()
		var r toolResult
		s.must("tools.call", map[string]any{"name": name, "arguments": map[string]any{}, "tab_id": tab}, &r)
		return r
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := browsertest.Eval[string](page, expr)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	t.Run("page approves", func(t *testing.T) {
		eval(`window.__policy = 'approve', ''`)
		r := call("delete_all")
		if !r.Success {
			t.Fatalf("delete_all = %+v", r)
		}
		if got := eval(`String(window.__deleted)`); got != "1" {
			t.Errorf("deleted = %s", got)
		}
		if got := eval(`JSON.stringify(window.__confirms.map(c => [c.action, typeof c.callId, typeof c.message]))`); got != `[["delete_all","string","string"]]` {
			t.Errorf("confirm events = %s", got)
		}
		// An id already decided is ignored.
		if got := eval(`String(ferry.confirmTool(window.__confirms[0].callId))`); got != "false" {
			t.Errorf("confirmTool on a decided call = %s", got)
		}
	})

	t.Run("page rejects", func(t *testing.T) {
		eval(`window.__policy = 'reject', ''`)
		r := call("delete_all")
		if r.Success || r.Code != "USER_REJECTED" {
			t.Fatalf("delete_all = %+v", r)
		}
		if got := eval(`String(window.__deleted)`); got != "1" {
			t.Errorf("deleted = %s after a rejection", got)
		}
		if err := waitUntil(3*time.Second, func() bool {
			return eval(`String(window.__events.some(e => e.ev === 'denied' && e.action === 'delete_all'))`) == "true"
		}); err != nil {
			t.Errorf("no denied event: %s", eval(`JSON.stringify(window.__events)`))
		}
	})

	t.Run("builtin is never confirmable by the page", func(t *testing.T) {
		eval(`window.__policy = 'approve', ''`)
		var out any
		s.must("settings.set", map[string]any{"key": "tools.confirm", "value": "list_tabs"}, &out)
		defer s.must("settings.set", map[string]any{"key": "tools.confirm", "value": nil}, &out)
		before := eval(`String(window.__confirms.length)`)
		r := call("list_tabs")
		if r.Success || r.Code != "USER_REJECTED" {
			t.Fatalf("list_tabs without a panel = %+v", r)
		}
		if got := eval(`String(window.__confirms.length)`); got != before {
			t.Errorf("the page was asked to confirm a builtin: %s", eval(`JSON.stringify(window.__confirms)`))
		}
		if got := eval(`String(ferry.confirmTool('call_forged') || ferry.rejectTool('call_forged'))`); got != "false" {
			t.Errorf("confirmTool on a foreign id = %s", got)
		}
	})

	t.Run("regions", func(t *testing.T) {
		eval(`document.getElementById('mail-to').focus(), ''`)
		if err := waitUntil(5*time.Second, func() bool { m := list(true); return m["send_mail"] && !m["add_event"] }); err != nil {
			t.Fatalf("model view with focus in mail: %v", list(true))
		}
		if m := list(true); !m["help"] || !m["delete_all"] {
			t.Errorf("actions without a region left out: %v", m)
		}
		if all := list(false); !all["add_event"] {
			t.Errorf("the full list lost add_event: %v", all)
		}
		eval(`ferry.setRegion('calendar'), ''`)
		if err := waitUntil(5*time.Second, func() bool { m := list(true); return !m["send_mail"] && m["add_event"] }); err != nil {
			t.Fatalf("model view in calendar: %v", list(true))
		}
		if r := call("send_mail"); !r.Success {
			t.Errorf("a direct call of another region's action = %+v", r)
		}
	})
}

// An action that declares neither run nor handler but a target: Ferry drives the
// target as a person would — fills the form's fields from the arguments (by name)
// and submits it, or clicks the target button — and the expect check passes.
func TestPageDriveTarget(t *testing.T) {
	s := start(t, 120*time.Second)
	srv := fixtureServer(t)
	url := srv.URL + "/pageactions/drive.html"
	page, tab := s.openTab(url)
	listed := func() map[string]bool {
		var l toolsList
		s.must("tools.list", map[string]any{"tab_id": tab}, &l)
		out := map[string]bool{}
		for _, tool := range l.Tools {
			if tool.Source == "page" {
				out[tool.Name] = true
			}
		}
		return out
	}
	if err := waitUntil(15*time.Second, func() bool { l := listed(); return l["add_post"] && l["clear_posts"] }); err != nil {
		t.Fatalf("the page's actions never appeared: %v", listed())
	}
	call := func(name string, args any) toolResult {
		t.Helper()
		var r toolResult
		s.must("tools.call", map[string]any{"name": name, "arguments": args, "tab_id": tab}, &r)
		return r
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := browsertest.Eval[string](page, expr)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	posts := func() string {
		return eval(`[...document.querySelectorAll('#posts li')].map(li => li.textContent + '/' + li.dataset.tag).join(',')`)
	}

	t.Run("fills the form by name and submits", func(t *testing.T) {
		r := call("add_post", map[string]any{"title": "Hello from Ferry", "tag": "news"})
		if !r.Success {
			t.Fatalf("add_post: %+v", r)
		}
		if !strings.Contains(string(r.Expect), `"met":true`) || !strings.Contains(string(r.Expect), "shown in the list") {
			t.Errorf("expect = %s", r.Expect)
		}
		if got := posts(); got != "Hello from Ferry/news" {
			t.Errorf("posts = %q", got)
		}
		if got := eval(`String(window.__submits)`); got != "1" {
			t.Errorf("submits = %s, want 1", got)
		}
		if r.Changed == nil || !r.Changed.Observed || strings.Join(r.Changed.Records.Added, ",") != "p1" ||
			r.Changed.Records.Total.From != 0 || r.Changed.Records.Total.To != 1 {
			t.Errorf("changed = %+v", r.Changed)
		}
	})

	t.Run("a second post with the default field", func(t *testing.T) {
		r := call("add_post", map[string]any{"title": "Second"})
		if !r.Success {
			t.Fatalf("add_post: %+v", r)
		}
		if got := posts(); got != "Hello from Ferry/news,Second/misc" {
			t.Errorf("posts = %q", got)
		}
	})

	t.Run("invalid params drive nothing", func(t *testing.T) {
		if r := call("add_post", map[string]any{"title": ""}); r.Code != "INVALID_PARAMS" {
			t.Errorf("add_post(''): %+v", r)
		}
		if got := eval(`String(window.__submits)`); got != "2" {
			t.Errorf("submits = %s after an invalid call, want 2", got)
		}
	})

	t.Run("clicks the target button", func(t *testing.T) {
		r := call("clear_posts", map[string]any{})
		if !r.Success || !strings.Contains(string(r.Expect), `"met":true`) {
			t.Fatalf("clear_posts: %+v %s", r, r.Expect)
		}
		if got := posts(); got != "" {
			t.Errorf("posts = %q after clear", got)
		}
		if r.Changed == nil || len(r.Changed.Records.Removed) != 2 {
			t.Errorf("changed = %+v", r.Changed)
		}
	})
}
