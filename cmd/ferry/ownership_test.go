package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func permOf(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// The finding: an existing ferry.db or data directory with mode 0644 stayed so. The
// host now tightens what it owns when it starts, and says so in its log.
func TestHostTightensItsDataDirectory(t *testing.T) {
	home := t.TempDir()
	if _, stderr, code := runFerry(t, home, "", "config", "set", "agent.max_tool_calls", "30"); code != 0 {
		t.Fatal(stderr)
	}
	db := filepath.Join(home, "ferry.db")
	logs := filepath.Join(home, "logs")
	os.MkdirAll(logs, 0o755)
	os.WriteFile(filepath.Join(logs, "ferry.log"), nil, 0o644)
	for p, m := range map[string]fs.FileMode{home: 0o755, db: 0o644, logs: 0o755, filepath.Join(logs, "ferry.log"): 0o644} {
		os.Chmod(p, m)
	}
	h := startHost(t, home, pinnedOrigin)
	h.send(req(1, "host.info", nil))
	if m := h.recv(); m["result"] == nil {
		t.Fatalf("host.info: %v", m)
	}
	for p, want := range map[string]fs.FileMode{home: 0o700, db: 0o600, logs: 0o700, filepath.Join(logs, "ferry.log"): 0o600} {
		if got := permOf(t, p); got != want {
			t.Errorf("%s is %04o after the host started, want %04o", p, got, want)
		}
	}
	for _, p := range []string{db + "-wal", db + "-shm"} {
		if got := permOf(t, p); got&0o077 != 0 {
			t.Errorf("%s is %04o", p, got)
		}
	}
	if log, _ := os.ReadFile(filepath.Join(logs, "ferry.log")); !strings.Contains(string(log), "tightened") || !strings.Contains(string(log), `"was":"0644"`) {
		t.Errorf("the log does not say what was tightened:\n%s", log)
	}
}

// A data directory that belongs to another user is refused, with the fix, before
// anything is written in it.
func TestHostRefusesAnotherUsersDataDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory to another user needs root")
	}
	home := t.TempDir()
	if _, stderr, code := runFerry(t, home, "", "config", "set", "agent.max_tool_calls", "30"); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Chown(home, 65534, 65534); err != nil {
		t.Skip("chown:", err)
	}
	before, _ := os.ReadFile(filepath.Join(home, "ferry.db"))
	h := startHost(t, home, pinnedOrigin)
	out, _ := io.ReadAll(h.stdout)
	if code := h.wait(); code != 1 {
		t.Fatalf("exit %d, want 1 (stderr: %s)", code, h.stderr)
	}
	if len(out) != 0 {
		t.Errorf("the refused host wrote %d bytes to the browser", len(out))
	}
	if s := h.stderr.String(); !strings.Contains(s, "belongs to another user (uid 65534)") || !strings.Contains(s, "sudo chown -R 0 "+home) {
		t.Errorf("stderr does not say whose it is and how to fix it: %s", s)
	}
	if _, err := os.Stat(filepath.Join(home, "logs")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the host created its log in another user's directory: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(home, "ferry.db")); string(after) != string(before) {
		t.Errorf("the host changed another user's database")
	}
	// Every other command refuses it the same way.
	if _, stderr, code := runFerry(t, home, "", "config", "list"); code == 0 || !strings.Contains(stderr, "belongs to another user") {
		t.Errorf("ferry config list on another user's directory: exit %d, %s", code, stderr)
	}
}
