package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/control"
	"github.com/ferryhq/ferry/storage"
)

// ferryRun runs the real binary in UTC, with no $COLUMNS unless env gives one.
func ferryRun(t *testing.T, home string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return ferryIn(t, home, "", append([]string{"TZ=UTC", "COLUMNS="}, env...), args...)
}

// auditJSON runs ferry audit --json with the flags and decodes its lines.
func auditJSON(t *testing.T, home string, flags ...string) []storage.AuditEntry {
	t.Helper()
	out, stderr, code := ferryRun(t, home, nil, append([]string{"audit", "--json"}, flags...)...)
	if code != 0 {
		t.Fatalf("ferry audit --json %v: exit %d: %s", flags, code, stderr)
	}
	var rows []storage.AuditEntry
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e storage.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("a line of ferry audit --json is not a row: %q (%v)", sc.Text(), err)
		}
		rows = append(rows, e)
	}
	return rows
}

func codesOf(rows []storage.AuditEntry) []string {
	var out []string
	for _, r := range rows {
		c := r.Code
		if r.Success {
			c = "ok"
		}
		out = append(out, r.Tool+":"+c)
	}
	return out
}

// TestAuditCommand: the calls ferry call makes, successes and refusals, are what
// ferry audit shows, newest first, and each filter selects what it names.
func TestAuditCommand(t *testing.T) {
	home := t.TempDir()
	before := time.Now().UTC()
	call := func(args ...string) {
		t.Helper()
		ferryRun(t, home, nil, append([]string{"call"}, args...)...)
	}
	call("list_tasks")
	call("no_such_tool")
	call("ask_user", `{"question": ""}`)
	// A tool name a page could have chosen, with a terminal escape in it.
	call("evil\x1b[2J\x1b]0;owned\x07")
	ferryRun(t, home, nil, "config", "set", "tools.disabled", "list_tasks")
	call("list_tasks")
	ferryRun(t, home, nil, "config", "set", "tools.disabled", "")
	ferryRun(t, home, nil, "config", "set", "tools.confirm", "list_tasks")
	call("list_tasks")

	all := auditJSON(t, home)
	want := []string{"list_tasks:USER_REJECTED", "list_tasks:PERMISSION_DENIED", "evil\x1b[2J\x1b]0;owned\x07:NOT_FOUND",
		"ask_user:INVALID_PARAMS", "no_such_tool:NOT_FOUND", "list_tasks:ok"}
	if got := codesOf(all); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("ferry audit --json lists\n  %q\nwant, newest first,\n  %q", got, want)
	}
	for _, r := range all {
		if r.Caller != "cli" || r.TraceID == "" || r.Time.Before(before) {
			t.Errorf("row %+v: want caller cli, a trace id and a time after the test began", r)
		}
	}
	if all[0].Result == "" || !strings.Contains(all[1].Result, "tools.disabled") {
		t.Errorf("the rows carry no reasons: %q, %q", all[0].Result, all[1].Result)
	}

	for _, c := range []struct {
		flags []string
		want  []string
	}{
		{[]string{"--code", "PERMISSION_DENIED"}, []string{"list_tasks:PERMISSION_DENIED"}},
		{[]string{"--code", "not_found", "--limit", "1"}, []string{want[2]}},
		{[]string{"--tool", "list_tasks"}, []string{want[0], want[1], want[5]}},
		{[]string{"--tool", "list_tasks", "--code", "USER_REJECTED"}, []string{want[0]}},
		{[]string{"--caller", "cli", "--limit", "2"}, want[:2]},
		{[]string{"--caller", "mcp"}, nil},
		{[]string{"--origin", "https://example.com"}, nil},
		{[]string{"--limit", "0"}, want},
		{[]string{"--since", "1h"}, want},
		{[]string{"--since", all[5].Time.Format("2006-01-02"), "--until", "now"}, want},
		{[]string{"--until", "1h"}, nil},
		{[]string{"--since", time.Now().Add(time.Minute).UTC().Format(time.RFC3339)}, nil},
		{[]string{"--since", before.Add(-time.Second).Format(time.RFC3339Nano), "--until", all[4].Time.Add(time.Nanosecond).Format(time.RFC3339Nano)}, want[4:]},
		{[]string{"--until", all[0].Time.Format("2006-01-02")}, want},
		{[]string{"--until", all[5].Time.AddDate(0, 0, -1).Format("2006-01-02")}, nil},
	} {
		if got := codesOf(auditJSON(t, home, c.flags...)); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("ferry audit %v: %q, want %q", c.flags, got, c.want)
		}
	}

	// The table: the same rows, one line each, codes shown, nothing a terminal acts on.
	out, stderr, code := ferryRun(t, home, nil, "audit")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != 0 || len(lines) != len(want)+1 || !strings.HasPrefix(lines[0], "TIME (UTC)") {
		t.Fatalf("ferry audit: exit %d, %d lines:\n%s%s", code, len(lines), out, stderr)
	}
	for i, c := range []string{"USER_REJECTED", "PERMISSION_DENIED", "NOT_FOUND", "INVALID_PARAMS", "NOT_FOUND", " ok "} {
		if !strings.Contains(lines[i+1], c) {
			t.Errorf("line %d lacks %s: %q", i+1, c, lines[i+1])
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, "evil\uFFFD[2J\uFFFD]0;owned\uFFFD") {
		t.Errorf("control characters reached the table:\n%q", out)
	}
	// Not a terminal and no $COLUMNS: summaries are whole.
	if !strings.Contains(lines[2], "list_tasks is disabled by the setting tools.disabled") {
		t.Errorf("summary cut without a width: %q", lines[2])
	}
	// With a width every line fits, and the summary gives way.
	out, _, _ = ferryRun(t, home, []string{"COLUMNS=72"}, "audit")
	cutSome := false
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if n := displayWidth(l); n > 72 {
			t.Errorf("a line of %d columns at COLUMNS=72: %q", n, l)
		}
		cutSome = cutSome || strings.HasSuffix(l, "…")
	}
	if !cutSome || !strings.Contains(out, "PERMISSION_DENIED") {
		t.Errorf("at COLUMNS=72 no summary was cut, or the codes went:\n%s", out)
	}
	// An empty answer says so, and is no error.
	out, stderr, code = ferryRun(t, home, nil, "audit", "--caller", "page")
	if code != 0 || out != "" || !strings.Contains(stderr, "no rows match") {
		t.Errorf("no match: exit %d, %q, %q", code, out, stderr)
	}
	// --limit reached: the table says how to see more.
	_, stderr, _ = ferryRun(t, home, nil, "audit", "--limit", "2")
	if !strings.Contains(stderr, "--limit") {
		t.Errorf("a cut-off table does not say so: %q", stderr)
	}
}

// Bad flags are refused with what is wrong and what to give, before the database is
// opened; help is on stdout.
func TestAuditCommandBadInput(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--since", "2026-13-01"}, []string{`--since "2026-13-01"`, "month out of range", "2026-12-01T09:30:00Z"}},
		{[]string{"--until", "2026-02-30"}, []string{"day out of range"}},
		{[]string{"--since", "last tuesday"}, []string{"not a date, a time or an age", "7d"}},
		{[]string{"--since", "2026-12-01T25:00"}, []string{"not a time like"}},
		{[]string{"--since", "5"}, []string{"not a date"}},
		{[]string{"--since", "1h", "--until", "2h"}, []string{"is not before --until"}},
		{[]string{"--code", "REJECTED"}, []string{`"REJECTED" is not a result code`, "USER_REJECTED"}},
		{[]string{"--limit", "-1"}, []string{"--limit -1"}},
		{[]string{"--limit", "many"}, []string{"invalid value"}},
		{[]string{"list_tasks"}, []string{`unexpected argument "list_tasks"`}},
	} {
		out, stderr, code := ferryRun(t, home, nil, append([]string{"audit"}, c.args...)...)
		if code != 2 || out != "" {
			t.Errorf("ferry audit %v: exit %d, stdout %q; want 2 and nothing", c.args, code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("ferry audit %v: %q lacks %q", c.args, stderr, w)
			}
		}
	}
	if _, err := os.Stat(home + "/ferry.db"); err == nil {
		t.Error("a refused command opened (created) the database")
	}
	out, _, code := ferryRun(t, home, nil, "audit", "-h")
	if code != 0 || !strings.Contains(out, "DATE is one of") || !strings.Contains(out, "within a second") {
		t.Errorf("ferry audit -h: exit %d: %s", code, out)
	}
}

// A running host's rows reach ferry audit while it runs: a call the extension made,
// with its origin and caller, found by both filters (the origin as a person might
// type it).
func TestAuditCommandSeesRunningHost(t *testing.T) {
	home := t.TempDir()
	p := startHost(t, home, pinnedOrigin)
	p.send(req(1, "tools.call", map[string]any{"name": "list_tasks", "arguments": map[string]any{}, "origin": "https://shop.example"}))
	if m := p.recv(); m["result"].(map[string]any)["success"] != true {
		t.Fatalf("tools.call: %v", m)
	}
	var rows []storage.AuditEntry
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if rows = auditJSON(t, home, "--origin", "HTTPS://Shop.Example:443/", "--caller", "extension"); len(rows) > 0 {
			break
		}
	}
	if len(rows) != 1 || rows[0].Tool != "list_tasks" || rows[0].Origin != "https://shop.example" {
		t.Fatalf("the running host's row: %+v", rows)
	}
	// The options page's audit.query takes the caller too.
	p.send(req(2, "audit.query", map[string]any{"caller": "extension"}))
	if got := p.recv()["result"].(map[string]any)["entries"].([]any); len(got) != 1 {
		t.Fatalf("audit.query {caller: extension}: %v", got)
	}
	p.send(req(3, "audit.query", map[string]any{"caller": "mcp"}))
	if got := p.recv()["result"].(map[string]any)["entries"].([]any); len(got) != 0 {
		t.Fatalf("audit.query {caller: mcp}: %v", got)
	}

	// An outside agent refused a risky tool: the refusal is in the log, under the
	// socket's caller, whatever the client claimed to be.
	waitForHost(t, home)
	c, err := control.Dial(context.Background(), home, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var r map[string]any
	if err := c.Call(context.Background(), "tools.call", map[string]any{"name": "execute_script", "arguments": map[string]any{"code": "1"}, "caller": "extension"}, &r); err != nil || r["code"] != "PERMISSION_DENIED" {
		t.Fatalf("execute_script through the socket: %v %v", r, err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if rows = auditJSON(t, home, "--caller", "socket", "--code", "PERMISSION_DENIED"); len(rows) > 0 {
			break
		}
	}
	if len(rows) != 1 || rows[0].Tool != "execute_script" || !strings.Contains(rows[0].Result, "mcp.allowed_tools") {
		t.Fatalf("the socket's refusal in ferry audit: %+v", rows)
	}
}

func TestParseWhen(t *testing.T) {
	loc := time.FixedZone("X", 2*3600)
	now := time.Date(2026, 12, 1, 15, 30, 0, 0, loc)
	for _, c := range []struct {
		v    string
		end  bool
		want time.Time
	}{
		{"", false, time.Time{}},
		{"now", false, now},
		{"today", false, time.Date(2026, 12, 1, 0, 0, 0, 0, loc)},
		{"today", true, time.Date(2026, 12, 2, 0, 0, 0, 0, loc)},
		{"Yesterday", false, time.Date(2026, 11, 30, 0, 0, 0, 0, loc)},
		{"yesterday", true, time.Date(2026, 12, 1, 0, 0, 0, 0, loc)},
		{"2026-11-05", false, time.Date(2026, 11, 5, 0, 0, 0, 0, loc)},
		{"2026-11-05", true, time.Date(2026, 11, 6, 0, 0, 0, 0, loc)},
		{"2026-12-31", true, time.Date(2027, 1, 1, 0, 0, 0, 0, loc)},
		{"2026-11-05T09:30", true, time.Date(2026, 11, 5, 9, 30, 0, 0, loc)},
		{"2026-11-05 09:30:15.5", false, time.Date(2026, 11, 5, 9, 30, 15, 5e8, loc)},
		{"2026-11-05T09:30:00Z", false, time.Date(2026, 11, 5, 9, 30, 0, 0, time.UTC)},
		{"2026-11-05t09:30:00z", false, time.Date(2026, 11, 5, 9, 30, 0, 0, time.UTC)},
		{"2026-11-05T09:30:00.123456789-05:00", false, time.Date(2026, 11, 5, 14, 30, 0, 123456789, time.UTC)},
		{"90m", false, now.Add(-90 * time.Minute)},
		{"-1h", false, now.Add(-time.Hour)},
		{"7d", false, now.Add(-7 * 24 * time.Hour)},
		{"2w", true, now.Add(-14 * 24 * time.Hour)},
		{"1w2d3h", false, now.Add(-(9*24 + 3) * time.Hour)},
		{"1d12h", false, now.Add(-36 * time.Hour)},
	} {
		got, err := parseWhen("since", c.v, now, c.end)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("parseWhen(%q, end=%v) = %v, %v; want %v", c.v, c.end, got, err, c.want)
		}
	}
	for _, bad := range []string{"d", "1x", "1d1d", "w1", "2026-1-5", "5", "1.5d", "+-1h", "2026-12-01T09", "--1h", "1h-30m"} {
		if got, err := parseWhen("until", bad, now, true); err == nil || !strings.Contains(err.Error(), "--until") {
			t.Errorf("parseWhen(%q) = %v, %v; want an error naming --until", bad, got, err)
		}
	}
}

// FuzzParseWhen: any value either fails with the flag's name or gives a time; an
// age never lies in the future.
func FuzzParseWhen(f *testing.F) {
	for _, s := range []string{"2026-12-01", "1d12h", "today", "2026-12-01T09:30:00+01:00", "-90m", "2026-13-01", "9999999999w"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 1, 15, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		got, err := parseWhen("since", v, now, false)
		if err != nil {
			if !strings.Contains(err.Error(), "--since") {
				t.Fatalf("error without the flag's name: %v", err)
			}
			return
		}
		if _, ok := parseAge(strings.TrimSpace(v)); ok && got.After(now) {
			t.Fatalf("age %q is %v, after now", v, got)
		}
	})
}

func TestCutAndWidth(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdef", 5, "abcd…"},
		{"日本語のテキスト", 7, "日本語…"},
		{"日本語", 6, "日本語"},
		{"abc", 0, ""},
		{"e\u0301cole", 4, "e\u0301co…"},
	} {
		if got := cut(c.s, c.n); got != c.want || displayWidth(got) > c.n {
			t.Errorf("cut(%q, %d) = %q (%d columns), want %q", c.s, c.n, got, displayWidth(got), c.want)
		}
	}
	if got := terminalSafe("a\n\tb\u202Ec\x1b[0m"); got != "a b\uFFFDc\uFFFD[0m" {
		t.Errorf("terminalSafe = %q", got)
	}
}
