package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/storage"
)

// ferryCmd runs the real binary with its own data directory.
func ferryCmd(t *testing.T, home string, args ...string) (stdout string, code int) {
	t.Helper()
	cmd := exec.Command(ferryBin, args...)
	cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	if strings.TrimSpace(errb.String()) != "" {
		t.Logf("stderr of %v: %s", args, errb.String())
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

type listed struct {
	Tools []struct {
		Name       string          `json:"name"`
		Source     string          `json:"source"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"tools"`
	Unavailable []struct{ Name, Reason string } `json:"unavailable"`
}

func TestToolsCommand(t *testing.T) {
	home := t.TempDir()
	out, code := ferryCmd(t, home, "tools", "--json")
	var l listed
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
		t.Fatalf("exit %d: %s", code, out)
	}
	found := false
	for _, tool := range l.Tools {
		if tool.Name == "ask_user" && strings.Contains(string(tool.Parameters), `"question"`) {
			found = true
		}
	}
	if !found {
		t.Fatalf("ask_user with its schema missing from %s", out)
	}
	out, code = ferryCmd(t, home, "tools")
	if code != 0 || !strings.Contains(out, "ask_user") || !strings.Contains(out, "TOKENS") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if _, code = ferryCmd(t, home, "tools", "extra"); code != 2 {
		t.Fatalf("usage error exit %d", code)
	}
}

// TestCallCodes reproduces result codes through the real binary with the real
// builtin tools. Every code of PROTOCOL.md's table of tool results has a case against the real binary:
//   - here: NOT_FOUND (unknown name), INVALID_PARAMS (bad ask_user arguments,
//     arguments not JSON), ACTION_UNAVAILABLE (ask_user, no UI connected), and through
//     list_tasks PERMISSION_DENIED (tools.disabled), LOOP_DETECTED (--depth 4),
//     USER_REJECTED (tools.confirm, and no UI to ask);
//   - TestCallWebFetchSSRFGuard: PERMISSION_DENIED (the SSRF guard), HANDLER_ERROR
//     (a 404 page), TIMEOUT (a server slower than fetch.timeout_seconds);
//   - TestToolsCallCodesInHostMode (host mode, the test playing the extension):
//     USER_REJECTED (the person says no), CONFIRM_TIMEOUT (the person is silent),
//     RATE_LIMITED (tools.rate.global);
//   - EXPECTATION_FAILED needs a tool that declares an observable result, which only
//     page actions do: host/tools TestEveryCode covers it through the pipeline.
func TestCallCodes(t *testing.T) {
	home := t.TempDir()
	type want struct {
		args []string
		code string
	}
	cases := []want{
		{[]string{"call", "no_such_tool"}, "NOT_FOUND"},
		{[]string{"call", "ask_user", `{"question": ""}`}, "INVALID_PARAMS"},
		{[]string{"call", "ask_user", `{"question": "x", "colour": 1}`}, "INVALID_PARAMS"},
		{[]string{"call", "ask_user", `{not json`}, "INVALID_PARAMS"},
		{[]string{"call", "ask_user", `{"question": "Proceed?"}`}, "ACTION_UNAVAILABLE"},
	}
	for _, c := range cases {
		out, code := ferryCmd(t, home, c.args...)
		var res struct {
			Success bool
			Code    string
			Reason  string
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 || res.Success || res.Code != c.code || res.Reason == "" {
			t.Errorf("%v: exit %d, %s; want %s", c.args, code, out, c.code)
		}
	}
	calls := len(cases)

	// list_tasks is always available and needs no argument: the policy codes are
	// reached through it.
	for _, c := range []struct {
		setting, value string
		args           []string
		code           string
	}{
		{"", "", []string{"call", "--depth", "4", "list_tasks"}, "LOOP_DETECTED"},
		{"tools.confirm", "list_tasks", []string{"call", "list_tasks"}, "USER_REJECTED"},
		{"tools.disabled", "list_tasks", []string{"call", "list_tasks", "{}"}, "PERMISSION_DENIED"},
	} {
		if c.setting != "" {
			if _, code := ferryCmd(t, home, "config", "set", c.setting, c.value); code != 0 {
				t.Fatalf("config set %s", c.setting)
			}
		}
		out, code := ferryCmd(t, home, c.args...)
		if code != 1 || !strings.Contains(out, `"code":"`+c.code+`"`) {
			t.Errorf("%v: exit %d, %s; want %s", c.args, code, out, c.code)
		}
		calls++
	}

	// Every call left its audit row, with a trace id.
	db, err := storage.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryAudit(context.Background(), storage.AuditFilter{})
	if err != nil || len(rows) != calls {
		t.Fatalf("%d audit rows for %d calls (%v)", len(rows), calls, err)
	}
	for _, r := range rows {
		if r.Caller != "cli" || r.TraceID == "" || r.Success {
			t.Fatalf("audit row %+v", r)
		}
	}
}

func TestCallUsage(t *testing.T) {
	if _, code := ferryCmd(t, t.TempDir(), "call"); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if _, code := ferryCmd(t, t.TempDir(), "call", "--depth", "-1", "x"); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
}

// TestCallWebFetchSSRFGuard is the guard as a user meets it: a loopback address is
// refused until fetch.allow_private_hosts names it.
func TestCallWebFetchSSRFGuard(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
			return
		case "/slow":
			time.Sleep(3 * time.Second)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html><head><title>Local</title></head><body><main><h1>Hello</h1><p>From loopback.</p></main></body></html>")
	}))
	defer srv.Close()
	home := t.TempDir()
	args := []string{"call", "web_fetch", `{"url": "` + srv.URL + `/page"}`}

	out, code := ferryCmd(t, home, args...)
	if code != 1 || !strings.Contains(out, `"code":"PERMISSION_DENIED"`) || !strings.Contains(out, "fetch.allow_private_hosts") {
		t.Fatalf("loopback fetch not refused by the guard: exit %d, %s", code, out)
	}
	if _, code := ferryCmd(t, home, "config", "set", "fetch.allow_private_hosts", "127.0.0.1"); code != 0 {
		t.Fatal("config set fetch.allow_private_hosts")
	}
	out, code = ferryCmd(t, home, args...)
	var res struct {
		Success bool
		Result  struct {
			Content  string `json:"content"`
			FinalURL string `json:"final_url"`
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.Success ||
		!strings.Contains(res.Result.Content, "From loopback.") || res.Result.FinalURL != srv.URL+"/page" {
		t.Fatalf("allowed fetch: exit %d, %s", code, out)
	}

	// The handler's own failure, and a server slower than the fetch timeout.
	out, code = ferryCmd(t, home, "call", "web_fetch", `{"url": "`+srv.URL+`/missing"}`)
	if code != 1 || !strings.Contains(out, `"code":"HANDLER_ERROR"`) || !strings.Contains(out, "404") {
		t.Fatalf("404 page: exit %d, %s; want HANDLER_ERROR naming the status", code, out)
	}
	ferryCmd(t, home, "config", "set", "fetch.timeout_seconds", "1")
	out, code = ferryCmd(t, home, "call", "web_fetch", `{"url": "`+srv.URL+`/slow"}`)
	if code != 1 || !strings.Contains(out, `"code":"TIMEOUT"`) {
		t.Fatalf("slow page: exit %d, %s; want TIMEOUT", code, out)
	}
}

// TestToolsCallCodesInHostMode plays the extension against the real binary in host
// mode, for the codes that need a person (or their silence) or a long-lived process.
func TestToolsCallCodesInHostMode(t *testing.T) {
	home := t.TempDir()
	for _, kv := range [][2]string{{"tools.confirm", "list_tasks"}, {"tools.confirm_timeout_seconds", "1"}} {
		if _, code := ferryCmd(t, home, "config", "set", kv[0], kv[1]); code != 0 {
			t.Fatalf("config set %s", kv[0])
		}
	}
	p := startHost(t, home, pinnedOrigin)
	// call sends tools.call and answers the host's ui.confirm with answer (nil: stay
	// silent), returning the result.
	call := func(id int, answer any) map[string]any {
		p.send(req(id, "tools.call", map[string]any{"name": "list_tasks", "arguments": map[string]any{}}))
		for {
			m := p.recv()
			if m["method"] == "ui.confirm" {
				params := m["params"].(map[string]any)
				if params["tool"] != "list_tasks" {
					t.Fatalf("confirmation for %v", params)
				}
				if answer != nil {
					p.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": answer})
				}
				continue
			}
			if m["id"] == float64(id) {
				return m["result"].(map[string]any)
			}
		}
	}
	if r := call(1, map[string]any{"approved": true}); r["success"] != true {
		t.Fatalf("approved call: %v", r)
	}
	if r := call(2, map[string]any{"approved": false}); r["code"] != "USER_REJECTED" {
		t.Fatalf("rejected call: %v", r)
	}
	if r := call(3, nil); r["code"] != "CONFIRM_TIMEOUT" {
		t.Fatalf("unanswered call: %v", r)
	}

	// The global rate limit counts the calls of this host process.
	home2 := t.TempDir()
	ferryCmd(t, home2, "config", "set", "tools.rate.global", "2")
	q := startHost(t, home2, pinnedOrigin)
	var last map[string]any
	for i := 1; i <= 3; i++ {
		q.send(req(i, "tools.call", map[string]any{"name": "list_tasks", "arguments": map[string]any{}}))
		last = q.recv()["result"].(map[string]any)
	}
	if last["code"] != "RATE_LIMITED" || !strings.Contains(last["reason"].(string), "tools.rate.global") {
		t.Fatalf("third call over a limit of 2 a minute: %v", last)
	}
}
