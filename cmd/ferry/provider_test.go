package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/ferryhq/ferry/host/model/modeltest"
)

// ferryIn runs the real binary with stdin and extra environment, returning both outputs.
func ferryIn(t *testing.T, home, stdin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(ferryBin, args...)
	cmd.Env = append(append(os.Environ(), "FERRY_HOME="+home), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

type listedProviders struct {
	Providers []struct {
		ID        string `json:"id"`
		Kind      string `json:"kind"`
		Model     string `json:"model"`
		BaseURL   string `json:"base_url"`
		KeySet    bool   `json:"key_set"`
		KeySource string `json:"key_source"`
		Default   bool   `json:"default"`
		Context   int    `json:"context_window"`
	} `json:"providers"`
}

func TestProviderCommands(t *testing.T) {
	home := t.TempDir()
	const key = "sk-test-SECRET-0123456789"
	oa := modeltest.NewOpenAI(t, modeltest.Turn{Text: "ok", InputTokens: 11, OutputTokens: 1})
	oa.SetKey(key)
	an := modeltest.NewAnthropic(t, modeltest.Text("ok"))
	an.SetKey("anthropic-key")

	// No provider yet.
	_, errOut, code := ferryIn(t, home, "", nil, "provider", "test")
	if code != 1 || !strings.Contains(errOut, "no model provider configured") || !strings.Contains(errOut, "ferry provider add") {
		t.Fatalf("test without providers: %d %s", code, errOut)
	}

	out, errOut, code := ferryIn(t, home, key+"\n", nil, "provider", "add", "oa", "--kind", "openai", "--base-url", oa.URL, "--model", "gpt-fake", "--api-key-stdin")
	if code != 0 || !strings.Contains(out, "added provider oa") || !strings.Contains(out, "(default)") || strings.Contains(out, key) {
		t.Fatalf("add: %d %s %s", code, out, errOut)
	}
	out, errOut, code = ferryIn(t, home, "", nil, "provider", "add", "an", "--kind", "anthropic", "--base-url", an.URL, "--model", "claude-fake", "--api-key-env", "FERRY_TEST_ANTHROPIC_KEY", "--context-window", "100000")
	if code != 0 || !strings.Contains(out, "added provider an") || strings.Contains(out, "(default)") {
		t.Fatalf("add an: %d %s %s", code, out, errOut)
	}

	// Validation with specific errors.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"x", "--kind", "gemini", "--base-url", "http://h", "--model", "m"}, "unknown provider kind"},
		{[]string{"x", "--kind", "openai", "--base-url", "localhost:11434", "--model", "m"}, "http:// or https://"},
		{[]string{"x", "--kind", "openai", "--base-url", "http://h"}, "--model"},
		{[]string{"bad id", "--kind", "openai", "--base-url", "http://h", "--model", "m"}, "provider id"},
		{[]string{"x", "--kind", "openai", "--base-url", "http://h", "--model", "m", "--api-key-env", "NOT-A-VAR"}, "environment variable name"},
	} {
		_, errOut, code := ferryIn(t, home, "", nil, append([]string{"provider", "add"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("add %v: %d %q, want %q", c.args, code, errOut, c.want)
		}
	}

	out, _, code = ferryIn(t, home, "", []string{"FERRY_TEST_ANTHROPIC_KEY=anthropic-key"}, "provider", "list", "--json")
	var l listedProviders
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Providers) != 2 {
		t.Fatalf("list: %d %s", code, out)
	}
	if strings.Contains(out, key) || strings.Contains(out, "anthropic-key") {
		t.Fatalf("a key leaked into the listing: %s", out)
	}
	p0, p1 := l.Providers[0], l.Providers[1]
	if p0.ID != "oa" || !p0.Default || !p0.KeySet || p0.KeySource != "secret" || p0.Context != 128000 {
		t.Fatalf("oa listed as %+v", p0)
	}
	if p1.ID != "an" || p1.Default || !p1.KeySet || p1.KeySource != "env" || p1.Context != 100000 {
		t.Fatalf("an listed as %+v", p1)
	}
	out, _, _ = ferryIn(t, home, "", nil, "provider", "list")
	if !strings.Contains(out, "claude-fake") || !strings.Contains(out, "missing ($FERRY_TEST_ANTHROPIC_KEY is empty)") || strings.Contains(out, key) {
		t.Fatalf("list: %s", out)
	}

	// A real call to the fake server.
	out, errOut, code = ferryIn(t, home, "", nil, "provider", "test")
	if code != 0 || !strings.Contains(out, `answered in`) || !strings.Contains(out, `"ok"`) || !strings.Contains(out, "tokens: 11 in, 1 out") {
		t.Fatalf("test: %d %s %s", code, out, errOut)
	}
	if got := oa.Last(); got.Header.Get("Authorization") != "Bearer "+key || got.Messages[0].Text != "Reply with the word ok" {
		t.Fatalf("the fake got %+v", got)
	}
	out, errOut, code = ferryIn(t, home, "", []string{"FERRY_TEST_ANTHROPIC_KEY=anthropic-key"}, "provider", "test", "an", "--json")
	var tr struct {
		OK    bool   `json:"ok"`
		Reply string `json:"reply"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &tr) != nil || !tr.OK || tr.Reply != "ok" {
		t.Fatalf("test an: %d %s %s", code, out, errOut)
	}
	// Without the variable the provider cannot be opened, and says why.
	_, errOut, code = ferryIn(t, home, "", nil, "provider", "test", "an")
	if code != 1 || !strings.Contains(errOut, "FERRY_TEST_ANTHROPIC_KEY") {
		t.Fatalf("test an without env: %d %s", code, errOut)
	}

	// A wrong key: the vendor's message and what to do.
	ferryIn(t, home, "sk-wrong-key-000\n", nil, "provider", "add", "oa", "--api-key-stdin")
	_, errOut, code = ferryIn(t, home, "", nil, "provider", "test", "oa")
	if code != 1 || !strings.Contains(errOut, "HTTP 401") || !strings.Contains(errOut, "Incorrect API key") || !strings.Contains(errOut, "fix: the API key was refused") {
		t.Fatalf("test with a wrong key: %d %s", code, errOut)
	}
	if strings.Contains(errOut, "sk-wrong-key-000") {
		t.Fatalf("the key was printed: %s", errOut)
	}

	// add of an existing id updates only what is given.
	out, _, code = ferryIn(t, home, "", nil, "provider", "add", "oa", "--model", "gpt-other")
	if code != 0 || !strings.Contains(out, "updated existing provider oa") || !strings.Contains(out, "gpt-other") || !strings.Contains(out, oa.URL) {
		t.Fatalf("update: %d %s", code, out)
	}

	out, _, code = ferryIn(t, home, "", nil, "provider", "default", "an")
	if code != 0 || !strings.Contains(out, "now an") {
		t.Fatalf("default: %d %s", code, out)
	}
	_, errOut, code = ferryIn(t, home, "", nil, "provider", "default", "zz")
	if code != 1 || !strings.Contains(errOut, "no such model provider") {
		t.Fatalf("default zz: %d %s", code, errOut)
	}
	out, _, code = ferryIn(t, home, "", nil, "provider", "remove", "an")
	if code != 0 || !strings.Contains(out, "default provider is now oa") {
		t.Fatalf("remove: %d %s", code, out)
	}
	_, errOut, code = ferryIn(t, home, "", nil, "provider", "remove", "an")
	if code != 1 || !strings.Contains(errOut, "no such model provider") {
		t.Fatalf("remove twice: %d %s", code, errOut)
	}
	// The key is a secret, listed by name only.
	out, _, _ = ferryIn(t, home, "", nil, "secret", "list")
	if !strings.Contains(out, "provider.oa.key") || strings.Contains(out, "sk-") {
		t.Fatalf("secrets: %s", out)
	}
}

// --no-vision marks a text-only model; updating without the flag keeps it, and
// --no-vision=false turns images back on.
func TestProviderNoVision(t *testing.T) {
	home := t.TempDir()
	vision := func() bool {
		t.Helper()
		out, errOut, code := ferryIn(t, home, "", nil, "provider", "list", "--json")
		var l struct {
			Providers []struct {
				Vision bool `json:"vision"`
			} `json:"providers"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Providers) != 1 {
			t.Fatalf("provider list: %d %s %s", code, out, errOut)
		}
		return l.Providers[0].Vision
	}
	add := func(args ...string) string {
		t.Helper()
		out, errOut, code := ferryIn(t, home, "", nil, append([]string{"provider", "add", "local"}, args...)...)
		if code != 0 {
			t.Fatalf("provider add %v: %d %s", args, code, errOut)
		}
		return out
	}
	if out := add("--kind", "openai", "--base-url", "http://127.0.0.1:1/v1", "--model", "qwen", "--no-vision"); !strings.Contains(out, "text only") || vision() {
		t.Fatalf("--no-vision: %s, vision %v", out, vision())
	}
	if add("--model", "qwen2"); vision() {
		t.Fatal("an update without the flag turned images on")
	}
	if add("--no-vision=false"); !vision() {
		t.Fatal("--no-vision=false left the model text-only")
	}
}

// TestProviderTestSettles: `ferry provider test` against a server that refuses
// stream_options (Mistral's 422) says which options it settled on, and stores what
// it learnt so runs start with it.
func TestProviderTestSettles(t *testing.T) {
	var bodies []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		if strings.Contains(string(b), "stream_options") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(422)
			io.WriteString(w, `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","stream_options","include_usage"],"msg":"Extra inputs are not permitted","input":true}]},"type":"invalid_request_error","param":null,"code":null}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	home := t.TempDir()
	if _, stderr, code := runFerry(t, home, "", "provider", "add", "gw", "--kind", "openai", "--base-url", srv.URL+"/v1", "--model", "team-model"); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := runFerry(t, home, "", "provider", "test", "gw")
	if code != 0 || !strings.Contains(stdout, `"ok"`) || !strings.Contains(stdout, "settled on: stream_options off") || !strings.Contains(stdout, "learned: stream_options off") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, _, _ = runFerry(t, home, "", "provider", "list", "--json")
	if !strings.Contains(stdout, `"stream_usage": "off"`) {
		t.Fatalf("the learnt option was not stored: %s", stdout)
	}
	mu.Lock()
	bodies = nil
	mu.Unlock()
	runFerry(t, home, "", "provider", "test", "gw")
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 || strings.Contains(bodies[0], "stream_options") {
		t.Fatalf("after learning, requests were %q", bodies)
	}
}
