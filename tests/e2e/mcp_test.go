package e2e

// `ferry mcp` end to end: the official MCP Go SDK's client runs the built binary's
// `mcp` command over stdio with the FERRY_HOME of the browser's host, so the server
// finds the live host on its control socket. Through it the client lists and calls
// the host's tools, binds the demo todo tab and calls its page action add_task,
// hears tools/list_changed when the page registers a new action, and has a call
// confirmed in the side panel. Every call is audited with the caller "mcp".

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferryhq/ferry/host/control"
	"github.com/ferryhq/ferry/tests/browsertest"
)

// mcpStderr collects the server's stderr while exec's copier writes it.
type mcpStderr struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *mcpStderr) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *mcpStderr) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// mcpClient is one SDK client session on `ferry mcp`, counting tools/list_changed.
type mcpClient struct {
	t       *testing.T
	ctx     context.Context
	cs      *mcp.ClientSession
	changed chan struct{}
	stderr  *mcpStderr
}

func startMCP(t *testing.T, ctx context.Context, home string) *mcpClient {
	t.Helper()
	cmd := exec.Command(ferryBin, "mcp")
	cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
	m := &mcpClient{t: t, ctx: ctx, changed: make(chan struct{}, 64), stderr: &mcpStderr{}}
	cmd.Stderr = m.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "ferry-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case m.changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting the MCP client to ferry mcp: %v", err)
	}
	m.cs = cs
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("--- ferry mcp stderr ---\n%s", m.stderr)
		}
	})
	return m
}

func (m *mcpClient) tools() map[string]*mcp.Tool {
	m.t.Helper()
	res, err := m.cs.ListTools(m.ctx, nil)
	if err != nil {
		m.t.Fatalf("tools/list: %v", err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

// call makes a tools/call and decodes Ferry's structured result, checking that
// isError agrees with success and that the text content carries the same result.
func (m *mcpClient) call(name string, args any) (toolResult, map[string]any) {
	m.t.Helper()
	r, err := m.cs.CallTool(m.ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		m.t.Fatalf("tools/call %s: %v", name, err)
	}
	return decodeMCPResult(m.t, name, r)
}

func decodeMCPResult(t *testing.T, name string, r *mcp.CallToolResult) (toolResult, map[string]any) {
	t.Helper()
	b, err := json.Marshal(r.StructuredContent)
	if err != nil || r.StructuredContent == nil {
		t.Fatalf("%s: no structured content (%v)", name, err)
	}
	var res toolResult
	var raw map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%s: structured content is not a Ferry result: %s", name, b)
	}
	json.Unmarshal(b, &raw)
	if r.IsError == res.Success {
		t.Errorf("%s: isError %v with success %v: %s", name, r.IsError, res.Success, b)
	}
	if len(r.Content) != 1 {
		t.Errorf("%s: %d content items, want one text item", name, len(r.Content))
	} else if tc, ok := r.Content[0].(*mcp.TextContent); !ok || !jsonEqual(json.RawMessage(tc.Text), string(b)) {
		t.Errorf("%s: the text content does not carry the structured result: %#v", name, r.Content[0])
	}
	return res, raw
}

// waitTools waits (re-listing after every tools/list_changed, and at least every
// half second) until cond holds for the listed tools; it reports whether a
// list_changed notification arrived meanwhile.
func (m *mcpClient) waitTools(what string, d time.Duration, cond func(map[string]*mcp.Tool) bool) (map[string]*mcp.Tool, bool) {
	m.t.Helper()
	deadline := time.After(d)
	notified := false
	for {
		names := m.tools()
		if cond(names) {
			return names, notified
		}
		select {
		case <-m.changed:
			notified = true
		case <-time.After(500 * time.Millisecond):
		case <-deadline:
			m.t.Fatalf("%s: not within %s; tools: %v", what, d, mcpNames(names))
		}
	}
}

func (m *mcpClient) drain() {
	for {
		select {
		case <-m.changed:
		default:
			return
		}
	}
}

func mcpNames(tools map[string]*mcp.Tool) []string {
	var out []string
	for n := range tools {
		out = append(out, n)
	}
	return out
}

func TestMCPServerWithBrowser(t *testing.T) {
	s := start(t, 60*time.Second)
	srv := examplesServer(t)

	// The browser starts its host on the first request; the host then listens on
	// its control socket in FERRY_HOME/sockets.
	hi := s.info()
	if err := waitUntil(10*time.Second, func() bool {
		hosts, _ := control.List(s.home)
		return len(hosts) > 0 && hosts[0].PID == hi.PID
	}); err != nil {
		hosts, _ := control.List(s.home)
		t.Fatalf("the host (pid %d) never listed its control socket: %+v", hi.PID, hosts)
	}

	url := srv.URL + "/todo/"
	page, tab := s.openTab(url)
	rows := func() string {
		t.Helper()
		v, err := browsertest.Eval[string](page, `[...document.querySelectorAll('#list li')].map(li => li.dataset.taskId).join(',')`)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	rowText := func(id string) string {
		v, _ := browsertest.Eval[string](page, fmt.Sprintf(`document.querySelector('[data-task-id=%q]')?.textContent.trim() ?? ''`, id))
		return v
	}

	m := startMCP(t, s.ctx, s.home)

	t.Run("list and call a builtin", func(t *testing.T) {
		names := m.tools()
		for _, want := range []string{"ferry_list_tabs", "ferry_bind_tab", "list_tasks", "create_task", "list_tabs", "get_tab_content"} {
			if names[want] == nil {
				t.Errorf("tools/list lacks %s: %v", want, mcpNames(names))
			}
		}
		for _, risky := range []string{"execute_script", "browser_navigate", "close_tab", "opfs_delete"} {
			if names[risky] != nil {
				t.Errorf("%s is offered to outside agents although mcp.allowed_tools leaves it out by default", risky)
			}
		}
		if names["add_task"] != nil {
			t.Errorf("add_task is offered before any tab is bound")
		}
		if !strings.Contains(m.stderr.String(), fmt.Sprintf("serving the browser host pid %d", hi.PID)) {
			t.Errorf("ferry mcp did not attach to the live host pid %d: %s", hi.PID, m.stderr)
		}
		if r, _ := m.call("create_task", map[string]any{"subject": "从 MCP 来的任务"}); !r.Success {
			t.Fatalf("create_task: %+v", r)
		}
		r, _ := m.call("list_tasks", map[string]any{})
		if !r.Success || !strings.Contains(string(r.Result), "从 MCP 来的任务") {
			t.Errorf("list_tasks after create_task: %+v %s", r, r.Result)
		}
		// A browser tool runs in the live browser: list_tabs sees the demo tab.
		r, _ = m.call("list_tabs", map[string]any{})
		if !r.Success || !strings.Contains(string(r.Result), url) {
			t.Errorf("list_tabs: %+v %s", r, r.Result)
		}
	})

	t.Run("bind the demo tab and add a task", func(t *testing.T) {
		r, raw := m.call("ferry_list_tabs", map[string]any{})
		var listed struct {
			Tabs []struct {
				TabID int    `json:"tab_id"`
				URL   string `json:"url"`
			} `json:"tabs"`
			BoundTabID *int `json:"bound_tab_id"`
		}
		json.Unmarshal(r.Result, &listed)
		found := false
		for _, tb := range listed.Tabs {
			found = found || (tb.TabID == tab && tb.URL == url)
		}
		if !r.Success || !found || listed.BoundTabID == nil || *listed.BoundTabID != 0 {
			t.Fatalf("ferry_list_tabs does not list tab %d at %s (unbound): %s", tab, url, mustJSONString(raw))
		}
		// The page registers its actions a moment after it loads.
		if err := waitUntil(15*time.Second, func() bool {
			var l toolsList
			s.must("tools.list", map[string]any{"tab_id": tab}, &l)
			for _, tool := range l.Tools {
				if tool.Name == "add_task" && tool.Source == "page" {
					return true
				}
			}
			return false
		}); err != nil {
			t.Fatalf("the demo's actions never registered with the host")
		}
		m.drain()
		r, raw = m.call("ferry_bind_tab", map[string]any{"tab_id": tab})
		if !r.Success || !strings.Contains(string(r.Result), `"add_task"`) {
			t.Fatalf("ferry_bind_tab %d: %s", tab, mustJSONString(raw))
		}
		names, notified := m.waitTools("add_task listed after binding", 10*time.Second, func(n map[string]*mcp.Tool) bool {
			return n["add_task"] != nil && n["toggle"] != nil
		})
		// Binding changes the list, which the server announces.
		if !notified {
			select {
			case <-m.changed:
			case <-time.After(3 * time.Second):
				t.Errorf("no tools/list_changed after binding the tab")
			}
		}
		schema, _ := json.Marshal(names["add_task"].InputSchema)
		if !strings.Contains(string(schema), `"text"`) || !strings.Contains(string(schema), `"maxLength":80`) {
			t.Errorf("add_task's input schema: %s", schema)
		}
		if !strings.Contains(names["add_task"].Description, "page action") {
			t.Errorf("add_task's description: %q", names["add_task"].Description)
		}

		r, raw = m.call("add_task", map[string]any{"text": "准备明天的议程"})
		if !r.Success {
			t.Fatalf("add_task: %s", mustJSONString(raw))
		}
		if !strings.Contains(string(r.Expect), "The new task appears in the list") || !strings.Contains(string(r.Expect), `"met":true`) {
			t.Errorf("add_task's result lacks the met expectation: %s", r.Expect)
		}
		if r.Changed == nil || strings.Join(r.Changed.Records.Added, ",") != "t4" || r.Changed.Records.Total.From != 3 || r.Changed.Records.Total.To != 4 {
			t.Errorf("add_task's change evidence: %s", mustJSONString(raw["changed"]))
		}
		if err := waitUntil(3*time.Second, func() bool { return strings.HasPrefix(rows(), "t4,") }); err != nil {
			t.Errorf("rows after add_task: %s", rows())
		}
		if got := rowText("t4"); got != "准备明天的议程" {
			t.Errorf("row t4 reads %q", got)
		}
		// An unsuccessful page action call is isError with Ferry's code.
		if r, _ := m.call("add_task", map[string]any{"text": "   "}); r.Code != "INVALID_PARAMS" {
			t.Errorf("add_task with blank text: %+v", r)
		}
	})

	t.Run("list_changed when the page registers an action", func(t *testing.T) {
		m.drain()
		if _, err := browsertest.Eval[bool](page, `(ferry.action('count_open', {
			desc: 'Count the tasks not done yet', kind: 'read', params: [],
			run: () => ({open: document.querySelectorAll('#list li:not(.done)').length}),
		}), true)`); err != nil {
			t.Fatal(err)
		}
		// Only a notification makes the client look again: the new tool must be
		// listed after one of them (a stale one for an earlier change just lists
		// without it).
		var names map[string]*mcp.Tool
		deadline := time.After(10 * time.Second)
		for names["count_open"] == nil {
			select {
			case <-m.changed:
				names = m.tools()
			case <-deadline:
				t.Fatalf("no tools/list_changed bringing count_open within 10 s of the page registering it; tools now: %v", mcpNames(m.tools()))
			}
		}
		if ann := names["count_open"].Annotations; ann == nil || !ann.ReadOnlyHint {
			t.Errorf("count_open (kind read) is not marked read-only: %+v", ann)
		}
		r, raw := m.call("count_open", map[string]any{})
		if !r.Success || !strings.Contains(string(r.Result), `"open":3`) {
			t.Errorf("count_open: %s", mustJSONString(raw))
		}
	})

	t.Run("a confirmation approved in the side panel", func(t *testing.T) {
		var out any
		s.must("settings.set", map[string]any{"key": "tools.confirm", "value": "add_task"}, &out)
		defer s.must("settings.set", map[string]any{"key": "tools.confirm", "value": nil}, &out)
		panel := openPanel(t, s)

		type answer struct {
			r   *mcp.CallToolResult
			err error
		}
		done := make(chan answer, 1)
		go func() {
			r, err := m.cs.CallTool(s.ctx, &mcp.CallToolParams{Name: "add_task", Arguments: map[string]any{"text": "经人确认的任务"}})
			done <- answer{r, err}
		}()
		s.waitIn(panel, "confirmation card", `document.querySelector('.prompt.confirm') !== null`)
		card, _ := browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm').innerText`)
		// The card names the tool, its arguments, and who asks: an outside agent.
		if !strings.Contains(card, "add_task") || !strings.Contains(card, "经人确认的任务") || !strings.Contains(card, "outside agent through ferry mcp") {
			t.Errorf("confirmation card: %q", card)
		}
		select {
		case a := <-done:
			t.Fatalf("add_task returned before anyone answered: %+v %v", a.r, a.err)
		default:
		}
		s.click(panel, `.prompt.confirm button:not(.quiet)`)
		var a answer
		select {
		case a = <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("add_task did not return within 15 s of the approval")
		}
		if a.err != nil {
			t.Fatalf("tools/call add_task: %v", a.err)
		}
		r, raw := decodeMCPResult(t, "add_task", a.r)
		if !r.Success || !strings.Contains(string(r.Expect), `"met":true`) {
			t.Fatalf("add_task after approval: %s", mustJSONString(raw))
		}
		if r.Changed == nil || strings.Join(r.Changed.Records.Added, ",") != "t5" {
			t.Errorf("change evidence after approval: %s", mustJSONString(raw["changed"]))
		}
		if err := waitUntil(3*time.Second, func() bool { return rowText("t5") == "经人确认的任务" }); err != nil {
			t.Errorf("row t5 reads %q; rows %s", rowText("t5"), rows())
		}
		s.waitIn(panel, "card gone", `document.querySelector('.prompt.confirm') === null`)
	})

	t.Run("the calls are audited with the caller mcp", func(t *testing.T) {
		type entry struct {
			Tool, Origin, Caller, Code string
			Success                    bool
		}
		var got struct{ Entries []entry }
		want := map[string]int{"create_task": 1, "add_task": 3, "count_open": 1}
		err := waitUntil(5*time.Second, func() bool {
			s.must("audit.query", map[string]any{"limit": 1000}, &got)
			n := map[string]int{}
			for _, e := range got.Entries {
				if e.Caller == "mcp" {
					n[e.Tool]++
				}
			}
			for tool, c := range want {
				if n[tool] < c {
					return false
				}
			}
			return true
		})
		if err != nil {
			t.Fatalf("audit rows with caller mcp: %+v", got.Entries)
		}
		// Nobody but the MCP client called these tools in this browser.
		for _, e := range got.Entries {
			if _, ours := want[e.Tool]; !ours {
				continue
			}
			if e.Caller != "mcp" {
				t.Errorf("audit row of %s has caller %q, want mcp: %+v", e.Tool, e.Caller, e)
			}
			if (e.Tool == "add_task" || e.Tool == "count_open") && e.Origin != srv.URL {
				t.Errorf("audit row of %s has origin %q, want %q", e.Tool, e.Origin, srv.URL)
			}
		}
	})
}

func mustJSONString(v any) string { b, _ := json.Marshal(v); return string(b) }
