package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/agent"
	"github.com/ferryhq/ferry/host/control"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSession starts `ferry mcp` with FERRY_HOME=home and connects the official SDK's
// client to it over stdio.
func mcpSession(t *testing.T, home string, onListChanged func()) (*mcp.ClientSession, *lockedWriter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := exec.Command(ferryBin, "mcp")
	cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
	stderr := &lockedWriter{b: &strings.Builder{}}
	cmd.Stderr = stderr
	opts := &mcp.ClientOptions{}
	if onListChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { onListChanged() }
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "ferry-test", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to ferry mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

// lockedWriter lets the test read stderr while exec's copier writes it.
type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

// ferryResult decodes the structured Ferry result of an MCP call and checks that
// isError agrees with it and that the text content carries the same JSON.
func ferryResult(t *testing.T, r *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(r.StructuredContent)
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("structured content is not a Ferry result: %s", b)
	}
	if r.IsError == (res["success"] == true) {
		t.Errorf("isError %v but success %v", r.IsError, res["success"])
	}
	if len(r.Content) != 1 {
		t.Fatalf("want one text content, got %d", len(r.Content))
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", r.Content[0])
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &fromText); err != nil || fromText["success"] != res["success"] {
		t.Errorf("text content %q does not carry the result", tc.Text)
	}
	return res
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) map[string]any {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return ferryResult(t, r)
}

func TestMCPWithoutHost(t *testing.T) {
	home := t.TempDir()
	cs, stderr := mcpSession(t, home, nil)
	if ir := cs.InitializeResult(); ir == nil || !strings.Contains(ir.Instructions, agent.ToolGuide) {
		t.Errorf("the instructions lack what the tools share (agent.ToolGuide): %+v", ir)
	}
	names := toolNames(t, cs)
	for _, want := range []string{"list_tasks", "create_task", "ferry_bind_tab", "ferry_list_tabs", "list_tabs", "web_fetch"} {
		if names[want] == nil && want != "web_fetch" {
			t.Errorf("tools/list lacks %s", want)
		}
	}
	for _, risky := range []string{"execute_script", "browser_navigate", "close_tab", "opfs_delete"} {
		if names[risky] != nil {
			t.Errorf("%s is offered although mcp.allowed_tools excludes it by default", risky)
		}
	}
	if s := names["create_task"].InputSchema.(map[string]any); s["type"] != "object" {
		t.Errorf("create_task's schema: %v", s)
	}

	res := callTool(t, cs, "create_task", map[string]any{"subject": "write the MCP test"})
	if res["success"] != true {
		t.Fatalf("create_task: %v", res)
	}
	res = callTool(t, cs, "list_tasks", map[string]any{})
	if res["success"] != true || !strings.Contains(mustJSON(res), "write the MCP test") {
		t.Fatalf("list_tasks: %v", res)
	}
	// An unsuccessful call: isError, with Ferry's code.
	res = callTool(t, cs, "create_task", map[string]any{"nope": 1})
	if res["code"] != "INVALID_PARAMS" {
		t.Errorf("create_task with bad arguments: %v", res)
	}
	res = callTool(t, cs, "list_tabs", map[string]any{})
	if res["code"] != "ACTION_UNAVAILABLE" || !strings.Contains(res["reason"].(string), "no browser") {
		t.Errorf("list_tabs without a browser: %v", res)
	}
	res = callTool(t, cs, "ferry_list_tabs", map[string]any{})
	if res["code"] != "ACTION_UNAVAILABLE" {
		t.Errorf("ferry_list_tabs without a browser: %v", res)
	}
	cs.Close()
	if !strings.Contains(stderr.String(), "no running browser host") {
		t.Errorf("stderr does not say why browser tools are unavailable: %s", stderr)
	}

	// The calls are in the audit log with the caller "mcp".
	db, err := storage.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryAudit(context.Background(), storage.AuditFilter{Tool: "create_task"})
	if err != nil || len(rows) != 2 {
		t.Fatalf("audit rows for create_task: %v %v", rows, err)
	}
	for _, r := range rows {
		if r.Caller != "mcp" {
			t.Errorf("audit caller %q, want mcp", r.Caller)
		}
	}
}

func TestMCPAllowedToolsSetting(t *testing.T) {
	home := t.TempDir()
	if _, stderr, code := runFerry(t, home, "", "config", "set", control.SettingAllowedTools, "list_tasks"); code != 0 {
		t.Fatalf("config set: %s", stderr)
	}
	changed := make(chan struct{}, 10)
	cs, _ := mcpSession(t, home, func() { changed <- struct{}{} })
	names := toolNames(t, cs)
	if names["list_tasks"] == nil || names["create_task"] != nil || names["ferry_bind_tab"] == nil {
		t.Errorf("with mcp.allowed_tools=list_tasks the tools are %v", keys(names))
	}
	// A change of the list reaches the client as tools/list_changed (polled each second).
	if _, stderr, code := runFerry(t, home, "", "config", "set", control.SettingAllowedTools, "list_tasks,create_task"); code != 0 {
		t.Fatalf("config set: %s", stderr)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after the allowed tools changed")
	}
	if names := toolNames(t, cs); names["create_task"] == nil {
		t.Errorf("create_task not offered after it was allowed: %v", keys(names))
	}
}

// A call of a tool the client was not offered, with no browser host: the pipeline
// refuses it (not the SDK's "unknown tool"), and the refusal is an audit row, as a
// call through a live host is (TestMCPWithLiveHost).
func TestMCPRefusalsAuditedWithoutHost(t *testing.T) {
	home := t.TempDir()
	if _, stderr, code := runFerry(t, home, "", "config", "set", control.SettingAllowedTools, "list_tasks"); code != 0 {
		t.Fatalf("config set: %s", stderr)
	}
	cs, _ := mcpSession(t, home, nil)
	if names := toolNames(t, cs); names["create_task"] != nil {
		t.Fatalf("create_task is offered although mcp.allowed_tools excludes it: %v", keys(names))
	}
	res := callTool(t, cs, "create_task", map[string]any{"subject": "never"})
	if res["code"] != "PERMISSION_DENIED" || !strings.Contains(mustJSON(res["reason"]), control.SettingAllowedTools) {
		t.Errorf("create_task excluded by mcp.allowed_tools: %v", res)
	}
	res = callTool(t, cs, "no_such_tool", map[string]any{})
	if res["code"] != "NOT_FOUND" {
		t.Errorf("a tool that does not exist: %v", res)
	}
	if res := callTool(t, cs, "list_tasks", map[string]any{}); res["success"] != true || strings.Contains(mustJSON(res), "never") {
		t.Errorf("list_tasks after the refused create_task: %v", res)
	}
	cs.Close()
	db, err := storage.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for tool, code := range map[string]string{"create_task": "PERMISSION_DENIED", "no_such_tool": "NOT_FOUND"} {
		rows, err := db.QueryAudit(context.Background(), storage.AuditFilter{Tool: tool})
		if err != nil || len(rows) != 1 || rows[0].Caller != "mcp" || rows[0].Code != code || rows[0].Success {
			t.Errorf("audit rows for the refused %s: %+v %v, want one of caller mcp and code %s", tool, rows, err, code)
		}
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// waitForHost waits until the host started in home listens on its control socket.
func waitForHost(t testing.TB, home string) control.Info {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if hosts, _ := control.List(home); len(hosts) > 0 {
			return hosts[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the host never listened on a control socket")
	return control.Info{}
}

func TestMCPWithLiveHost(t *testing.T) {
	home := t.TempDir()
	h := startHost(t, home, pinnedOrigin)
	info := waitForHost(t, home)
	if info.Origin != pinnedOrigin {
		t.Errorf("host info origin %q", info.Origin)
	}

	cs, stderr := mcpSession(t, home, nil)
	names := toolNames(t, cs)
	if names["list_tasks"] == nil || names["ferry_bind_tab"] == nil {
		t.Fatalf("tools from the live host: %v", keys(names))
	}
	res := callTool(t, cs, "create_task", map[string]any{"subject": "through the socket"})
	if res["success"] != true {
		t.Fatalf("create_task through the host: %v", res)
	}
	if !strings.Contains(stderr.String(), "serving the browser host") {
		t.Errorf("ferry mcp did not use the live host: %s", stderr)
	}

	// The host's own audit log has the call, with the caller "mcp".
	c, err := control.Dial(context.Background(), home, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out struct {
		Entries []storage.AuditEntry `json:"entries"`
	}
	if err := c.Call(context.Background(), "audit.query", map[string]any{"tool": "create_task"}, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Entries) != 1 || out.Entries[0].Caller != "mcp" {
		t.Fatalf("audit rows: %+v", out.Entries)
	}
	// A socket client that names no caller (or a caller it may not be) is "socket".
	var r map[string]any
	if err := c.Call(context.Background(), "tools.call", map[string]any{"name": "list_tasks", "caller": "extension"}, &r); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(context.Background(), "audit.query", map[string]any{"tool": "list_tasks"}, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Entries) != 1 || out.Entries[0].Caller != "socket" {
		t.Fatalf("audit rows of a socket call: %+v", out.Entries)
	}
	// Risky tools are refused to outside agents even through the socket.
	if err := c.Call(context.Background(), "tools.call", map[string]any{"name": "execute_script", "arguments": map[string]any{"code": "1"}}, &r); err != nil {
		t.Fatal(err)
	}
	if r["code"] != "PERMISSION_DENIED" {
		t.Errorf("execute_script through the socket: %v", r)
	}
	// And through `ferry mcp`, which does not offer it: the host refuses and audits it.
	if res := callTool(t, cs, "execute_script", map[string]any{"code": "1"}); res["code"] != "PERMISSION_DENIED" {
		t.Errorf("execute_script through ferry mcp: %v", res)
	}
	if err := c.Call(context.Background(), "audit.query", map[string]any{"tool": "execute_script"}, &out); err != nil {
		t.Fatal(err)
	}
	mcpRows := 0
	for _, e := range out.Entries {
		if e.Caller == "mcp" && e.Code == "PERMISSION_DENIED" {
			mcpRows++
		}
	}
	if mcpRows != 1 {
		t.Errorf("audit rows of execute_script refused to ferry mcp: %d, want 1 (%+v)", mcpRows, out.Entries)
	}
	// Extension-only methods are not reachable.
	if err := c.Call(context.Background(), "page.actions.update", map[string]any{}, nil); err == nil {
		t.Errorf("page.actions.update answered on the socket")
	}

	// When the host ends, its files go.
	h.stdin.Close()
	h.cmd.Wait()
	if hosts, _ := control.List(home); len(hosts) != 0 {
		t.Errorf("hosts after the host ended: %+v", hosts)
	}
}

// Every tool `ferry mcp` offers has an input schema every major client and model
// vendor takes (tools.CheckPortable: the MCP Inspector's, Anthropic's and OpenAI's
// rules), and ask_user, which nobody could answer here, is not offered.
func TestMCPSchemasPortable(t *testing.T) {
	home := t.TempDir()
	if _, stderr, code := runFerry(t, home, "", "config", "set", control.SettingAllowedTools, "*"); code != 0 {
		t.Fatalf("config set: %s", stderr)
	}
	cs, _ := mcpSession(t, home, nil)
	names := toolNames(t, cs)
	if len(names) < 25 {
		t.Fatalf("only %d tools offered: %v", len(names), keys(names))
	}
	for _, want := range []string{"browser_click", "browser_type", "browser_select", "browser_navigate", "browser_scroll", "execute_script"} {
		if names[want] == nil {
			t.Errorf("%s is not offered with mcp.allowed_tools=*", want)
		}
	}
	if names[tools.AskUserName] != nil {
		t.Errorf("ask_user is offered although no UI can ever answer it here")
	}
	for name, tool := range names {
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		if problems := tools.CheckPortable(b); len(problems) > 0 {
			t.Errorf("%s's input schema is not portable:\n  %s\n  %s", name, strings.Join(problems, "\n  "), b)
		}
		if !mcpNamePattern.MatchString(name) {
			t.Errorf("tool name %q is outside MCP's [A-Za-z0-9_.-]{1,128}", name)
		}
	}
	// The schemas as the host declares them (what its own model providers send too),
	// not only the copies MCP clients are shown, keep the rules.
	out, stderr, code := runFerry(t, home, "", "tools", "--json")
	if code != 0 {
		t.Fatalf("ferry tools --json: %s", stderr)
	}
	var declared struct {
		Tools []struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &declared); err != nil || len(declared.Tools) < 25 {
		t.Fatalf("ferry tools --json: %v (%d tools)", err, len(declared.Tools))
	}
	for _, tool := range declared.Tools {
		if problems := tools.CheckPortable(tool.Parameters); len(problems) > 0 {
			t.Errorf("%s's declared schema is not portable:\n  %s\n  %s", tool.Name, strings.Join(problems, "\n  "), tool.Parameters)
		}
	}
	// The element tools' rule, one of ref and selector, is said in words where every
	// client reads it (the server's instructions, from the tool guide) since their
	// schema no longer says it, and the host still refuses both or neither before
	// anything is asked or run.
	if !strings.Contains(agent.ToolGuide, "by ref or by selector, not both") {
		t.Errorf("the tool guide no longer says to give an element by ref or by selector, not both:\n%s", agent.ToolGuide)
	}
	for _, args := range []map[string]any{{}, {"ref": "e1", "selector": "#a"}} {
		if res := callTool(t, cs, "browser_click", args); res["code"] != "INVALID_PARAMS" {
			t.Errorf("browser_click %v: %v", args, res)
		}
	}
	if res := callTool(t, cs, "browser_navigate", map[string]any{"url": "https://a.example/", "action": "back"}); res["code"] != "INVALID_PARAMS" {
		t.Errorf("browser_navigate with url and action: %v", res)
	}
}
