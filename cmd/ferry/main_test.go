package main

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host"
	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/protocol"
	_ "modernc.org/sqlite"
)

// These tests fork and exec the real binary and speak frames to it over real pipes,
// as a browser does.

var ferryBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ferry-bin")
	if err != nil {
		panic(err)
	}
	ferryBin = filepath.Join(dir, "ferry")
	if out, err := exec.Command("go", "build", "-o", ferryBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ferry: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var pinnedOrigin = "chrome-extension://" + buildinfo.ExtensionID + "/"

type hostProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *bytes.Buffer
	home   string
}

func startHost(t testing.TB, home string, args ...string) *hostProc {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	cmd := exec.Command(ferryBin, args...)
	cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &hostProc{t: t, cmd: cmd, stdin: stdin, stdout: stdout, stderr: &stderr, home: home}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

func (p *hostProc) sendRaw(b []byte) {
	p.t.Helper()
	if _, err := p.stdin.Write(b); err != nil {
		p.t.Fatalf("writing to host: %v", err)
	}
}

func (p *hostProc) send(v any) {
	p.t.Helper()
	b, _ := json.Marshal(v)
	p.sendRaw(protocol.AppendFrame(nil, b))
}

// recv reads one message, reassembling chunk frames as the extension does.
func (p *hostProc) recv() map[string]any {
	p.t.Helper()
	var buf strings.Builder
	for {
		f, err := protocol.ReadFrame(p.stdout, protocol.MaxOutboundFrame)
		if err != nil {
			p.t.Fatalf("reading from host: %v (stderr: %s)", err, p.stderr)
		}
		var m map[string]any
		if err := json.Unmarshal(f, &m); err != nil {
			p.t.Fatalf("host wrote a frame that is not JSON: %q", f)
		}
		if m["method"] != protocol.ChunkMethod {
			return m
		}
		params := m["params"].(map[string]any)
		buf.WriteString(params["data"].(string))
		if params["index"].(float64) == params["count"].(float64)-1 {
			var whole map[string]any
			if err := json.Unmarshal([]byte(buf.String()), &whole); err != nil {
				p.t.Fatalf("reassembled message is not JSON: %v", err)
			}
			return whole
		}
	}
}

func (p *hostProc) wait() int {
	p.t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(10 * time.Second):
		p.t.Fatalf("host did not exit (stderr: %s)", p.stderr)
		return -1
	}
}

func req(id any, method string, params any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
}

func TestHostSessionAndCleanExit(t *testing.T) {
	p := startHost(t, "", pinnedOrigin)
	p.send(req(1, "host.hello", map[string]any{"protocol": buildinfo.Protocol}))
	if m := p.recv(); m["result"].(map[string]any)["version"] != buildinfo.Version {
		t.Fatalf("hello = %v", m)
	}
	p.send(req(2, "host.info", nil))
	info := p.recv()["result"].(map[string]any)
	if info["data_dir"] != p.home || info["database_path"] != filepath.Join(p.home, "ferry.db") || info["caller"] != pinnedOrigin {
		t.Fatalf("info = %v", info)
	}
	if int(info["pid"].(float64)) != p.cmd.Process.Pid {
		t.Fatalf("pid %v, want %d", info["pid"], p.cmd.Process.Pid)
	}
	// A slow request is still answered after the browser closes stdin.
	p.send(req(3, "host.ping", map[string]any{"delay_ms": 300, "payload": "late"}))
	p.stdin.Close()
	if m := p.recv(); m["id"] != 3.0 || m["result"].(map[string]any)["payload"] != "late" {
		t.Fatalf("in-flight answer = %v", m)
	}
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d after stdin EOF, want 0 (stderr: %s)", code, p.stderr)
	}
	log, err := os.ReadFile(filepath.Join(p.home, "logs", "ferry.log"))
	if err != nil || !strings.Contains(string(log), "host started") {
		t.Fatalf("log file missing or empty: %v", err)
	}
}

func TestHostWindowsArguments(t *testing.T) {
	p := startHost(t, "", pinnedOrigin, "--parent-window=0")
	p.send(req(1, "host.ping", map[string]any{"payload": 1}))
	if m := p.recv(); m["id"] != 1.0 {
		t.Fatalf("got %v", m)
	}
}

func TestHostRefusesUnknownOrigin(t *testing.T) {
	stranger := "chrome-extension://" + strings.Repeat("c", 32) + "/"
	p := startHost(t, "", stranger)
	out, _ := io.ReadAll(p.stdout)
	if code := p.wait(); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if len(out) != 0 {
		t.Fatalf("refused host wrote %d bytes to stdout", len(out))
	}
	if !strings.Contains(p.stderr.String(), "ferry install --extension-id") {
		t.Fatalf("stderr does not say how to allow the extension: %s", p.stderr)
	}
}

func TestHostAcceptsInstalledExtraExtension(t *testing.T) {
	home := t.TempDir()
	extra := strings.Repeat("e", 32)
	cfg := exec.Command(ferryBin, "config", "set", origins.SettingAllowedExtensions, `["`+extra+`"]`)
	cfg.Env = append(os.Environ(), "FERRY_HOME="+home)
	if out, err := cfg.CombinedOutput(); err != nil {
		t.Fatalf("config set: %v %s", err, out)
	}
	p := startHost(t, home, "chrome-extension://"+extra+"/")
	p.send(req(1, "host.ping", nil))
	if m := p.recv(); m["id"] != 1.0 {
		t.Fatalf("got %v", m)
	}
}

// log.level is the least severe level the host's log file receives.
func TestHostLogLevel(t *testing.T) {
	home := t.TempDir()
	cfg := exec.Command(ferryBin, "config", "set", "log.level", "warn")
	cfg.Env = append(os.Environ(), "FERRY_HOME="+home)
	if out, err := cfg.CombinedOutput(); err != nil {
		t.Fatalf("config set: %v %s", err, out)
	}
	p := startHost(t, home, pinnedOrigin)
	p.send(req(1, "host.ping", nil))
	if m := p.recv(); m["id"] != 1.0 {
		t.Fatalf("got %v", m)
	}
	p.stdin.Close()
	p.wait()
	log, err := os.ReadFile(filepath.Join(home, "logs", "ferry.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "host started") {
		t.Fatalf("an info line was written at log.level warn:\n%s", log)
	}
}

func header(n uint32) []byte { return binary.NativeEndian.AppendUint32(nil, n) }

func TestHostBadFrames(t *testing.T) {
	t.Run("not JSON keeps the session", func(t *testing.T) {
		p := startHost(t, "", pinnedOrigin)
		p.sendRaw(protocol.AppendFrame(nil, []byte("{oops")))
		if m := p.recv(); m["error"].(map[string]any)["code"] != float64(protocol.CodeParseError) {
			t.Fatalf("got %v", m)
		}
		p.send(req(2, "host.ping", nil))
		if m := p.recv(); m["id"] != 2.0 {
			t.Fatalf("after a bad frame: %v", m)
		}
	})
	for name, raw := range map[string][]byte{
		"oversize length":  header(protocol.MaxInboundFrame + 1),
		"huge length":      header(0xFFFFFFFF),
		"zero length":      header(0),
		"truncated body":   append(header(100), `{"jsonrpc"`...),
		"truncated header": {7, 0},
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			p := startHost(t, home, pinnedOrigin)
			p.send(req(1, "host.ping", nil))
			p.recv()
			p.sendRaw(raw)
			p.stdin.Close()
			m := p.recv()
			if m["error"].(map[string]any)["code"] != float64(protocol.CodeParseError) {
				t.Fatalf("got %v", m)
			}
			if code := p.wait(); code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			if strings.Contains(p.stderr.String(), "panic") {
				t.Fatalf("host panicked: %s", p.stderr)
			}
			// The database is intact and opens for the next host.
			q := startHost(t, home, pinnedOrigin)
			q.send(req(1, "host.info", nil))
			if m := q.recv(); m["result"] == nil {
				t.Fatalf("database damaged: %v", m)
			}
		})
	}
}

func TestHostConcurrentRequests(t *testing.T) {
	p := startHost(t, "", pinnedOrigin)
	const n = 50
	for i := 0; i < n; i++ {
		// Later requests are quicker, so answers come back out of order.
		p.send(req(i, "host.ping", map[string]any{"delay_ms": (n - i) * 4, "payload": i}))
	}
	seen := map[float64]bool{}
	var order []float64
	for i := 0; i < n; i++ {
		m := p.recv()
		id := m["id"].(float64)
		if m["result"].(map[string]any)["payload"] != id {
			t.Fatalf("answer %v carries the wrong payload", m)
		}
		seen[id] = true
		order = append(order, id)
	}
	if len(seen) != n {
		t.Fatalf("%d distinct answers, want %d", len(seen), n)
	}
	if order[0] == 0 {
		t.Fatalf("answers came back in request order %v: requests are not concurrent", order[:5])
	}
}

func TestHostChunksLargeAnswers(t *testing.T) {
	p := startHost(t, "", pinnedOrigin)
	const size = 5 << 20
	p.send(req(1, "host.ping", map[string]any{"size": size}))
	m := p.recv()
	if got := m["result"].(map[string]any)["payload"]; got != host.PingPayload(size) {
		t.Fatalf("5 MiB payload did not survive chunking (%d bytes)", len(fmt.Sprint(got)))
	}
}

// The first replies do not wait for the database: with another process holding its
// write lock (so that migrating it must wait), host.hello and host.ping are answered,
// and host.info, which reads the database, is answered once the lock is let go.
func TestHostAnswersBeforeTheDatabaseOpens(t *testing.T) {
	home := t.TempDir()
	other, err := sql.Open("sqlite", filepath.Join(home, "ferry.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	if _, err := other.Exec(`PRAGMA journal_mode=WAL`); err != nil {
		t.Fatal(err)
	}
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`CREATE TABLE held (x)`); err != nil { // takes the write lock
		t.Fatal(err)
	}
	p := startHost(t, home, pinnedOrigin)
	p.send(req(1, "host.hello", map[string]any{"protocol": buildinfo.Protocol}))
	p.send(req(2, "host.info", nil))
	p.send(req(3, "host.ping", map[string]any{"payload": "first"}))
	// Requests run concurrently: hello and ping come back in either order, and both
	// before host.info, which cannot have read a locked database.
	for range 2 {
		if m := p.recv(); (m["id"] != 1.0 && m["id"] != 3.0) || m["result"] == nil {
			t.Fatalf("while the database is locked: %v", m)
		}
	}
	tx.Rollback()
	if m := p.recv(); m["id"] != 2.0 || m["result"].(map[string]any)["schema_version"] == nil {
		t.Fatalf("host.info once the database is free: %v", m)
	}
	p.stdin.Close()
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d (stderr: %s)", code, p.stderr)
	}
}

// A browser that closes the port before asking anything ends the host at once,
// whether or not the host had begun opening its database.
func TestHostExitsWhenTheBrowserLeavesAtOnce(t *testing.T) {
	p := startHost(t, "", pinnedOrigin)
	p.stdin.Close()
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d (stderr: %s)", code, p.stderr)
	}
}

func TestHostExitsOnSIGTERM(t *testing.T) {
	p := startHost(t, "", pinnedOrigin)
	p.send(req(1, "host.ping", nil))
	p.recv()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d on SIGTERM, want 0", code)
	}
}

func TestCommandLine(t *testing.T) {
	home := t.TempDir()
	run := func(stdin string, args ...string) (string, int) {
		cmd := exec.Command(ferryBin, args...)
		cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
		cmd.Stdin = strings.NewReader(stdin)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := run("", "version"); code != 0 || strings.TrimSpace(out) != buildinfo.VersionLine() {
		t.Fatalf("version: %q %d", out, code)
	}
	if out, code := run("", "config", "set", "log.level", "loud"); code != 2 || !strings.Contains(out, "must be one of") {
		t.Fatalf("bad config value: %q %d", out, code)
	}
	if out, code := run("", "config", "set", "no.such", "x"); code != 2 || !strings.Contains(out, "unknown setting") {
		t.Fatalf("unknown key: %q %d", out, code)
	}
	if _, code := run("", "config", "set", "log.level", "debug"); code != 0 {
		t.Fatal("config set failed")
	}
	if out, _ := run("", "config", "get", "log.level"); strings.TrimSpace(out) != "debug" {
		t.Fatalf("config get = %q", out)
	}
	if out, code := run("sk-secret-value\n", "secret", "set", "openai"); code != 0 || strings.Contains(out, "sk-secret") {
		t.Fatalf("secret set: %q %d (the value must never be echoed)", out, code)
	}
	if out, _ := run("", "secret", "list"); strings.TrimSpace(out) != "openai" {
		t.Fatalf("secret list = %q", out)
	}
	if out, code := run("", "secret", "set", "empty"); code != 2 || !strings.Contains(out, "empty") {
		t.Fatalf("empty secret: %q %d", out, code)
	}
	if _, code := run("", "frobnicate"); code != 2 {
		t.Fatal("unknown command accepted")
	}
	if out, code := run("", "tools"); code != 0 || !strings.Contains(out, "ask_user") {
		t.Fatalf("tools: %q %d", out, code)
	}
}
