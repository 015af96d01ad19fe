package e2e

// The person stays in control, tried as an attacker would, in Chromium with
// distinct origins on loopback (http://127.0.0.1:P and http://localhost:P are
// two origins served by one server): an execute_script approval racing a
// navigation; Enter in the composer while a card appears; ferry.ask's first
// prompt not granted for good by a keypress; open_tab with a tab_id while
// navigation is off; file:// and loopback destinations of browser tools. Each
// is judged by its effect: the server got no request, the tab did not move, the
// setting holds no grant.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/tests/browsertest"
)

// trustServer serves /page?n=NAME (a page titled NAME) and /hit (a beacon) on
// 127.0.0.1, and records every request with the host it was addressed to.
type trustServer struct {
	*httptest.Server
	port string
	mu   sync.Mutex
	seen []string // "host/path?query"
}

func newTrustServer(t *testing.T) *trustServer {
	t.Helper()
	ts := &trustServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		ts.record(r)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// No back/forward cache: a navigation leaves no old document to run in.
		w.Header().Set("Cache-Control", "no-store")
		n := r.URL.Query().Get("n")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><p id=name>%s</p><input id=q><script>window.ran = []</script>", n, n)
	})
	mux.HandleFunc("/hit", func(w http.ResponseWriter, r *http.Request) {
		ts.record(r)
		w.WriteHeader(http.StatusNoContent)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = &httptest.Server{Listener: l, Config: &http.Server{Handler: mux}}
	ts.Start()
	t.Cleanup(ts.Close)
	_, ts.port, _ = net.SplitHostPort(l.Addr().String())
	return ts
}

func (ts *trustServer) record(r *http.Request) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.seen = append(ts.seen, r.Host+r.URL.RequestURI())
}

// at is the URL of path on host (127.0.0.1 or localhost).
func (ts *trustServer) at(host, path string) string { return "http://" + host + ":" + ts.port + path }

// got says whether the server was asked for path (any host).
func (ts *trustServer) got(path string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, s := range ts.seen {
		if strings.HasSuffix(s, path) {
			return true
		}
	}
	return false
}

// TestTrustBoundary runs the findings that need the host, the panel and pages in
// one browser, in an order that leaves each the settings it expects.
func TestTrustBoundary(t *testing.T) {
	s := start(t, 240*time.Second)
	srv := newTrustServer(t)
	fake := fakeProvider(t, s, "Noted.")
	var panel context.Context
	run := func(name string, f func(t *testing.T)) {
		ok := t.Run(name, func(t *testing.T) {
			s.t = t
			f(t)
			if panel != nil {
				s.waitUpTo(panel, 10*time.Second, "no card left", `document.querySelector('.prompt') === null`)
			}
		})
		s.t = t
		if !ok && panel == nil {
			t.FailNow()
		}
	}
	file := filepath.Join(browsertest.TempDir(t, "ferry-e2e-file-"), "secret.html")
	if err := os.WriteFile(file, []byte("<title>secret</title>"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileURL := "file://" + file
	run("file:// and loopback destinations with nobody to ask", func(t *testing.T) { privateDestinationsUnasked(t, s, srv, fileURL) })
	// The panel belongs to the whole test (a subtest's would close with it).
	panel = openPanel(t, s)
	run("file:// and loopback destinations asked about", func(t *testing.T) { privateDestinationsAsked(t, s, srv, panel, fileURL) })
	run("open_tab with a tab_id while navigation is off", func(t *testing.T) { openTabWhileNavigationIsOff(t, s, srv) })
	run("an execute_script approval racing a navigation", func(t *testing.T) { scriptApprovalRacesNavigation(t, s, srv, panel) })
	run("always allowing a site's scripts is a control of its own", func(t *testing.T) { scriptsAlwaysAllowed(t, s, srv, panel) })
	run("Enter in the composer while a card appears", func(t *testing.T) { enterInComposer(t, s, srv, fake, panel) })
	run("ferry.ask's first prompt is no grant", func(t *testing.T) { pageAskFirstPromptNotAGrant(t, s, srv, panel) })
}

func scriptApprovalRacesNavigation(t *testing.T, s *session, srv *trustServer, panel context.Context) {
	first := srv.at("127.0.0.1", "/page?n=approved")
	page, tab := s.openTab(first)

	call := s.park("execute_script", map[string]any{"target": "page", "tab_id": tab,
		"code": `fetch('/hit?by=script'); window.ran.push(location.origin); document.title = 'script ran'; return location.origin`})
	s.waitIn(panel, "confirmation card", `document.querySelector('.prompt.confirm') !== null`)
	card, _ := browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm').innerText`)
	if !strings.Contains(card, srv.at("127.0.0.1", "")) || !strings.Contains(card, "Asked through Ferry's extension") {
		t.Errorf("the card does not name the page it is asked for and who asks:\n%s", card)
	}
	// The page moves to another origin while the person reads the card.
	other := srv.at("localhost", "/page?n=other")
	if err := chromedp.Do(page, chromedp.Navigate(other)); err != nil {
		t.Fatal(err)
	}
	s.waitIn(page, "the other origin loaded", `document.readyState === 'complete' && document.title === 'other'`)
	s.click(panel, `.prompt.confirm button:not(.quiet)`)
	r := call.wait(nil)
	if r.Success || r.Code != "ACTION_UNAVAILABLE" || !strings.Contains(r.Reason, "changed") || !strings.Contains(r.Reason, "localhost") {
		t.Fatalf("approved for %s, run after the tab moved to %s: %+v, want ACTION_UNAVAILABLE saying the page changed", first, other, r)
	}
	// By effect: the script ran nowhere.
	if srv.got("/hit?by=script") {
		t.Fatalf("the script ran: the server got its request")
	}
	if got, _ := browsertest.Eval[string](page, `document.title + ' ' + window.ran.length`); got != "other 0" {
		t.Fatalf("the other origin's page after the refused script: %q", got)
	}

	// The same script approved for the page the tab shows now runs (the server
	// would have seen it above).
	again := s.park("execute_script", map[string]any{"target": "page", "tab_id": tab, "code": `fetch('/hit?by=again'); return location.origin`})
	s.waitIn(panel, "second card", `document.querySelector('.prompt.confirm') !== null`)
	s.click(panel, `.prompt.confirm button:not(.quiet)`)
	if r := again.wait(nil); !r.Success || !strings.Contains(string(r.Result), srv.at("localhost", "")) {
		t.Fatalf("a script approved for the page shown: %+v %s", r, r.Result)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !srv.got("/hit?by=again") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !srv.got("/hit?by=again") {
		t.Fatalf("the approved script's request never reached the server: the effect check above could not fail")
	}
}

// A script's card offers "always allow scripts on this site" as a button of its own
// (Enter and the card's Allow answer this script only). Taking it stores the page's
// origin in browser.scripts_auto_approve_origins, and the next script there runs
// without a card.
func scriptsAlwaysAllowed(t *testing.T, s *session, srv *trustServer, panel context.Context) {
	origin := srv.at("127.0.0.1", "")
	_, tab := s.openTab(srv.at("127.0.0.1", "/page?n=always"))
	var set map[string]any
	defer s.must("settings.set", map[string]any{"key": "browser.scripts_auto_approve_origins", "value": nil}, &set)

	call := s.park("execute_script", map[string]any{"target": "page", "tab_id": tab, "code": `fetch('/hit?by=always'); return 1`})
	s.waitIn(panel, "confirmation card", `document.querySelector('.prompt.confirm .lasting-allow') !== null`)
	label, _ := browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm .lasting-allow').textContent`)
	if !strings.Contains(label, origin) {
		t.Errorf("the lasting control says %q, want it to name %s", label, origin)
	}
	if s.config("browser.scripts_auto_approve_origins") != "" {
		t.Fatal("the card stored a grant before anyone answered")
	}
	s.click(panel, ".prompt.confirm .lasting-allow")
	if r := call.wait(nil); !r.Success {
		t.Fatalf("approved for good: %+v", r)
	}
	if got := s.config("browser.scripts_auto_approve_origins"); got != origin {
		t.Fatalf("browser.scripts_auto_approve_origins = %q, want %s", got, origin)
	}
	time.Sleep(1100 * time.Millisecond) // the pipeline's settings refresh
	next := s.park("execute_script", map[string]any{"target": "page", "tab_id": tab, "code": `fetch('/hit?by=unasked'); return 2`})
	if r := next.wait(nil); !r.Success {
		t.Fatalf("the next script on an allowed site: %+v", r)
	}
	if card, _ := browsertest.Eval[bool](panel, `document.querySelector('.prompt.confirm') !== null`); card {
		t.Errorf("a card for a site whose scripts are always allowed")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !srv.got("/hit?by=unasked") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !srv.got("/hit?by=unasked") {
		t.Fatal("the unasked script's request never reached the server")
	}
}

// The extension's own check, below the host: a bound call whose document is gone
// is refused, whether the old document was destroyed or kept in the back/forward
// cache (where Chrome would run a script aimed at it in the page that replaced it).
func TestBoundDocumentCheckedInTheBrowser(t *testing.T) {
	b := startBrowserMethods(t, 90*time.Second)
	a := b.open("/script.html")
	var doc struct {
		TabID      int    `json:"tab_id"`
		URL        string `json:"url"`
		DocumentID string `json:"document_id"`
	}
	b.must("browser.page.document", map[string]any{"tab_id": a.TabID}, &doc)
	if doc.DocumentID == "" || doc.TabID != a.TabID {
		t.Fatalf("browser.page.document: %+v", doc)
	}
	bound := map[string]any{"document_id": doc.DocumentID, "origin": b.srv.URL, "url": doc.URL}
	var ran scriptResult
	b.must("browser.script.execute", map[string]any{"target": "page", "tab_id": a.TabID, "document": bound, "code": "window.ran.push('same'); return window.ran.length"}, &ran)
	if string(ran.Value) != "1" {
		t.Fatalf("a script bound to the document shown: %s", ran.Value)
	}
	// The tab moves on to another origin (this fixture's pages may be kept in the
	// back/forward cache).
	other := strings.Replace(b.srv.URL, "127.0.0.1", "localhost", 1) + "/script.html"
	var nav opened
	b.must("browser.tabs.open", map[string]any{"url": other, "tab_id": a.TabID}, &nav)
	for _, m := range []struct {
		method string
		params map[string]any
	}{
		{"browser.script.execute", map[string]any{"target": "page", "code": "window.ran.push('other'); document.title = 'ran'"}},
		{"browser.page.type", map[string]any{"selector": "body", "text": "x"}},
		{"browser.page.capture", map[string]any{}},
		{"browser.page.navigate", map[string]any{"url": b.srv.URL + "/form.html"}},
		{"browser.tabs.close", map[string]any{}},
	} {
		m.params["tab_id"], m.params["document"] = a.TabID, bound
		e := b.wantErr(m.method, m.params, "document_changed")
		if !strings.Contains(e.Message, "localhost") {
			t.Errorf("%s: %s, want the page the tab shows now named", m.method, e.Message)
		}
	}
	var state scriptResult
	b.must("browser.script.execute", map[string]any{"target": "page", "tab_id": a.TabID, "code": "[location.href, document.title, window.ran.length]"}, &state)
	if want := `["` + other + `","Ferry script fixture",0]`; string(state.Value) != want {
		t.Fatalf("the tab after the refused calls: %s, want %s (nothing ran, nothing moved)", state.Value, want)
	}
}

func fakeProvider(t *testing.T, s *session, answer string) *modeltest.Server {
	t.Helper()
	fake := modeltest.New(t, modeltest.OpenAI)
	fake.SetResponder(func(req modeltest.Request) modeltest.Turn { return modeltest.Text(answer) })
	if out, err := ferryIn(t, s.home, "", "provider", "add", "fake", "--kind", modeltest.OpenAI, "--base-url", fake.URL, "--model", "fake-model", "--default"); err != nil {
		t.Fatalf("ferry provider add: %v\n%s", err, out)
	}
	return fake
}

func enterInComposer(t *testing.T, s *session, srv *trustServer, fake *modeltest.Server, panel context.Context) {
	page, tab := s.openTab(srv.at("127.0.0.1", "/page?n=mine"))

	// The person is typing a message when the card appears.
	s.typeInto(panel, "#input", "hello")
	call := s.park("execute_script", map[string]any{"target": "page", "tab_id": tab, "code": `fetch('/hit?by=enter'); document.title = 'script ran'`})
	s.waitIn(panel, "confirmation card", `document.querySelector('.prompt.confirm') !== null`)
	if focus, _ := browsertest.Eval[string](panel, `document.activeElement.id`); focus != "input" {
		t.Fatalf("the card took the focus: it is on %q", focus)
	}
	s.waitIn(panel, "the note that leads to the card", `!document.querySelector('#prompt-waiting').hidden`)
	// The rest of the message, with a space, and Enter.
	if err := chromedp.Do(panel, chromedp.KeyEvent(" world"), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	s.waitUpTo(panel, 15*time.Second, "the message sent", `document.querySelector('.msg.user')?.textContent === 'hello world'`)
	s.waitIn(panel, "the answer", `[...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('Noted.'))`)
	if r, done := call.settled(); done {
		t.Fatalf("a keypress meant for the composer answered the card: %+v", r)
	}
	if srv.got("/hit?by=enter") {
		t.Fatal("the script ran")
	}
	if title, _ := browsertest.Eval[string](page, `document.title`); title != "mine" {
		t.Fatalf("the page's title is %q: the script ran", title)
	}
	var user string
	for _, req := range fake.Requests() {
		for _, m := range req.Messages {
			if m.Role == "user" {
				user += m.Text
			}
		}
	}
	if !strings.Contains(user, "hello world") {
		t.Errorf("the model did not get what was typed: %q", user)
	}

	// Moving to the card is what makes Enter answer it.
	s.click(panel, "#prompt-review")
	if on, _ := browsertest.Eval[bool](panel, `document.activeElement === document.querySelector('.prompt.confirm')`); !on {
		t.Fatal("Review did not lead to the card")
	}
	if err := chromedp.Do(panel, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	if r := call.wait(nil); !r.Success {
		t.Fatalf("Enter on the card the person moved to: %+v", r)
	}
	s.waitIn(page, "the script's effect", `document.title === 'script ran'`)
	s.waitIn(panel, "focus back in the composer", `document.activeElement.id === 'input' && document.querySelector('.prompt') === null`)
}

func pageAskFirstPromptNotAGrant(t *testing.T, s *session, srv *trustServer, panel context.Context) {
	origin := srv.at("127.0.0.1", "")
	page, _ := s.openTab(origin + "/page?n=asker")
	var set map[string]any
	defer s.must("settings.set", map[string]any{"key": "pages.ask_allowed_origins", "value": nil}, &set)

	seq := 0
	ask := func() string {
		t.Helper()
		seq++
		name := fmt.Sprintf("__ask%d", seq)
		if _, err := browsertest.Eval[bool](page, `(window.`+name+` = '', ferry.ready().then(() => ferry.ask('Summarise this page'))
			.then(r => window.`+name+` = 'OK', e => window.`+name+` = 'ERR ' + e.message), true)`); err != nil {
			t.Fatal(err)
		}
		return name
	}
	result := func(name string) string {
		v, _ := browsertest.Eval[string](page, `window.`+name)
		return v
	}
	waitResult := func(name string) string {
		t.Helper()
		s.waitIn(page, "ferry.ask settled", `window.`+name+` !== ''`)
		return result(name)
	}
	cardShown := func(what string) string {
		s.waitIn(panel, what, `document.querySelector('.prompt.confirm') !== null`)
		text, _ := browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm').innerText`)
		return text
	}

	// 1. The person types and presses Enter while the page's first ask arrives.
	s.typeInto(panel, "#input", "my own question")
	first := ask()
	card := cardShown("the page's first ask")
	screenshot(t, panel, "sidepanel-ask-en.png")
	for _, want := range []string{"Asked by the page " + origin, "Always allow " + origin, "Never allow " + origin} {
		if !strings.Contains(card, want) {
			t.Errorf("the ferry.ask card lacks %q:\n%s", want, card)
		}
	}
	if err := chromedp.Do(panel, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	s.waitUpTo(panel, 15*time.Second, "the person's own message sent", `[...document.querySelectorAll('.msg.user')].some(e => e.textContent === 'my own question')`)
	if got := result(first); got != "" {
		t.Fatalf("Enter in the composer answered the page's ask: %s", got)
	}
	if got := s.config("pages.ask_allowed_origins"); got != "" {
		t.Fatalf("pages.ask_allowed_origins = %q after a keypress", got)
	}

	// 2. Enter on the card the person moved to: this ask only.
	s.click(panel, "#prompt-review")
	if err := chromedp.Do(panel, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	if got := waitResult(first); got != "OK" {
		t.Fatalf("approved on the card: %s", got)
	}
	if got := s.config("pages.ask_allowed_origins"); got != "" {
		t.Fatalf("a one-time approval granted the origin for good: pages.ask_allowed_origins = %q", got)
	}
	// Space on the card answers once too.
	second := ask()
	cardShown("the second ask: nothing was granted")
	s.click(panel, "#prompt-review")
	if err := chromedp.Do(panel, chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	if got := waitResult(second); got != "OK" || s.config("pages.ask_allowed_origins") != "" {
		t.Fatalf("Space on the card: %s, allowed %q", got, s.config("pages.ask_allowed_origins"))
	}

	// 3. The lasting grant is its own control.
	third := ask()
	cardShown("the third ask")
	s.click(panel, ".prompt.confirm .lasting-allow")
	if got := waitResult(third); got != "OK" {
		t.Fatalf("always allow: %s", got)
	}
	if got := s.config("pages.ask_allowed_origins"); got != origin {
		t.Fatalf("pages.ask_allowed_origins = %q after Always allow, want %s", got, origin)
	}
	fourth := ask()
	if got := waitResult(fourth); got != "OK" {
		t.Fatalf("an allowed origin's ask: %s", got)
	}
	if card, _ := browsertest.Eval[bool](panel, `document.querySelector('.prompt.confirm') !== null`); card {
		t.Errorf("an allowed origin was asked about again")
	}
}

func openTabWhileNavigationIsOff(t *testing.T, s *session, srv *trustServer) {
	mine := srv.at("127.0.0.1", "/page?n=mine")
	page, tab := s.openTab(mine)
	elsewhere := srv.at("127.0.0.1", "/page?n=elsewhere")

	var r scToolResult
	s.must("tools.call", map[string]any{"name": "open_tab", "arguments": map[string]any{"url": elsewhere, "tab_id": tab}}, &r)
	if r.Success || r.Code != "PERMISSION_DENIED" || !strings.Contains(r.Reason, "browser.allow_navigate") {
		t.Fatalf("open_tab with a tab_id while navigation is off: %+v", r)
	}
	if srv.got("n=elsewhere") {
		t.Fatal("the tab navigated: the server was asked for the page")
	}
	if got, _ := browsertest.Eval[string](page, `location.href`); got != mine {
		t.Fatalf("the tab shows %s, want %s", got, mine)
	}
	// Allowed: the same call navigates the tab.
	var set map[string]any
	s.must("settings.set", map[string]any{"key": "browser.allow_navigate", "value": "true"}, &set)
	defer s.must("settings.set", map[string]any{"key": "browser.allow_navigate", "value": nil}, &set)
	s.must("tools.call", map[string]any{"name": "open_tab", "arguments": map[string]any{"url": elsewhere, "tab_id": tab}}, &r)
	if !r.Success {
		t.Fatalf("with browser.allow_navigate: %+v", r)
	}
	s.waitIn(page, "the tab navigated", `document.title === 'elsewhere'`)
}

// privateDestinationsUnasked runs before any side panel is open: nobody can approve,
// so nothing opens.
func privateDestinationsUnasked(t *testing.T, s *session, srv *trustServer, fileURL string) {
	var set map[string]any
	// Nothing private is allowed from here on (the harness allows 127.0.0.1).
	s.must("settings.set", map[string]any{"key": "browser.allow_private_hosts", "value": nil}, &set)
	for _, u := range []string{srv.at("127.0.0.1", "/page?n=loopback"), srv.at("localhost", "/page?n=localhost"), fileURL} {
		var r scToolResult
		s.must("tools.call", map[string]any{"name": "open_tab", "arguments": map[string]any{"url": u}}, &r)
		if r.Success || r.Code != "USER_REJECTED" {
			t.Errorf("open_tab %s with nobody to ask: %+v", u, r)
		}
		if n := tabsWith(s, u); n != 0 {
			t.Errorf("%s opened in %d tabs", u, n)
		}
	}
	if srv.got("n=loopback") || srv.got("n=localhost") {
		t.Fatal("the server was asked for a page nobody approved")
	}
}

// tabsWith is how many tabs show url.
func tabsWith(s *session, url string) int {
	s.t.Helper()
	n, err := browsertest.Eval[int](s.sw, fmt.Sprintf(`chrome.tabs.query({}).then(ts => ts.filter(t => (t.url || t.pendingUrl) === %q).length)`, url))
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

// privateDestinationsAsked: with the panel open the card says what the destination
// is; Deny keeps it shut, Allow opens it, and the setting's names open unasked.
func privateDestinationsAsked(t *testing.T, s *session, srv *trustServer, panel context.Context, fileURL string) {
	var set map[string]any
	tabsWith := func(url string) int {
		t.Helper()
		return tabsWith(s, url)
	}
	deny := s.park("open_tab", map[string]any{"url": srv.at("127.0.0.1", "/page?n=denied")})
	s.waitIn(panel, "card", `document.querySelector('.prompt.confirm') !== null`)
	card, _ := browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm').innerText`)
	screenshot(t, panel, "sidepanel-private-en.png")
	for _, want := range []string{"open_tab", "loopback", "browser.allow_private_hosts"} {
		if !strings.Contains(card, want) {
			t.Errorf("the card lacks %q:\n%s", want, card)
		}
	}
	s.click(panel, `.prompt.confirm button.deny`)
	if r := deny.wait(nil); r.Code != "USER_REJECTED" || srv.got("n=denied") {
		t.Fatalf("denied: %+v (server asked: %v)", r, srv.got("n=denied"))
	}
	allow := s.park("open_tab", map[string]any{"url": srv.at("127.0.0.1", "/page?n=allowed")})
	s.waitIn(panel, "card", `document.querySelector('.prompt.confirm') !== null`)
	s.click(panel, `.prompt.confirm button:not(.quiet)`)
	if r := allow.wait(nil); !r.Success || !srv.got("n=allowed") {
		t.Fatalf("allowed: %+v", r)
	}

	// browser_navigate is a write and asks the same way for file://.
	s.must("settings.set", map[string]any{"key": "browser.allow_navigate", "value": "true"}, &set)
	defer s.must("settings.set", map[string]any{"key": "browser.allow_navigate", "value": nil}, &set)
	_, tab := s.openTab(srv.at("127.0.0.1", "/page?n=start"))
	nav := s.park("browser_navigate", map[string]any{"url": fileURL, "tab_id": tab})
	s.waitIn(panel, "card for the file", `document.querySelector('.prompt.confirm') !== null`)
	card, _ = browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm').innerText`)
	if !strings.Contains(card, "a file on this computer") {
		t.Errorf("the card does not say it is a local file:\n%s", card)
	}
	s.click(panel, `.prompt.confirm button.deny`)
	if r := nav.wait(nil); r.Code != "USER_REJECTED" || tabsWith(fileURL) != 0 {
		t.Fatalf("browser_navigate to %s denied: %+v", fileURL, r)
	}

	// Named by the setting: opened without a question.
	s.must("settings.set", map[string]any{"key": "browser.allow_private_hosts", "value": "127.0.0.1"}, &set)
	quiet := s.park("open_tab", map[string]any{"url": srv.at("127.0.0.1", "/page?n=named")})
	r := quiet.wait(func() {
		if card, _ := browsertest.Eval[bool](panel, `document.querySelector('.prompt.confirm') !== null`); card {
			t.Fatal("asked about a destination the setting names")
		}
	})
	if !r.Success || !srv.got("n=named") {
		t.Fatalf("a destination the setting names: %+v", r)
	}
}
