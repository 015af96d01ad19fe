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
// builtin tools. Which code is covered where:
//   - here, always: NOT_FOUND (unknown name), INVALID_PARAMS (bad ask_user
//     arguments, arguments not JSON), ACTION_UNAVAILABLE (ask_user, no UI connected);
//   - here, through list_tasks: PERMISSION_DENIED (tools.disabled), LOOP_DETECTED
//     (--depth 4), USER_REJECTED (tools.confirm, and no UI to ask);
//   - host/tools TestEveryCode, through the pipeline with test tools: every code,
//     including RATE_LIMITED, CONFIRM_TIMEOUT, HANDLER_ERROR, TIMEOUT and
//     EXPECTATION_FAILED, which a one-shot CLI process without a UI or page
//     actions cannot reach.
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
}
