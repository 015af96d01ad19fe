package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/host/model/modeltest"
)

// The official SDKs' own clients, pinned in sdkclients/package.json, installed
// from npm at test time into a cache folder (never into the repository).
const (
	// SkipNPMEnv=1 skips the SDK tests on a machine without the npm registry;
	// without it they fail, saying why, rather than pass unseen.
	SkipNPMEnv = "FERRY_SKIP_NPM"
	// SDKCacheEnv names the cache folder; default: Ferry's folder in the user's
	// cache directory, as scripts/demo-react keeps React.
	SDKCacheEnv = "FERRY_GATEWAY_SDKS"
)

// sdkModules returns the node_modules folder holding the pinned SDKs, installing
// them once per machine and pin: into a temporary folder first, then renamed into
// place, so that two test runs at once never see a half-installed cache.
func sdkModules(t *testing.T) string {
	t.Helper()
	if os.Getenv(SkipNPMEnv) == "1" {
		t.Skipf("%s=1: the gateway is not tested with the official SDKs", SkipNPMEnv)
	}
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: the gateway's SDK tests run the official SDKs on Node (install nodejs and npm, or set %s=1 to skip them)", bin, SkipNPMEnv)
		}
	}
	pkg, err := os.ReadFile(filepath.Join("sdkclients", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	root := os.Getenv(SDKCacheEnv)
	if root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no cache directory for the SDKs (%v): set %s", err, SDKCacheEnv)
		}
		root = filepath.Join(cache, "ferry", "gateway-sdks")
	}
	sum := sha256.Sum256(pkg)
	dir := filepath.Join(root, hex.EncodeToString(sum[:6]))
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(dir, "installed")); err == nil {
		return modules
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, ".install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), pkg, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	// --prefer-offline: npm's own cache serves what it holds (the pins are exact);
	// the retry bounds make an unreachable registry fail in about half a minute
	// rather than minutes.
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error",
		"--prefer-offline", "--fetch-retries=2", "--fetch-retry-mintimeout=2000", "--fetch-retry-maxtimeout=10000")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("installing the official SDKs from npm (sdkclients/package.json) failed: %v\n%s\n"+
			"The gateway's SDK tests need the npm registry; set %s=1 to skip them on a machine without it.", err, out, SkipNPMEnv)
	}
	t.Logf("installed the SDKs from npm into %s in %v", dir, time.Since(start).Round(time.Millisecond))
	if err := os.WriteFile(filepath.Join(tmp, "installed"), pkg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another run installed the same pin meanwhile: use theirs.
		if _, serr := os.Stat(filepath.Join(dir, "installed")); serr != nil {
			t.Fatalf("putting the SDKs in place: %v", err)
		}
	}
	return modules
}

// sdkDriver is sdkclients/driver.cjs running: it runs one SDK case a command.
type sdkDriver struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	lines    chan string
	n        int
	versions map[string]string
	mu       sync.Mutex
	stderr   bytes.Buffer
}

func (d *sdkDriver) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.Write(p)
}

func (d *sdkDriver) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

func startSDKDriver(t *testing.T, modules string) *sdkDriver {
	t.Helper()
	d := &sdkDriver{lines: make(chan string, 1)}
	d.cmd = exec.Command("node", filepath.Join("sdkclients", "driver.cjs"))
	// The SDKs read their vendor's variables (base URL, keys, log level); none of
	// the machine's may change what the test sees.
	env := []string{"NODE_PATH=" + modules}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "NODE_") {
			env = append(env, kv)
		}
	}
	d.cmd.Env = env
	d.cmd.Stderr = d
	d.in, _ = d.cmd.StdinPipe()
	out, _ := d.cmd.StdoutPipe()
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
	}()
	t.Cleanup(func() {
		d.in.Close()
		done := make(chan struct{})
		go func() { d.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			d.cmd.Process.Kill()
			<-done
		}
	})
	var hello struct {
		Ready    bool
		Versions map[string]string
	}
	d.read(t, &hello)
	if !hello.Ready {
		t.Fatalf("the SDK driver did not start: %s", d.log())
	}
	d.versions = hello.Versions
	return d
}

func (d *sdkDriver) read(t *testing.T, v any) {
	t.Helper()
	select {
	case line, ok := <-d.lines:
		if !ok {
			t.Fatalf("the SDK driver exited: %s", d.log())
		}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			t.Fatalf("the SDK driver printed %q: %v", line, err)
		}
	case <-time.After(90 * time.Second):
		// An SDK that waits out a long Retry-After ends here.
		t.Fatalf("the SDK driver gave no answer in 90 s: %s", d.log())
	}
}

// do runs a case of an SDK and returns what the SDK gave back.
func (d *sdkDriver) do(t *testing.T, sdk, name string, args map[string]any) sdkResult {
	t.Helper()
	d.n++
	b, _ := json.Marshal(map[string]any{"id": d.n, "sdk": sdk, "case": name, "args": args})
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("writing to the SDK driver: %v: %s", err, d.log())
	}
	var r sdkResult
	d.read(t, &r)
	if r.ID != d.n {
		t.Fatalf("the SDK driver answered command %d, not %d", r.ID, d.n)
	}
	return r
}

type sdkUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokens          int64 `json:"input_tokens"`
	OutputTokens         int64 `json:"output_tokens"`
	CacheReadInputTokens int64 `json:"cache_read_input_tokens"`
}

// in, out and cached are the SDK's usage in the audit's terms (all input tokens,
// cached ones included, as the audit counts them).
func (u *sdkUsage) in() int64 {
	if u.PromptTokens > 0 {
		return u.PromptTokens
	}
	return u.InputTokens + u.CacheReadInputTokens
}

func (u *sdkUsage) out() int64 { return u.CompletionTokens + u.OutputTokens }

func (u *sdkUsage) cached() int64 {
	if u.PromptTokensDetails != nil {
		return u.PromptTokensDetails.CachedTokens
	}
	return u.CacheReadInputTokens
}

type sdkAnswer struct {
	Text      string `json:"text"`
	ToolCalls []struct {
		ID, Name, Arguments string
	} `json:"tool_calls"`
	Stop      string    `json:"stop"`
	Usage     *sdkUsage `json:"usage"`
	RequestID string    `json:"request_id"`
	Chunks    int       `json:"chunks"`
	Events    []string  `json:"events"`
}

type sdkError struct {
	Class        string `json:"class"`
	APIError     bool   `json:"api_error"`
	Status       int    `json:"status"`
	Type         string `json:"type"`
	Code         string `json:"code"`
	Message      string `json:"message"`
	RequestID    string `json:"request_id"`
	RetryAfter   string `json:"retry_after"`
	RetryAfterMS string `json:"retry_after_ms"`
	ShouldRetry  string `json:"should_retry"`
}

type sdkAttempt struct {
	AtMS   float64 `json:"at_ms"`
	Retry  string  `json:"retry"`
	Status int     `json:"status"`
}

type sdkResult struct {
	ID int `json:"id"`
	sdkAnswer
	IDs         []string          `json:"ids"`
	Retrieved   string            `json:"retrieved"`
	Turns       []sdkAnswer       `json:"turns"`
	Error       *sdkError         `json:"error"`
	Partial     sdkAnswer         `json:"partial"`
	Attempts    []sdkAttempt      `json:"attempts"`
	SentHeaders map[string]string `json:"sent_headers"`
}

func (r sdkResult) statuses() []int {
	var s []int
	for _, a := range r.Attempts {
		s = append(s, a.Status)
	}
	return s
}

// TestOfficialSDKs meets the gateway with the clients people use: the official
// OpenAI and Anthropic SDKs for Node, from npm, each running what an application
// does (whole and streamed answers, tools and the turn with their results, an
// image, the models list) and meeting every refusal the gateway makes, which the
// SDK must turn into its own error class and retry, or not, as it documents. The
// effect is checked on both sides: what the SDK reports, and the gateway's audit
// and usage.
func TestOfficialSDKs(t *testing.T) {
	modules := sdkModules(t)
	tm := newTeam(t, "sqlite")
	drv := startSDKDriver(t, modules)
	t.Logf("SDKs: openai %s, @anthropic-ai/sdk %s", drv.versions["openai"], drv.versions["anthropic"])
	tm.must("", "config", "set", "limits.max_body_mb", "1")
	// A user per SDK, so that its usage can be summed apart; users whose limits
	// the SDKs meet. The last one's token working at serve means all of these
	// changes are in force.
	toks := map[string]string{}
	for _, d := range dialects {
		toks[d] = tm.addUser("sdk-"+d, "--team", "web")
		toks["quota-"+d] = tm.addUser("quota-"+d, "--daily-tokens", "50")
		toks["rate-"+d] = tm.addUser("rate-"+d, "--rpm", "1")
	}
	nobody := tm.addUser("nobody", "--models", "some-other-model")
	waitFor(t, "the new users to reach serve", func() bool {
		req, _ := http.NewRequest("GET", tm.gw.URL+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+nobody)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			fake := tm.fake(d)
			caseName := map[string]string{"openai": "chat", "anthropic": "messages"}[d]
			args := func(tok, trace string, kv ...any) map[string]any {
				a := map[string]any{"token": tok, "base_url": tm.gw.URL, "trace": trace}
				for i := 0; i+1 < len(kv); i += 2 {
					a[kv[i].(string)] = kv[i+1]
				}
				return a
			}
			// ask sends one request: mode "whole" or "stream" (Anthropic: also
			// "raw", create with stream: true instead of the stream helper).
			ask := func(tok, trace, mode string, params map[string]any, kv ...any) sdkResult {
				t.Helper()
				p := map[string]any{}
				for k, v := range params {
					p[k] = v
				}
				if d == "openai" {
					p["stream"] = mode != "whole"
				} else {
					delete(p, "stream")
					kv = append(kv, "mode", mode)
				}
				return drv.do(t, d, caseName, args(tok, trace, append([]any{"params", p}, kv...)...))
			}
			tok := toks[d]
			want := map[string]int{} // audit rows expected, by trace id
			trace := func(name string, rows int) string {
				id := "sdk-" + d + "-" + name
				want[id] = rows
				return id
			}
			ok := func(name string, r sdkResult) {
				t.Helper()
				if r.Error != nil {
					t.Fatalf("%s: the SDK raised %+v (attempts %v)\ngateway log:\n%s", name, *r.Error, r.statuses(), tail(tm.gw.log(), 3000))
				}
			}

			// The models list, and one model, as the SDK pages them.
			r := drv.do(t, d, "models", args(tok, "", "retrieve", model(d)))
			if r.Error != nil {
				t.Errorf("models: the SDK raised %+v", *r.Error)
			} else if !slices.Equal(sorted(r.IDs), []string{"claude", "gpt"}) || r.Retrieved != model(d) {
				t.Errorf("models.list() %v, models.retrieve() %q", r.IDs, r.Retrieved)
			}

			// A whole answer: text, the usage as the SDK reports it, the request
			// id the SDK shows (the gateway's audit row). An application's own
			// organization and project (OpenAI) and the SDK's telemetry headers
			// stay with the gateway.
			fake.Add(modeltest.Turn{Text: "Hello whole.", InputTokens: 11, OutputTokens: 3, CachedTokens: 4})
			wholeTrace := trace("whole", 1)
			whole := ask(tok, wholeTrace, "whole", chatBody(d, model(d), "hi", false, nil), "organization", "org-client", "project", "proj-client")
			ok("whole", whole)
			wantStop := map[string]string{"openai": "stop", "anthropic": "end_turn"}[d]
			if whole.Text != "Hello whole." || whole.Stop != wantStop || whole.Usage == nil {
				t.Fatalf("whole answer %+v", whole.sdkAnswer)
			}
			if u := whole.Usage; u.in() != 11 || u.out() != 3 || u.cached() != 4 || d == "openai" && u.TotalTokens != 14 || d == "anthropic" && u.InputTokens != 7 {
				t.Errorf("whole answer's usage as the SDK reports it: %+v", *u)
			}
			up := fake.Last().Header
			for k := range up {
				if strings.HasPrefix(strings.ToLower(k), "x-stainless") || strings.HasPrefix(strings.ToLower(k), "openai-") {
					t.Errorf("the client's header %s reached the upstream", k)
				}
			}
			if d == "openai" && whole.SentHeaders["openai-organization"] != "org-client" {
				t.Errorf("the SDK did not send its organization: %v", whole.SentHeaders)
			}
			if d == "anthropic" && (whole.SentHeaders["anthropic-version"] == "" || up.Get("anthropic-version") != whole.SentHeaders["anthropic-version"]) {
				t.Errorf("anthropic-version: the SDK sent %q, the upstream got %q", whole.SentHeaders["anthropic-version"], up.Get("anthropic-version"))
			}

			// Streamed with the usage asked for: the SDK sees the stream's events
			// to their end ([DONE] / message_stop) and the final usage.
			fake.Add(modeltest.Turn{Text: "Hello streamed, piece by piece.", InputTokens: 12, OutputTokens: 7})
			streamTrace := trace("stream", 1)
			var withUsage map[string]any
			if d == "openai" {
				withUsage = map[string]any{"stream_options": map[string]any{"include_usage": true}}
			}
			stream := ask(tok, streamTrace, "stream", chatBody(d, model(d), "hi", true, withUsage))
			ok("stream", stream)
			if stream.Text != "Hello streamed, piece by piece." || stream.Stop != wantStop || stream.Usage == nil || stream.Usage.in() != 12 || stream.Usage.out() != 7 {
				t.Errorf("streamed answer %+v usage %+v", stream.sdkAnswer, stream.Usage)
			}
			if d == "anthropic" {
				for _, ev := range []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"} {
					if !slices.Contains(stream.Events, ev) {
						t.Errorf("the stream helper saw no %s event: %v", ev, stream.Events)
					}
				}
			} else if stream.Chunks < 4 {
				t.Errorf("%d chunks", stream.Chunks)
			}

			// Streamed without asking for usage (OpenAI: the gateway asks the
			// upstream itself and hides the usage chunk), or read raw (Anthropic:
			// create with stream: true).
			fake.Add(modeltest.Turn{Text: "Quiet stream.", InputTokens: 9, OutputTokens: 4})
			quiet := ask(tok, trace("quiet", 1), map[string]string{"openai": "stream", "anthropic": "raw"}[d], chatBody(d, model(d), "hi", true, nil))
			ok("quiet", quiet)
			if quiet.Text != "Quiet stream." {
				t.Errorf("quiet stream %+v", quiet.sdkAnswer)
			}
			if d == "openai" && quiet.Usage != nil {
				t.Errorf("a usage chunk reached a client that did not ask for it: %+v", *quiet.Usage)
			}
			if d == "anthropic" && (quiet.Usage == nil || quiet.Usage.in() != 9 || quiet.Usage.out() != 4 || quiet.Events[len(quiet.Events)-1] != "message_stop") {
				t.Errorf("raw stream: usage %+v events %v", quiet.Usage, quiet.Events)
			}

			// Tools: definitions in, a streamed call out, the turn with its result
			// built from what the SDK returned; the upstream sees the result answer
			// the call by its id.
			fake.Add(modeltest.Tools("get_weather", `{"city":"Lisbon"}`), modeltest.Text("It is sunny in Lisbon."))
			tools := drv.do(t, d, "tools", args(tok, trace("tools", 2), "mode", "stream", "results", map[string]string{"get_weather": "sunny, 24 °C"},
				"params", chatBody(d, model(d), "Weather in Lisbon?", true, map[string]any{"tools": toolDefs(d)})))
			ok("tools", tools)
			if len(tools.Turns) != 2 || len(tools.Turns[0].ToolCalls) != 1 {
				t.Fatalf("tool turns %+v", tools.Turns)
			}
			call := tools.Turns[0].ToolCalls[0]
			var cityArgs struct{ City string }
			json.Unmarshal([]byte(call.Arguments), &cityArgs)
			if call.Name != "get_weather" || cityArgs.City != "Lisbon" || call.ID == "" || tools.Turns[0].Stop != map[string]string{"openai": "tool_calls", "anthropic": "tool_use"}[d] {
				t.Errorf("tool call as the SDK gathered it: %+v, stop %q", call, tools.Turns[0].Stop)
			}
			if tools.Turns[1].Text != "It is sunny in Lisbon." {
				t.Errorf("answer after the tool result: %+v", tools.Turns[1])
			}
			reqs := fake.Requests()
			first, second := reqs[len(reqs)-2], reqs[len(reqs)-1]
			if len(first.Tools) != 1 || first.Tools[0].Name != "get_weather" || !strings.Contains(string(first.Tools[0].Parameters), "city") {
				t.Errorf("the upstream got tools %+v", first.Tools)
			}
			var results []modeltest.ToolResult
			for _, m := range second.Messages {
				results = append(results, m.ToolResults...)
			}
			if len(results) != 1 || results[0].CallID != call.ID || results[0].Content != "sunny, 24 °C" {
				t.Errorf("the upstream got tool results %+v for call %s", results, call.ID)
			}

			// An image.
			fake.Add(modeltest.Text("I see a red dot."))
			img := ask(tok, trace("image", 1), "whole", imageBody(d))
			ok("image", img)
			if imgs := fake.Last().Messages[0].Images; img.Text != "I see a red dot." || len(imgs) != 1 || !strings.HasPrefix(imgs[0], "data:image/png;base64,iVBOR") {
				t.Errorf("image: answer %q, upstream images %v", img.Text, imgs)
			}

			// A bad token: the SDK's AuthenticationError, at once, no retry.
			bad := ask("fgw_aaaaaaaaaaaaaaaa_"+strings.Repeat("b", 43), trace("badtoken", 1), "whole", chatBody(d, model(d), "hi", false, nil))
			if e := bad.Error; e == nil || e.Class != "AuthenticationError" || e.Status != 401 || !strings.Contains(e.Message, "not valid") || len(bad.Attempts) != 1 ||
				d == "openai" && e.Code != "invalid_api_key" || d == "anthropic" && e.Type != "authentication_error" {
				t.Errorf("bad token: %+v, attempts %v", bad.Error, bad.statuses())
			}

			// A model this user may not call: PermissionDeniedError, no retry.
			denied := ask(nobody, trace("denied", 1), "whole", chatBody(d, model(d), "hi", false, nil))
			if e := denied.Error; e == nil || e.Class != "PermissionDeniedError" || e.Status != 403 || !strings.Contains(e.Message, "may not call") || len(denied.Attempts) != 1 || e.Type != "permission_error" {
				t.Errorf("model not allowed: %+v, attempts %v", denied.Error, denied.statuses())
			}

			// A body over the gateway's limit: the SDK reads the 413 (not a broken
			// connection, which it would retry) and does not retry it.
			large := ask(tok, trace("large", 1), "whole", chatBody(d, model(d), strings.Repeat("x", 1100<<10), false, nil))
			if e := large.Error; e == nil || e.Status != 413 || !strings.Contains(e.Message, "larger than 1 MiB") || len(large.Attempts) != 1 ||
				d == "anthropic" && e.Class != "ContentTooLargeError" {
				t.Errorf("body too large: %+v, attempts %v", large.Error, large.statuses())
			}

			// The day's token quota used up: RateLimitError with the wait until
			// midnight UTC, and the SDK told not to retry (it would otherwise
			// sleep out a Retry-After of hours).
			fake.Add(modeltest.Turn{Text: "That used my day.", InputTokens: 40, OutputTokens: 20})
			spend := ask(toks["quota-"+d], trace("quota", 2), "whole", chatBody(d, model(d), "hi", false, nil))
			ok("quota spend", spend)
			tm.requests(1, "--user", "quota-"+d)
			over := ask(toks["quota-"+d], "sdk-"+d+"-quota", "whole", chatBody(d, model(d), "hi", false, nil))
			if e := over.Error; e == nil || e.Class != "RateLimitError" || e.Status != 429 || !strings.Contains(e.Message, "used up") || len(over.Attempts) != 1 || e.ShouldRetry != "false" {
				t.Errorf("quota used up: %+v, attempts %v", over.Error, over.statuses())
			} else if s, _ := strconv.Atoi(e.RetryAfter); s < 1 || s > 86400 {
				t.Errorf("quota used up: Retry-After %q", e.RetryAfter)
			}

			// The requests-a-minute limit: RateLimitError with the minute's
			// Retry-After, which the SDK may retry after (not here: it is up to a
			// minute; the upstream's short Retry-After below shows the wait).
			rateTrace := trace("rate", 2)
			fake.Add(modeltest.Text("first of the minute"))
			ok("rate", ask(toks["rate-"+d], rateTrace, "whole", chatBody(d, model(d), "hi", false, nil)))
			limited := ask(toks["rate-"+d], rateTrace, "whole", chatBody(d, model(d), "hi", false, nil), "max_retries", 0)
			if limited.Error == nil {
				// The minute turned between the two: the next one is refused.
				want[rateTrace]++
				limited = ask(toks["rate-"+d], rateTrace, "whole", chatBody(d, model(d), "hi", false, nil), "max_retries", 0)
			}
			if e := limited.Error; e == nil || e.Class != "RateLimitError" || e.Status != 429 || !strings.Contains(e.Message, "requests a minute") || e.ShouldRetry == "false" {
				t.Errorf("rate limited: %+v", limited.Error)
			} else if s, _ := strconv.Atoi(e.RetryAfter); s < 1 || s > 61 {
				t.Errorf("rate limited: Retry-After %q", e.RetryAfter)
			}

			// The upstream's 429s with Retry-After, then retry-after-ms: the SDK
			// waits as told each time, and the third attempt answers.
			fake.Add(modeltest.Fail(429, "1"), modeltest.Turn{Status: 429, RetryAfter: "0", Header: map[string][]string{"Retry-After-Ms": {"1500"}}}, modeltest.Text("after the wait"))
			waited := ask(tok, trace("retryafter", 3), "whole", chatBody(d, model(d), "hi", false, nil))
			ok("retry-after", waited)
			if waited.Text != "after the wait" || !slices.Equal(waited.statuses(), []int{429, 429, 200}) {
				t.Errorf("after 429s: %q, attempts %v", waited.Text, waited.statuses())
			} else if a := waited.Attempts; a[1].AtMS-a[0].AtMS < 1000 || a[2].AtMS-a[1].AtMS < 1500 || a[2].Retry != "2" {
				t.Errorf("the SDK did not wait as told (Retry-After: 1, then retry-after-ms: 1500): %+v", a)
			}

			// An upstream failing (500): the gateway's 502, which the SDK retries;
			// the second attempt answers.
			fake.Add(modeltest.Fail(500, ""), modeltest.Text("recovered"))
			retried := ask(tok, trace("5xx", 2), "whole", chatBody(d, model(d), "hi", false, nil))
			ok("5xx", retried)
			if retried.Text != "recovered" || !slices.Equal(retried.statuses(), []int{502, 200}) {
				t.Errorf("after a 5xx: %q, attempts %v", retried.Text, retried.statuses())
			}
			// Failing on every attempt, the last an overload passed on as it came:
			// the SDK's error for that status once its retries are spent.
			overloaded := map[string]int{"openai": 503, "anthropic": 529}[d]
			fake.Add(modeltest.Fail(500, ""), modeltest.Fail(overloaded, ""))
			failed := ask(tok, trace("5xx-final", 2), "whole", chatBody(d, model(d), "hi", false, nil), "max_retries", 1)
			wantClass := map[string]string{"openai": "InternalServerError", "anthropic": "OverloadedError"}[d]
			if e := failed.Error; e == nil || e.Class != wantClass || e.Status != overloaded || !slices.Equal(failed.statuses(), []int{502, overloaded}) {
				t.Errorf("failing upstream: %+v, attempts %v", failed.Error, failed.statuses())
			}

			// A stream that breaks mid-answer: the gateway ends it with the
			// format's error event, which the SDK raises; what came is kept.
			fake.Add(modeltest.Turn{Text: "This answer will not finish, sadly.", BreakAfter: 4})
			cut := ask(tok, trace("cut", 1), "stream", chatBody(d, model(d), "hi", true, nil))
			if e := cut.Error; e == nil || !e.APIError || !strings.Contains(e.Message, "broke") || cut.Partial.Text == "" || len(cut.Attempts) != 1 {
				t.Errorf("stream cut: %+v, partial %q, attempts %d", cut.Error, cut.Partial.Text, len(cut.Attempts))
			}

			// The gateway's side: one audit row per HTTP attempt, with the
			// status the SDK saw, the tokens the SDK reported, and the id the
			// SDK showed as its request id.
			rows := auditByTrace(t, tm.env, want)
			statuses := func(trace string) []int {
				var s []int
				for _, r := range rows[trace] {
					s = append(s, r.Status)
				}
				return s
			}
			for name, codes := range map[string][]int{
				"whole": {200}, "stream": {200}, "quiet": {200}, "tools": {200, 200}, "image": {200},
				"badtoken": {401}, "denied": {403}, "large": {413}, "quota": {200, 429}, "retryafter": {429, 429, 200},
				"5xx": {502, 200}, "5xx-final": {502, overloaded}, "cut": {502},
			} {
				if got := statuses("sdk-" + d + "-" + name); !slices.Equal(got, codes) {
					t.Errorf("audit of %s: statuses %v, want %v", name, got, codes)
				}
			}
			if got := statuses(rateTrace); got[len(got)-1] != 429 {
				t.Errorf("audit of the rate limit: %v", got)
			}
			for name, a := range map[string]sdkResult{"whole": whole, "stream": stream} {
				row := rows["sdk-"+d+"-"+name][0]
				if row.InputTokens != a.Usage.in() || row.OutputTokens != a.Usage.out() || row.CachedTokens != a.Usage.cached() || row.Estimated || row.User != "sdk-"+d {
					t.Errorf("audit of %s: %+v; the SDK reported %+v", name, row, *a.Usage)
				}
				if a.RequestID == "" || a.RequestID != row.ID {
					t.Errorf("%s: the SDK's request id %q is not the audit row's %q", name, a.RequestID, row.ID)
				}
			}
			if row := rows["sdk-"+d+"-quiet"][0]; row.InputTokens != 9 || row.OutputTokens != 4 || row.Estimated {
				t.Errorf("audit of the quiet stream: %+v", row)
			}
			if e := bad.Error; e != nil && (e.RequestID == "" || e.RequestID != rows["sdk-"+d+"-badtoken"][0].ID) {
				t.Errorf("the bad token's error has request id %q, the audit row %q", e.RequestID, rows["sdk-"+d+"-badtoken"][0].ID)
			}
			if row := rows["sdk-"+d+"-cut"][0]; !row.Estimated || !row.Stream || row.OutputTokens == 0 {
				t.Errorf("audit of the cut stream: %+v", row)
			}

			// And the usage: what the SDK user's requests add up to.
			var in, out int64
			n := 0
			for _, rs := range rows {
				for _, r := range rs {
					if r.User == "sdk-"+d {
						in, out, n = in+r.InputTokens, out+r.OutputTokens, n+1
					}
				}
			}
			var usage []store.UsageRow
			if err := json.Unmarshal([]byte(tm.must("", "usage", "--user", "sdk-"+d, "--by", "user", "--json")), &usage); err != nil || len(usage) != 1 {
				t.Fatalf("usage --json: %v %+v", err, usage)
			}
			if u := usage[0]; u.Requests != int64(n) || u.InputTokens != in || u.OutputTokens != out {
				t.Errorf("usage of sdk-%s: %+v; its audit rows: %d requests, %d in, %d out", d, u, n, in, out)
			}
		})
	}
	if strings.Contains(tm.gw.log(), oaKey) || strings.Contains(tm.gw.log(), anKey) {
		t.Fatal("the serve log holds a key")
	}
}

// auditByTrace waits until the audit holds want[trace] request rows for every
// trace, and returns them by trace, oldest first.
func auditByTrace(t *testing.T, e *env, want map[string]int) map[string][]store.Request {
	t.Helper()
	var by map[string][]store.Request
	deadline := time.Now().Add(15 * time.Second)
	for {
		by = map[string][]store.Request{}
		for _, r := range e.requests(0) {
			if _, ok := want[r.TraceID]; ok {
				by[r.TraceID] = append(by[r.TraceID], r)
			}
		}
		done := true
		for tr, n := range want {
			if len(by[tr]) < n {
				done = false
			}
		}
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for tr, rs := range by {
		sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
		if len(rs) != want[tr] {
			t.Errorf("audit: %d rows of trace %s, want %d: %+v", len(rs), tr, want[tr], rs)
		}
	}
	for tr, n := range want {
		if len(by[tr]) < n {
			t.Fatalf("audit: %d rows of trace %s, want %d", len(by[tr]), tr, n)
		}
	}
	return by
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestSDKVersionsInREADME: the README names the SDK versions the tests pin.
func TestSDKVersionsInREADME(t *testing.T) {
	pkg, err := os.ReadFile(filepath.Join("sdkclients", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Dependencies map[string]string }
	if err := json.Unmarshal(pkg, &p); err != nil || len(p.Dependencies) != 2 {
		t.Fatalf("sdkclients/package.json: %v %v", err, p.Dependencies)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range p.Dependencies {
		if !strings.Contains(string(readme), "`"+name+"@"+v+"`") {
			t.Errorf("README.md does not say the gateway is tested with `%s@%s`", name, v)
		}
	}
}
