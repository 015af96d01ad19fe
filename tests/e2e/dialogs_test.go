package e2e

// JavaScript dialogs in the real Chromium: a page Ferry drives never blocks
// behind one (alert, confirm, prompt, and the question before leaving it): the
// tool call that met it reports its type and message and browser_dialog sets the
// answer; a dialog of a page the person uses stays theirs, and tool calls on that
// tab say so at once instead of hanging.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

const dialogPages = `alert|<title>alert</title><button id=b onclick="alert('Saved, thank you'); document.title = 'after alert'">Save</button>
confirm|<title>confirm</title><button id=b onclick="document.title = confirm('Delete the draft?') ? 'deleted' : 'kept'">Delete</button>
prompt|<title>prompt</title><button id=b onclick="const v = prompt('Your name?', 'guest'); document.title = v === null ? 'no name' : 'name ' + v">Sign</button>
onload|<title>onload</title><script>alert('Welcome! Cookies are used here.')</script><p>The page behind the alert.</p>
later|<title>later</title><p>A page the person uses.</p><script>setTimeout(() => { document.title = confirm('Stay signed in?') ? 'yes' : 'no'; }, 300)</script>
leave|<title>leave</title><textarea id=t>unsaved draft</textarea><script>addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = ''; })</script>`

func dialogServer(t *testing.T) *httptest.Server {
	t.Helper()
	pages := map[string]string{}
	for _, line := range strings.Split(dialogPages, "\n") {
		name, body, _ := strings.Cut(line, "|")
		pages["/"+name] = "<!doctype html><html><body>" + body + "</body></html>"
	}
	return loopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
}

type toolOutcome struct {
	Success bool           `json:"success"`
	Code    string         `json:"code"`
	Reason  string         `json:"reason"`
	Result  map[string]any `json:"result"`
}

func (s *session) tool(name string, args map[string]any) toolOutcome {
	s.t.Helper()
	var r toolOutcome
	s.must("tools.call", map[string]any{"name": name, "arguments": args}, &r)
	return r
}

func (s *session) toolOK(name string, args map[string]any) map[string]any {
	s.t.Helper()
	r := s.tool(name, args)
	if !r.Success {
		s.t.Fatalf("%s(%v): %s %s", name, args, r.Code, r.Reason)
	}
	return r.Result
}

func dialogsOf(res map[string]any) string {
	b, _ := json.Marshal(res["dialogs"])
	return string(b)
}

func TestDialogs(t *testing.T) {
	s := start(t, 2*time.Minute)
	srv := dialogServer(t)
	title := func(tab any) string {
		return s.toolOK("browser_info", map[string]any{"tab_id": tab})["title"].(string)
	}
	open := func(path string) any {
		return s.toolOK("open_tab", map[string]any{"url": srv.URL + path})["tab_id"]
	}

	t.Run("alert", func(t *testing.T) {
		tab := open("/alert")
		r := s.toolOK("browser_click", map[string]any{"tab_id": tab, "selector": "#b"})
		if d := dialogsOf(r); !strings.Contains(d, `"type":"alert"`) || !strings.Contains(d, "Saved, thank you") || !strings.Contains(d, `"answer":"accept"`) {
			t.Errorf("the click's result does not report the alert: %v", r)
		}
		if got := title(tab); got != "after alert" {
			t.Errorf("the page's script did not go on past the alert: title %q", got)
		}
	})

	t.Run("confirm", func(t *testing.T) {
		tab := open("/confirm")
		r := s.toolOK("browser_click", map[string]any{"tab_id": tab, "selector": "#b"})
		if d := dialogsOf(r); !strings.Contains(d, "Delete the draft?") || !strings.Contains(d, `"answer":"dismiss"`) || !strings.Contains(d, `"by":"default"`) {
			t.Errorf("confirm without an answer set: %v", r)
		}
		if got := title(tab); got != "kept" {
			t.Errorf("a confirm nobody answered must be cancelled: title %q", got)
		}
		s.toolOK("browser_dialog", map[string]any{"tab_id": tab, "action": "accept"})
		r = s.toolOK("browser_click", map[string]any{"tab_id": tab, "selector": "#b"})
		if d := dialogsOf(r); !strings.Contains(d, `"answer":"accept"`) || !strings.Contains(d, `"by":"browser_dialog"`) {
			t.Errorf("confirm with accept set: %v", r)
		}
		if got := title(tab); got != "deleted" {
			t.Errorf("title %q after an accepted confirm", got)
		}
		info := s.toolOK("browser_info", map[string]any{"tab_id": tab})
		if info["dialog"] != nil || !strings.Contains(dialogsOf(info), "Delete the draft?") {
			t.Errorf("browser_info: %v", info)
		}
	})

	t.Run("prompt", func(t *testing.T) {
		tab := open("/prompt")
		s.toolOK("browser_click", map[string]any{"tab_id": tab, "selector": "#b"})
		if got := title(tab); got != "no name" {
			t.Errorf("prompt nobody answered: title %q", got)
		}
		s.toolOK("browser_dialog", map[string]any{"tab_id": tab, "action": "accept", "text": "Ada"})
		r := s.toolOK("browser_click", map[string]any{"tab_id": tab, "selector": "#b"})
		if got := title(tab); got != "name Ada" || !strings.Contains(dialogsOf(r), `"text":"Ada"`) {
			t.Errorf("prompt answered Ada: title %q, %v", got, r)
		}
	})

	t.Run("alert while loading", func(t *testing.T) {
		// Opened by a browser tool: driven from its first script, so the alert
		// in its <body> does not leave it blocked.
		r := s.toolOK("open_tab", map[string]any{"url": srv.URL + "/onload"})
		if r["loaded"] != true || !strings.Contains(dialogsOf(r), "Cookies are used here") {
			t.Errorf("open_tab: %v", r)
		}
		c := s.toolOK("get_tab_content", map[string]any{"tab_id": r["tab_id"]})
		if !strings.Contains(c["content"].(string), "The page behind the alert.") {
			t.Errorf("get_tab_content: %v", c)
		}
	})

	t.Run("the person's dialog", func(t *testing.T) {
		// A tab the person opened: its dialog is theirs. A tool call says so at
		// once (no 30 s wait), browser_info shows it, and once the person has
		// answered the page is readable again.
		pageCtx, tab := s.openTab(srv.URL + "/later")
		opened := make(chan *page.EventJavascriptDialogOpening, 1)
		if err := chromedp.Listen(pageCtx, func(ev any) {
			if e, ok := ev.(*page.EventJavascriptDialogOpening); ok {
				select {
				case opened <- e:
				default:
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-opened:
		case <-time.After(10 * time.Second):
			t.Fatal("the page's confirm never opened")
		}
		t0 := time.Now()
		r := s.tool("get_tab_content", map[string]any{"tab_id": tab})
		if r.Success || r.Code != "ACTION_UNAVAILABLE" || !strings.Contains(r.Reason, "confirm") || !strings.Contains(r.Reason, "Stay signed in?") {
			t.Errorf("get_tab_content on a page behind the person's dialog: %+v", r)
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Errorf("it took %s to say so", d)
		}
		info := s.toolOK("browser_info", map[string]any{"tab_id": tab})
		if d, _ := info["dialog"].(map[string]any); d["type"] != "confirm" || d["message"] != "Stay signed in?" {
			t.Errorf("browser_info while the dialog is open: %v", info)
		}
		if r := s.tool("browser_dialog", map[string]any{"tab_id": tab, "action": "accept"}); r.Success || !strings.Contains(r.Reason, "person") {
			t.Errorf("browser_dialog on the person's open dialog: %+v", r)
		}
		// The person answers.
		if _, err := chromedp.Call(pageCtx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			info = s.toolOK("browser_info", map[string]any{"tab_id": tab})
			if info["dialog"] == nil && info["title"] == "yes" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the person's answer: %v", info)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if d := dialogsOf(info); !strings.Contains(d, `"by":"person"`) {
			t.Errorf("the person's answer is not among the dialogs: %s", d)
		}
	})

	t.Run("beforeunload", func(t *testing.T) {
		// Navigating a tab that is open already is off until a person allows it.
		if out, err := ferry(t, s.home, "config", "set", "browser.allow_navigate", "true"); err != nil {
			t.Fatal(out)
		}
		time.Sleep(1100 * time.Millisecond) // the pipeline's settings refresh
		pageCtx, tab := s.openTab(srv.URL + "/leave")
		// The browser asks before leaving only a page the person has used: a real click.
		if err := chromedp.Do(pageCtx, chromedp.Click("#t")); err != nil {
			t.Fatal(err)
		}
		r := s.tool("open_tab", map[string]any{"tab_id": tab, "url": srv.URL + "/alert"})
		if r.Success || r.Code != "ACTION_UNAVAILABLE" || !strings.Contains(r.Reason, "beforeunload") || !strings.Contains(r.Reason, "browser_dialog") {
			t.Fatalf("navigating away from unsaved changes: %+v", r)
		}
		if got := title(tab); got != "leave" {
			t.Errorf("the page was left: title %q", got)
		}
		if r := s.tool("close_tab", map[string]any{"tab_id": tab}); r.Success || !strings.Contains(r.Reason, "beforeunload") {
			t.Errorf("closing it: %+v", r)
		}
		s.toolOK("browser_dialog", map[string]any{"tab_id": tab, "action": "accept"})
		o := s.toolOK("open_tab", map[string]any{"tab_id": tab, "url": srv.URL + "/alert"})
		if o["title"] != "alert" || o["loaded"] != true {
			t.Errorf("leaving after browser_dialog accept: %v", o)
		}
	})
}
