// Package e2e tests `ferry gateway` as its users meet it: the real binary, forked
// and executed, serving real HTTP on loopback in front of the fake vendors of
// host/model/modeltest, driven by its own command line and by clients speaking
// both vendors' wire formats.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/gateway/store/storetest"
	"github.com/ferryhq/ferry/tests/loopback"
)

var ferryBin string

func TestMain(m *testing.M) {
	// Every client the tests build without a transport of their own (http.Get,
	// http.DefaultClient) reaches this machine only.
	loopback.PinDefault()
	dir, err := os.MkdirTemp("", "ferry-gw-bin")
	if err != nil {
		panic(err)
	}
	ferryBin = filepath.Join(dir, "ferry")
	if out, err := exec.Command("go", "build", "-o", ferryBin, "../../cmd/ferry").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ferry: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one gateway database and the commands that manage it.
type env struct {
	t    testing.TB
	dsn  string
	home string
}

func newEnv(t testing.TB, engine string) *env {
	return &env{t: t, dsn: storetest.DSN(t, engine), home: t.TempDir()}
}

// ferry runs `ferry gateway ARGS` with stdin, and returns stdout, stderr, exit code.
func (e *env) ferry(stdin string, args ...string) (string, string, int) {
	e.t.Helper()
	cmd := exec.Command(ferryBin, append([]string{"gateway"}, args...)...)
	cmd.Env = append(os.Environ(), "FERRY_HOME="+e.home, "FERRY_GATEWAY_DB="+e.dsn)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		e.t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// must runs a command that must succeed, returning its stdout.
func (e *env) must(stdin string, args ...string) string {
	e.t.Helper()
	out, errs, code := e.ferry(stdin, args...)
	if code != 0 {
		e.t.Fatalf("ferry gateway %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// addUser creates a user and returns its token.
func (e *env) addUser(name string, flags ...string) string {
	e.t.Helper()
	tok := strings.TrimSpace(e.must("", append([]string{"user", "add", name}, flags...)...))
	if !strings.HasPrefix(tok, "fgw_") {
		e.t.Fatalf("user add printed %q", tok)
	}
	return tok
}

// gateway is a running `ferry gateway serve`.
type gateway struct {
	URL    string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
}

func (g *gateway) log() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stderr.String()
}

type lockedWriter struct{ g *gateway }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	return w.g.stderr.Write(p)
}

// serve starts the gateway on a free loopback port.
func (e *env) serve(args ...string) *gateway {
	e.t.Helper()
	cmd := exec.Command(ferryBin, append([]string{"gateway", "serve", "--addr", "127.0.0.1:0", "--db", e.dsn}, args...)...)
	cmd.Env = append(os.Environ(), "FERRY_HOME="+e.home)
	g := &gateway{cmd: cmd}
	cmd.Stderr = lockedWriter{g}
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case line := <-lines:
		_, rest, ok := strings.Cut(line, "listening on ")
		if !ok {
			e.t.Fatalf("serve printed %q", line)
		}
		g.URL, _, _ = strings.Cut(rest, " ")
	case <-time.After(20 * time.Second):
		e.t.Fatalf("serve did not start: %s", g.log())
	}
	return g
}

// post sends a JSON body with a token in the dialect's header.
func post(t *testing.T, url, tok, dialect string, body any, hdr ...string) *http.Response {
	t.Helper()
	b, ok := body.([]byte)
	if !ok {
		b, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if dialect == "anthropic" {
		req.Header.Set("x-api-key", tok)
		req.Header.Set("anthropic-version", "2023-06-01")
	} else if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return string(b)
}

// endpoint is the path of a dialect's model endpoint.
func endpoint(dialect string) string {
	if dialect == "anthropic" {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

// chatBody is a request in a dialect's wire format.
func chatBody(dialect, model, text string, stream bool, extra map[string]any) map[string]any {
	b := map[string]any{"model": model, "stream": stream, "messages": []any{map[string]any{"role": "user", "content": text}}}
	if dialect == "anthropic" {
		b["max_tokens"] = 256
	}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// sseEvent is one event a client read.
type sseEvent struct {
	Name string
	Data string
}

// readSSE reads a whole event stream as a client does.
func readSSE(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, ct, b)
	}
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data != "" || cur.Name != "" {
				evs = append(evs, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.Data += line[6:]
		}
	}
	if cur.Data != "" {
		evs = append(evs, cur)
	}
	return evs
}

// auditRows reads the audit through the command line until want rows of
// requests are there (the gateway writes them just after answering).
func (e *env) requests(want int, args ...string) []store.Request {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out := e.must("", append([]string{"audit", "--json", "--limit", "1000"}, args...)...)
		var rows []struct {
			Kind    string         `json:"kind"`
			Request *store.Request `json:"request"`
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			e.t.Fatalf("audit --json: %v\n%s", err, out)
		}
		var reqs []store.Request
		for _, r := range rows {
			if r.Kind == "request" {
				reqs = append(reqs, *r.Request)
			}
		}
		if len(reqs) >= want || time.Now().After(deadline) {
			return reqs
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFor polls cond until it holds or 15 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// generation is the configuration generation serve has in force.
func (g *gateway) generation(t *testing.T) int64 {
	t.Helper()
	resp, err := http.Get(g.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Generation int64 }
	json.NewDecoder(resp.Body).Decode(&h)
	return h.Generation
}

// waitGeneration waits until serve has reloaded a change from another process.
func (g *gateway) waitGeneration(t *testing.T, min int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("generation %d in force", min), func() bool { return g.generation(t) >= min })
}
