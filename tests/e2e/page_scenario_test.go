package e2e

// The page-actions scenario of the demo, end to end: an agent run started from the
// extension's service worker (chat.send bound to the tab), a fake model vendor that
// calls the page's actions, and the page in Chromium. The same add/toggle scenario
// runs against the demo (examples/todo, the list dialect), a fixture in the shorthand
// dialect and a fixture declaring WebMCP tools. The checks that need a fixture of
// their own (hidden/disabled/covered/off-screen targets, a handler that never
// renders, forged channels) are in page_actions_test.go.

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/tests/browsertest"
)

// examplesServer serves examples/ at / and tests/e2e/testdata at /fixtures/, on
// 127.0.0.1.
func examplesServer(t *testing.T) *httptest.Server {
	t.Helper()
	root := browsertest.RepoRoot()
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(filepath.Join(root, "examples"))))
	mux.Handle("/fixtures/", http.StripPrefix("/fixtures/", http.FileServer(http.Dir(filepath.Join(root, "tests", "e2e", "testdata")))))
	return loopbackServer(t, mux)
}

type scenarioPage struct {
	name      string
	path      string
	toggle    string // the toggle action's name
	toggleArg string // its arguments for task t1
	expect    string // the expectation's description, when the page declares one
	available bool   // add_task declares available(): the full-list part applies
}

func TestPageScenario(t *testing.T) {
	s := start(t, 240*time.Second)
	srv := examplesServer(t)
	fake := modeltest.New(t, modeltest.OpenAI)
	if out, err := ferryIn(t, s.home, "", "provider", "add", "fake", "--kind", modeltest.OpenAI, "--base-url", fake.URL, "--model", "fake-model", "--default"); err != nil {
		t.Fatalf("ferry provider add: %v\n%s", err, out)
	}
	pages := []scenarioPage{
		{name: "demo, list dialect", path: "/todo/", toggle: "toggle", toggleArg: `{"record":"t1"}`, expect: "The new task appears in the list", available: true},
		{name: "shorthand dialect", path: "/fixtures/pageactions/todo-dialects.html?d=002", toggle: "toggle", toggleArg: `{"record":"t1"}`, available: true},
		{name: "WebMCP", path: "/fixtures/pageactions/todo-dialects.html?d=webmcp", toggle: "toggle_task", toggleArg: `{"id":"t1"}`},
	}
	for i, p := range pages {
		t.Run(p.name, func(t *testing.T) { scenario(t, s, fake, srv.URL, p, i == 0) })
	}

	t.Run("every page action call is audited with the page's origin", func(t *testing.T) {
		type entry struct {
			Tool, Origin, Caller, Code string
			Success                    bool
		}
		var got struct{ Entries []entry }
		want := map[string]bool{"add_task": true, "toggle": true, "toggle_task": true}
		err := waitUntil(5*time.Second, func() bool {
			s.must("audit.query", map[string]any{"origin": srv.URL, "limit": 1000}, &got)
			seen := map[string]bool{}
			for _, e := range got.Entries {
				seen[e.Tool] = true
			}
			return seen["add_task"] && seen["toggle"] && seen["toggle_task"]
		})
		if err != nil {
			t.Fatalf("audit rows for %s: %+v", srv.URL, got.Entries)
		}
		var all struct{ Entries []entry }
		s.must("audit.query", map[string]any{"limit": 1000}, &all)
		codes := map[string]int{}
		for _, e := range all.Entries {
			if want[e.Tool] {
				if e.Origin != srv.URL {
					t.Errorf("audit row of %s has origin %q, want %q", e.Tool, e.Origin, srv.URL)
				}
				codes[e.Code]++
			}
		}
		// Refusals are audited too: invalid params, the unavailable call, the denial.
		for _, c := range []string{"", "INVALID_PARAMS", "ACTION_UNAVAILABLE"} {
			if codes[c] == 0 {
				t.Errorf("no audit row of a page action with code %q: %v", c, codes)
			}
		}
	})
}

// agentRun starts a run bound to tab with chat.send, answering the model's requests
// with turns in order (then with text), and returns the requests of this run.
func agentRunOn(t *testing.T, s *session, fake *modeltest.Server, tab int, text string, turns ...modeltest.Turn) []modeltest.Request {
	t.Helper()
	base := len(fake.Requests())
	fake.SetResponder(func(req modeltest.Request) modeltest.Turn {
		if i := req.N - base - 1; i >= 0 && i < len(turns) {
			return turns[i]
		}
		return modeltest.Text("Done.")
	})
	var started struct {
		RunID string `json:"run_id"`
	}
	s.must("chat.send", map[string]any{"text": text, "tab_id": tab}, &started)
	if started.RunID == "" {
		t.Fatalf("chat.send: %+v", started)
	}
	if run := s.waitRun(t, started.RunID, 45*time.Second); run.Status != "completed" {
		t.Fatalf("run %q ended %+v", text, run)
	}
	return fake.Requests()[base:]
}

func resultOf(t *testing.T, reqs []modeltest.Request, callID string) toolResult {
	t.Helper()
	for _, req := range reqs {
		if r, ok := toolResultOf(req, callID); ok {
			var out toolResult
			if err := json.Unmarshal([]byte(r.Content), &out); err != nil {
				t.Fatalf("the result of %s is not JSON: %v: %.300s", callID, err, r.Content)
			}
			return out
		}
	}
	t.Fatalf("no request carried the result of %s", callID)
	return toolResult{}
}

func sentTool(req modeltest.Request, name string) (modeltest.Tool, bool) {
	for _, tool := range req.Tools {
		if tool.Name == name {
			return tool, true
		}
	}
	return modeltest.Tool{}, false
}

func call(id, name, args string) modeltest.Call {
	return modeltest.Call{ID: id, Name: name, Arguments: args}
}

func scenario(t *testing.T, s *session, fake *modeltest.Server, origin string, p scenarioPage, confirmChecks bool) {
	url := origin + p.path
	page, tab := s.openTab(url)
	list := func() toolsList {
		var l toolsList
		s.must("tools.list", map[string]any{"tab_id": tab}, &l)
		return l
	}
	offered := func(name string) bool {
		for _, tool := range list().Tools {
			if tool.Name == name && tool.Source == "page" {
				return true
			}
		}
		return false
	}
	if err := waitUntil(15*time.Second, func() bool { return offered("add_task") && offered(p.toggle) }); err != nil {
		t.Fatalf("the page's actions never registered: %+v", list())
	}
	rows := func() string {
		t.Helper()
		v, err := browsertest.Eval[string](page, `[...document.querySelectorAll('#list li')].map(li => li.dataset.taskId).join(',')`)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// 1. "add 准备明天的议程 to my todos": the model calls add_task once.
	reqs := agentRunOn(t, s, fake, tab, "add 准备明天的议程 to my todos",
		modeltest.Turn{ToolCalls: []modeltest.Call{call("call_add", "add_task", `{"text":"准备明天的议程"}`)}})
	if len(reqs) != 2 {
		t.Fatalf("the fake got %d requests, want 2", len(reqs))
	}
	tool, ok := sentTool(reqs[0], "add_task")
	if !ok {
		t.Fatalf("add_task not among the tools sent: %d tools", len(reqs[0].Tools))
	}
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	json.Unmarshal(tool.Parameters, &schema)
	text := schema.Properties["text"]
	if text["minLength"] != 1.0 || text["maxLength"] != 80.0 || text["pattern"] != `\S` || !contains(schema.Required, "text") {
		t.Errorf("add_task's text as sent: %s", tool.Parameters)
	}
	r := resultOf(t, reqs[1:], "call_add")
	if !r.Success {
		t.Fatalf("add_task as the model got it: %+v", r)
	}
	if p.expect != "" && (!strings.Contains(string(r.Expect), p.expect) || !strings.Contains(string(r.Expect), `"met":true`)) {
		t.Errorf("the result lacks the expectation %q: %s", p.expect, r.Expect)
	}
	if r.Changed == nil || strings.Join(r.Changed.Records.Added, ",") != "t4" || r.Changed.Records.Total.From != 3 || r.Changed.Records.Total.To != 4 {
		t.Errorf("changed as the model got it: %+v", r.Changed)
	}
	if err := waitUntil(3*time.Second, func() bool { return strings.HasPrefix(rows(), "t4,") }); err != nil {
		t.Errorf("rows after add_task: %s", rows())
	}
	if got, _ := browsertest.Eval[string](page, `document.querySelector('[data-task-id="t4"]')?.textContent.trim() ?? ''`); got != "准备明天的议程" {
		t.Errorf("row t4 reads %q", got)
	}

	// 2. Empty and whitespace-only text: INVALID_PARAMS, nothing asked, nothing run.
	// With confirmation required for add_task (and nobody to answer within 1 s), an
	// INVALID_PARAMS proves that validation came first.
	set := func(key string, value any) {
		var out any
		s.must("settings.set", map[string]any{"key": key, "value": value}, &out)
	}
	if confirmChecks {
		set("tools.confirm", "add_task")
		set("tools.confirm_timeout_seconds", "1")
		defer set("tools.confirm", nil)
		defer set("tools.confirm_timeout_seconds", nil)
	}
	before := rows()
	t0 := time.Now()
	reqs = agentRunOn(t, s, fake, tab, "add an empty task",
		modeltest.Turn{ToolCalls: []modeltest.Call{
			call("call_empty", "add_task", `{"text":""}`),
			call("call_spaces", "add_task", `{"text":"   "}`),
		}})
	for _, id := range []string{"call_empty", "call_spaces"} {
		if r := resultOf(t, reqs, id); r.Code != "INVALID_PARAMS" {
			t.Errorf("%s: %+v, want INVALID_PARAMS", id, r)
		}
	}
	if confirmChecks && time.Since(t0) > 900*time.Millisecond {
		t.Errorf("the invalid calls took %s: was a confirmation asked?", time.Since(t0))
	}
	if after := rows(); after != before {
		t.Errorf("rows changed %s → %s on invalid params", before, after)
	}

	// 3. Confirmation that nobody answers is a denial, and nothing runs.
	if confirmChecks {
		reqs = agentRunOn(t, s, fake, tab, "add a confirmed task",
			modeltest.Turn{ToolCalls: []modeltest.Call{call("call_confirm", "add_task", `{"text":"needs a yes"}`)}})
		if r := resultOf(t, reqs, "call_confirm"); r.Success || (r.Code != "CONFIRM_TIMEOUT" && r.Code != "USER_REJECTED") {
			t.Errorf("add_task with an unanswered confirmation: %+v", r)
		} else {
			t.Logf("unanswered confirmation: %s (%s)", r.Code, r.Reason)
		}
		if after := rows(); after != before {
			t.Errorf("rows changed %s → %s on a denied call", before, after)
		}
		set("tools.confirm", nil)
	}

	// 4. Toggling one row changes only that record.
	// The person names the task: what the page showed goes back to it only as their
	// words (README: the origin-set rule).
	reqs = agentRunOn(t, s, fake, tab, "mark task t1 done",
		modeltest.Turn{ToolCalls: []modeltest.Call{call("call_toggle", p.toggle, p.toggleArg)}})
	r = resultOf(t, reqs, "call_toggle")
	if !r.Success || r.Changed == nil || strings.Join(r.Changed.Records.Updated, ",") != "t1" ||
		len(r.Changed.Records.Added)+len(r.Changed.Records.Removed) != 0 {
		t.Errorf("%s t1: %+v changed %+v", p.toggle, r, r.Changed)
	}
	if cls, _ := browsertest.Eval[string](page, `document.querySelector('[data-task-id="t1"]').className`); cls != "done" {
		t.Errorf("t1 is %q after the toggle", cls)
	}

	if !p.available {
		return
	}
	// 5. At 8 tasks add_task is not offered, its reason is in the context, and a
	// direct call says why.
	if _, err := browsertest.Eval[int](page, `(() => { const f = document.getElementById('composer'), i = document.getElementById('new-task'); let n = 0; while (document.querySelectorAll('#list li').length < 8 && n++ < 20) { i.value = 'filler ' + n; f.requestSubmit(); } return n; })()`); err != nil {
		t.Fatal(err)
	}
	if err := waitUntil(5*time.Second, func() bool { return !offered("add_task") }); err != nil {
		t.Fatalf("add_task still offered with rows %s", rows())
	}
	reqs = agentRunOn(t, s, fake, tab, "add one more task")
	if _, ok := sentTool(reqs[0], "add_task"); ok {
		t.Errorf("add_task was sent to the model at 8 tasks")
	}
	if _, ok := sentTool(reqs[0], p.toggle); !ok {
		t.Errorf("%s was not sent to the model", p.toggle)
	}
	// The reason is the page's text: it reaches the model in the page context,
	// a block of data after the conversation, never in the system prompt.
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	if !strings.Contains(last.Text, "The list is full") || !strings.Contains(last.Text, `"content_from"`) || strings.Contains(reqs[0].System, "The list is full") {
		t.Errorf("add_task's reason: page context %q, system prompt %q", last.Text, reqs[0].System)
	}
	var direct toolResult
	s.must("tools.call", map[string]any{"name": "add_task", "arguments": map[string]any{"text": "one more"}, "tab_id": tab}, &direct)
	if direct.Code != "ACTION_UNAVAILABLE" || !strings.Contains(direct.Reason, "full") {
		t.Errorf("a direct call at 8 tasks: %+v", direct)
	}
}

// startDemo runs `ferry demo --no-browser` and returns the base URL it serves.
func startDemo(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(ferryBin, "demo", "--no-browser", "--root", browsertest.RepoRoot())
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, after, ok := strings.Cut(sc.Text(), " on http://"); ok && strings.HasPrefix(sc.Text(), "Serving") {
				found <- "http://" + strings.TrimSpace(after)
			}
		}
	}()
	select {
	case base := <-found:
		return base
	case <-time.After(20 * time.Second):
		t.Fatal("ferry demo --no-browser printed no URL")
	}
	return ""
}

func TestDemoServes(t *testing.T) {
	base := startDemo(t)
	for path, want := range map[string]string{"/todo/": "add_task", "/todo-react/": "useFerryAction", "/sdk/react.js": "export function bindReact"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d, %d bytes without %q", path, resp.StatusCode, len(b), want)
		}
	}
}

// The demo pages with the extension connected: ferry.ready() resolves in the page and
// the actions are registered. The React page needs React from npm (scripts/demo-react,
// cached per machine).
func TestDemoWithExtension(t *testing.T) {
	s := start(t, 120*time.Second)
	reactDir := filepath.Join(browsertest.TempDir(t, "ferry-demo-react-"), "r")
	if cache, err := os.UserCacheDir(); err == nil {
		reactDir = filepath.Join(cache, "ferry", "demo-react")
	}
	react := true
	if _, err := os.Stat(filepath.Join(reactDir, "node_modules", "react", "umd")); err != nil {
		cmd := exec.Command("bash", filepath.Join(browsertest.RepoRoot(), "scripts", "demo-react"))
		cmd.Env = append(os.Environ(), "FERRY_DEMO_REACT="+reactDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("scripts/demo-react failed, the React page is not checked: %v\n%s", err, out)
			react = false
		}
	}
	base := startDemo(t, "FERRY_DEMO_REACT="+reactDir)
	paths := []string{"/todo/"}
	if react {
		paths = append(paths, "/todo-react/")
	}
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			url := base + path
			page, cancel := chromedp.NewContext(s.browser.Ctx)
			defer cancel()
			if err := chromedp.Do(page, chromedp.Navigate(url)); err != nil {
				t.Fatal(err)
			}
			ready, err := browsertest.Eval[bool](page, `ferry.ready().then(() => true)`)
			if err != nil || !ready {
				t.Fatalf("ferry.ready() in %s: %v %v", url, ready, err)
			}
			if err := browsertest.WaitFor(s.ctx, page, `document.getElementById('status').textContent.includes('connected')`); err != nil {
				t.Errorf("the page does not say it is connected: %v", err)
			}
			tab := s.tabOf(url)
			var l toolsList
			err = waitUntil(10*time.Second, func() bool {
				s.must("tools.list", map[string]any{"tab_id": tab}, &l)
				n := 0
				for _, tool := range l.Tools {
					if tool.Source == "page" && (tool.Name == "add_task" || tool.Name == "toggle") {
						n++
					}
				}
				return n == 2
			})
			if err != nil {
				t.Fatalf("add_task and toggle not registered from %s: %+v", url, l)
			}
			var r toolResult
			s.must("tools.call", map[string]any{"name": "add_task", "arguments": map[string]any{"text": "from the demo test"}, "tab_id": tab}, &r)
			if !r.Success || !strings.Contains(string(r.Expect), `"met":true`) {
				t.Errorf("add_task on %s: %+v %s", url, r, r.Expect)
			}
		})
	}
}
