package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/model/modeltest"
)

// runFerry runs the binary with stdin, returning stdout, stderr and the exit code.
func runFerry(t testing.TB, home, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(ferryBin, args...)
	cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestRunCommand is the done-when: a provider added against a fake vendor,
// then `ferry run` completes a run that calls web_fetch (a loopback page) and
// create_task and prints the streamed answer; --json prints one event a line. Both
// wire formats.
func TestRunCommand(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html><head><title>Local</title></head><body><main><h1>Hello</h1><p>The secret word is pelican.</p></main></body></html>")
	}))
	defer page.Close()
	for _, kind := range []string{modeltest.OpenAI, modeltest.Anthropic} {
		t.Run(kind, func(t *testing.T) {
			turns := func() []modeltest.Turn {
				return []modeltest.Turn{
					modeltest.Tools("web_fetch", `{"url":"`+page.URL+`/page"}`, "create_task", `{"subject":"read the page"}`),
					modeltest.Text("The page says the secret word is pelican."),
				}
			}
			fake := modeltest.New(t, kind, turns()...)
			defer fake.Close()
			fake.SetKey("sk-test-key")
			home := t.TempDir()
			if _, stderr, code := runFerry(t, home, "sk-test-key\n", "provider", "add", "fake", "--kind", kind,
				"--base-url", fake.URL, "--model", "fake-model", "--api-key-stdin", "--default"); code != 0 {
				t.Fatalf("provider add: exit %d: %s", code, stderr)
			}
			if _, stderr, code := runFerry(t, home, "", "config", "set", "fetch.allow_private_hosts", "127.0.0.1"); code != 0 {
				t.Fatalf("config set: %s", stderr)
			}

			stdout, stderr, code := runFerry(t, home, "", "run", "What is the secret word on the local page?")
			if code != 0 {
				t.Fatalf("run: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if strings.TrimSpace(stdout) != "The page says the secret word is pelican." {
				t.Errorf("stdout %q", stdout)
			}
			for _, want := range []string{"[tool] web_fetch ok", "[tool] create_task ok"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q: %s", want, stderr)
				}
			}
			// The model got both results, the page's text among them.
			last := fake.Last()
			var results []string
			for _, m := range last.Messages {
				for _, r := range m.ToolResults {
					results = append(results, r.Content)
				}
			}
			if len(results) != 2 || !strings.Contains(results[0], "pelican") || !strings.Contains(results[1], `"success":true`) {
				t.Fatalf("tool results sent back: %q", results)
			}

			fake.Add(turns()...)
			stdout, stderr, code = runFerry(t, home, "", "run", "--json", "Again, please.")
			if code != 0 {
				t.Fatalf("run --json: exit %d: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			var seen []string
			for _, l := range lines {
				var ev struct {
					Type  string `json:"type"`
					RunID string `json:"run_id"`
					Name  string `json:"name"`
					Code  string `json:"code"`
				}
				if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Type == "" || ev.RunID == "" {
					t.Fatalf("line is not an event: %q (%v)", l, err)
				}
				if ev.Type == "tool_call_finished" {
					seen = append(seen, ev.Name+":"+ev.Code)
				}
				if ev.Type != "text_delta" && ev.Type != "tasks_changed" && ev.Type != "tool_call_started" {
					seen = append(seen, ev.Type)
				}
			}
			got := strings.Join(seen, " ")
			if !strings.HasPrefix(got, "run_started") || !strings.HasSuffix(got, "run_finished") ||
				!strings.Contains(got, "web_fetch:") || !strings.Contains(got, "create_task:") {
				t.Fatalf("events: %s", got)
			}
		})
	}
}

func TestRunCommandFailures(t *testing.T) {
	home := t.TempDir()
	_, stderr, code := runFerry(t, home, "", "run", "hello")
	if code != 1 || !strings.Contains(stderr, "ferry provider add") {
		t.Fatalf("no provider: exit %d: %s", code, stderr)
	}
	if _, _, code := runFerry(t, home, "", "run"); code != 2 {
		t.Fatalf("no prompt: exit %d", code)
	}
	fake := modeltest.NewOpenAI(t, modeltest.Fail(401, ""))
	defer fake.Close()
	runFerry(t, home, "wrong\n", "provider", "add", "bad", "--kind", "openai", "--base-url", fake.URL, "--model", "m", "--api-key-stdin")
	_, stderr, code = runFerry(t, home, "", "run", "--provider", "bad", "hello")
	if code != 1 || !strings.Contains(stderr, "401") {
		t.Fatalf("refused key: exit %d: %s", code, stderr)
	}
}

// TestRunInLiveHost: with a browser host running, `ferry run` runs inside it over
// the control socket (the host's registry, its browser connection) and prints the
// events it sends back; --local keeps the run here and says browser tools are off.
func TestRunInLiveHost(t *testing.T) {
	fake := modeltest.New(t, modeltest.OpenAI,
		modeltest.Tools("create_task", `{"subject":"from the terminal"}`),
		modeltest.Text("Done in the host."))
	defer fake.Close()
	fake.SetKey("sk-test-key")
	home := t.TempDir()
	if _, stderr, code := runFerry(t, home, "sk-test-key\n", "provider", "add", "fake", "--kind", modeltest.OpenAI,
		"--base-url", fake.URL, "--model", "fake-model", "--api-key-stdin", "--default"); code != 0 {
		t.Fatalf("provider add: %s", stderr)
	}
	startHost(t, home, pinnedOrigin)
	info := waitForHost(t, home)

	stdout, stderr, code := runFerry(t, home, "", "run", "Add a task.")
	if code != 0 {
		t.Fatalf("run: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if strings.TrimSpace(stdout) != "Done in the host." {
		t.Errorf("stdout %q", stdout)
	}
	for _, want := range []string{"running in the browser host (pid " + strconv.Itoa(info.PID), "[tool] create_task ok"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q: %s", want, stderr)
		}
	}

	fake.Add(modeltest.Text("Here."))
	_, stderr, code = runFerry(t, t.TempDir(), "", "run", "--local", "Hi.")
	_ = code // no provider in that home: the point is the notice, not the run
	if strings.Contains(stderr, "running in the browser host") {
		t.Errorf("--local used the host: %s", stderr)
	}
	_, stderr, _ = runFerry(t, t.TempDir(), "", "run", "Hi.")
	if !strings.Contains(stderr, "no running browser host") || !strings.Contains(stderr, "browser tools are unavailable") {
		t.Errorf("a run without a host does not say why browser tools are off: %s", stderr)
	}
}
