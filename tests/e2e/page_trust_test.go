package e2e

// The trust boundary of the page API, attacked as issue-style findings describe and
// judged by effect: a cross-origin frame gets nothing of its top page and runs
// nothing in its name; a page's own "yes" never stands in for the person's policy;
// a page cannot declare without bounds or take a builtin's name; a page's own loop
// is rate-limited; the shorthand dialect's page API (init, sandboxed api, denied,
// causes, stats) works as documented.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/tests/browsertest"
)

// leakServer serves testdata and records what reaches /leak (the attacker's endpoint).
// One browser for the page API's trust boundary, in an order that matters: the
// rate test spends the test server origin's page calls, and the policy
// confirmation, which turns tools.confirm_writes on, runs last.
func TestPageTrustBoundary(t *testing.T) {
	s := start(t, 240*time.Second)
	srv, leaks := leakServer(t)
	for _, c := range []struct {
		name string
		fn   func(*testing.T, *session, *httptest.Server, func() []string)
	}{
		{"a cross-origin frame gets nothing", crossOriginFrame},
		{"the shorthand dialect's page API", shorthandPageAPI},
		// spends the origin's rate of page calls: after every other ferry.execute
		{"bounded declarations and page rates", boundedDeclarations},
		{"a page's own yes never stands in for the policy", policyConfirmation},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, s, srv, leaks) })
	}
}

func leakServer(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var leaks []string
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(filepath.Join(browsertest.RepoRoot(), "tests", "e2e", "testdata"))))
	mux.HandleFunc("/leak", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		leaks = append(leaks, string(b))
		mu.Unlock()
	})
	return loopbackServer(t, mux), func() []string { mu.Lock(); defer mu.Unlock(); return append([]string{}, leaks...) }
}

func crossOriginFrame(t *testing.T, s *session, srv *httptest.Server, leaks func() []string) {
	page, tab := s.openTab(srv.URL + "/pageactions/bank.html")
	waitPageTools(t, s, tab, 1)
	deadline := time.Now().Add(20 * time.Second)
	for len(leaks()) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	got := leaks()
	if len(got) != 1 {
		t.Fatalf("the ad frame never reported (%d reports)", len(got))
	}
	report := got[0]
	t.Logf("what the cross-origin frame got: %s", report)
	if strings.Contains(report, "SECRET-IBAN") || strings.Contains(report, "transfer") && strings.Contains(report, `"ok":true`) {
		t.Errorf("the attacker's server received the top page's data: %s", report)
	}
	adOrigin := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	for _, what := range []string{"ferry.tools", "ferry.execute", "ferry.ask"} {
		if !strings.Contains(report, what+" from a frame of "+adOrigin+" is refused") {
			t.Errorf("%s from the ad frame is not refused naming %s: %s", what, adOrigin, report)
		}
	}
	if !strings.Contains(report, "PERMISSION_DENIED") {
		t.Errorf("the refusals do not carry PERMISSION_DENIED: %s", report)
	}
	// The effect: the top page's handler never ran, and no run was started.
	if n, _ := browsertest.Eval[int](page, `window.__transfers`); n != 0 {
		t.Errorf("the top page's transfer ran %d times", n)
	}
	var runs struct {
		Conversations []any `json:"conversations"`
	}
	if out := s.request("conversations.list", map[string]any{}); out.OK {
		_ = json.Unmarshal(out.Result, &runs)
		if len(runs.Conversations) != 0 {
			t.Errorf("the frame's ferry.ask started a run: %s", out.Result)
		}
	}
}

// A page that answers its own confirmation yes: that decides for the action's own
// confirm: true, never for the person's policy (tools.confirm_writes), which with no
// side panel open is a denial; nothing runs.
func policyConfirmation(t *testing.T, s *session, srv *httptest.Server, leaks func() []string) {
	page, tab := s.openTab(srv.URL + "/pageactions/guarded.html?policy")
	waitPageTools(t, s, tab, 10)
	call := func() toolResult {
		var r toolResult
		s.must("tools.call", map[string]any{"name": "send_money", "arguments": map[string]any{"to": "Bob"}, "tab_id": tab}, &r)
		return r
	}
	if r := call(); !r.Success {
		t.Fatalf("the action's own confirmation, answered by its page: %+v", r)
	}
	if out := s.request("settings.set", map[string]any{"key": "tools.confirm_writes", "value": "true"}); !out.OK {
		t.Fatalf("settings.set: %s", out.Message)
	}
	time.Sleep(1100 * time.Millisecond) // the pipeline's view of settings is at most a second old
	r := call()
	if r.Success || r.Code != "USER_REJECTED" {
		t.Errorf("with tools.confirm_writes the page's own yes ran the call: %+v", r)
	}
	if n, _ := browsertest.Eval[int](page, `window.__sent`); n != 1 {
		t.Errorf("send_money ran %d times, want only the first call", n)
	}
}

func boundedDeclarations(t *testing.T, s *session, srv *httptest.Server, leaks func() []string) {
	page, tab := s.openTab(srv.URL + "/pageactions/guarded.html")
	// 84 declared: the first 64 count (the bound), of which the three builtin-like
	// names are refused: 61 offered.
	names := waitPageTools(t, s, tab, 61)
	time.Sleep(500 * time.Millisecond)
	names = waitPageTools(t, s, tab, 61)
	if len(names) != 61 {
		t.Errorf("%d page tools listed, want 61 (64 declarations counted, 3 refused for their names)", len(names))
	}
	for _, n := range names {
		if f := strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(n)); f == "executescript" || f == "webfetch" || f == "opentab" {
			t.Errorf("a page action imitating a builtin is offered: %s", n)
		}
	}
	var l struct {
		Tools []struct {
			Name, Description, Source string
		} `json:"tools"`
	}
	s.must("tools.list", map[string]any{"tab_id": tab}, &l)
	for _, x := range l.Tools {
		if x.Source == "page" && len([]rune(x.Description)) > 1000 {
			t.Errorf("%s has a description of %d characters", x.Name, len([]rune(x.Description)))
		}
	}
	refused, err := browsertest.Eval[string](page, `JSON.stringify(window.__refused)`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Execute_Script", "web-fetch", "Open.Tab", "reads like the builtin", "at most 64 actions"} {
		if !strings.Contains(refused, want) {
			t.Errorf("the page was not told %q: %.600s", want, refused)
		}
	}
	// The page's own loop of ferry.execute is rate-limited per origin: the bucket
	// holds 60 and refills one a second, so a loop of 150 meets the limit however
	// slowly a loaded machine answers (each call taking up to a tenth of a second).
	codes, err := browsertest.Eval[[]string](page, `window.__hammer(150)`)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(codes, "RATE_LIMITED") {
		t.Errorf("150 ferry.execute calls in a row were never RATE_LIMITED (codes %v)", codes)
	}
}

func shorthandPageAPI(t *testing.T, s *session, srv *httptest.Server, leaks func() []string) {
	page, tab := s.openTab(srv.URL + "/pageactions/shorthand.html")
	waitPageTools(t, s, tab, 3)
	call := func(name string, args map[string]any) toolResult {
		var r toolResult
		s.must("tools.call", map[string]any{"name": name, "arguments": args, "tab_id": tab}, &r)
		return r
	}
	// setTheme: the page's own writeStore, no host setting needed.
	if r := call("setTheme", map[string]any{"theme": "dark"}); !r.Success {
		t.Fatalf("setTheme with the page's writeStore on: %+v", r)
	}
	if theme, _ := browsertest.Eval[string](page, `window.__store.ui.theme`); theme != "dark" {
		t.Errorf("the store's theme is %q after setTheme", theme)
	}
	if r := call("peekTheme", map[string]any{}); !r.Success || !strings.Contains(string(r.Result), `"canWrite":false`) {
		t.Errorf("an action without the opt-in could write: %+v %s", r, r.Result)
	}
	// A denial by the host reaches the page as denied.
	if r := call("setTheme", map[string]any{}); r.Code != "INVALID_PARAMS" {
		t.Fatalf("setTheme without a theme: %+v", r)
	}
	if err := browsertest.WaitFor(s.ctx, page, `window.__denied.some(d => d.action === 'setTheme' && d.code === 'INVALID_PARAMS' && d.by === 'host')`); err != nil {
		d, _ := browsertest.Eval[string](page, `JSON.stringify(window.__denied)`)
		t.Errorf("the host's denial never reached the page: %v (denied %s)", err, d)
	}
	// emit carries the trace back: the page's trigger calling bump again is stopped.
	if r := call("bump", map[string]any{}); !r.Success {
		t.Fatalf("bump: %+v", r)
	}
	if err := browsertest.WaitFor(s.ctx, page, `window.__loop.length > 0`); err != nil {
		t.Fatal(err)
	}
	loop, _ := browsertest.Eval[[]string](page, `window.__loop`)
	bumps, _ := browsertest.Eval[int](page, `window.__bumps`)
	if loop[0] != "LOOP_DETECTED" || bumps != 1 {
		t.Errorf("the trigger's bump: %v after %d bumps, want LOOP_DETECTED after 1", loop, bumps)
	}
	stats, err := browsertest.Eval[map[string]any](page, `ferry.getStats()`)
	if err != nil {
		t.Fatal(err)
	}
	if stats["logSize"].(float64) < 3 || len(stats["actions"].([]any)) != 3 {
		t.Errorf("getStats() = %v", stats)
	}
}
