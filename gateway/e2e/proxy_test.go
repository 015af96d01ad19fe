package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model/modeltest"
)

const (
	oaKey = "sk-oa-secret-key-1234567890"
	anKey = "sk-ant-secret-key-0987654321"
)

// team is a gateway with an OpenAI-compatible and an Anthropic upstream, a route
// to each, and a user.
type team struct {
	*env
	oa, an *modeltest.Server
	gw     *gateway
	tok    string
}

func newTeam(t *testing.T, engine string) *team {
	e := newEnv(t, engine)
	tm := &team{env: e, oa: modeltest.NewOpenAI(t), an: modeltest.NewAnthropic(t)}
	tm.oa.SetKey(oaKey)
	tm.an.SetKey(anKey)
	e.must(oaKey+"\n", "upstream", "add", "oa", "--kind", "openai", "--base-url", tm.oa.URL, "--api-key-stdin")
	e.must(anKey+"\n", "upstream", "add", "an", "--kind", "anthropic", "--base-url", tm.an.URL, "--api-key-stdin")
	e.must("", "route", "add", "gpt", "--upstream", "oa", "--upstream-model", "gpt-4o-mini")
	e.must("", "route", "add", "claude", "--upstream", "an", "--upstream-model", "claude-sonnet-4-5")
	tm.tok = e.addUser("alice", "--team", "web")
	tm.gw = e.serve()
	return tm
}

func (tm *team) fake(dialect string) *modeltest.Server {
	if dialect == "anthropic" {
		return tm.an
	}
	return tm.oa
}

func model(dialect string) string {
	if dialect == "anthropic" {
		return "claude"
	}
	return "gpt"
}

var dialects = []string{"openai", "anthropic"}

// TestProxyBothWireFormats: whole and streamed answers, text and tools, an image
// in the request, in both wire formats. The upstream gets the gateway's key and
// its own model name, never the user's token; the client gets the vendor's answer
// as it was, and the audit row its usage.
func TestProxyBothWireFormats(t *testing.T) {
	tm := newTeam(t, "sqlite")
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			fake := tm.fake(d)
			fake.Add(
				modeltest.Turn{Text: "Hello whole.", InputTokens: 11, OutputTokens: 3, CachedTokens: 4},
				modeltest.Turn{Text: "Hello streamed, piece by piece.", InputTokens: 12, OutputTokens: 7},
				modeltest.Tools("get_weather", `{"city":"Lisbon"}`, "get_time", `{"tz":"Europe/Lisbon"}`),
				modeltest.Text("I see a red dot."),
			)
			url := tm.gw.URL + endpoint(d)

			// Whole.
			resp := post(t, url, tm.tok, d, chatBody(d, model(d), "hi", false, nil), "X-Ferry-Trace-Id", "trace-whole-"+d)
			body := readAll(t, resp)
			if resp.StatusCode != 200 || !strings.Contains(body, "Hello whole.") {
				t.Fatalf("whole: %d %s", resp.StatusCode, body)
			}
			got := fake.Last()
			if got.Model != model(d)+map[string]string{"openai": "-4o-mini", "anthropic": "-sonnet-4-5"}[d] {
				t.Errorf("upstream got model %q", got.Model)
			}
			if d == "openai" && got.Header.Get("Authorization") != "Bearer "+oaKey || d == "anthropic" && got.Header.Get("x-api-key") != anKey {
				t.Errorf("upstream headers %v", got.Header)
			}
			for k, vs := range got.Header {
				for _, v := range vs {
					if strings.Contains(v, tm.tok) {
						t.Errorf("the user's token reached the upstream in %s", k)
					}
				}
			}
			if got.Header.Get("X-Ferry-Trace-Id") != "" {
				t.Errorf("the trace header went upstream")
			}

			// Streamed: every event passes, the client's own stream format.
			resp = post(t, url, tm.tok, d, chatBody(d, model(d), "hi", true, nil))
			evs := readSSE(t, resp)
			text := streamedText(t, d, evs)
			if text != "Hello streamed, piece by piece." {
				t.Errorf("streamed text %q", text)
			}
			if d == "openai" {
				// The gateway asked for usage; this client did not, and sees none.
				if !fake.Last().IncludeUsage {
					t.Errorf("the gateway did not ask the upstream for usage")
				}
				for _, ev := range evs {
					if strings.Contains(ev.Data, `"prompt_tokens"`) {
						t.Errorf("a usage chunk reached a client that did not ask: %s", ev.Data)
					}
				}
				if evs[len(evs)-1].Data != "[DONE]" {
					t.Errorf("last event %q", evs[len(evs)-1].Data)
				}
			} else if evs[len(evs)-1].Name != "message_stop" {
				t.Errorf("last event %+v", evs[len(evs)-1])
			}

			// Tools, streamed: both calls' arguments arrive whole.
			tools := toolDefs(d)
			resp = post(t, url, tm.tok, d, chatBody(d, model(d), "weather and time?", true, map[string]any{"tools": tools}))
			calls := streamedToolArgs(t, d, readSSE(t, resp))
			if calls["get_weather"] != `{"city":"Lisbon"}` || calls["get_time"] != `{"tz":"Europe/Lisbon"}` {
				t.Errorf("tool calls %v", calls)
			}
			if n := len(fake.Last().Tools); n != 1 {
				t.Errorf("upstream got %d tools", n)
			}

			// An image goes through as sent.
			resp = post(t, url, tm.tok, d, imageBody(d), nil...)
			if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, "red dot") {
				t.Fatalf("image: %d %s", resp.StatusCode, body)
			}
			if imgs := fake.Last().Messages[0].Images; len(imgs) != 1 || !strings.HasPrefix(imgs[0], "data:image/png;base64,iVBOR") {
				t.Errorf("upstream images %v", imgs)
			}

			// The audit: four rows, with usage; the whole answer's cached tokens.
			rows := tm.requests(4, "--user", "alice")
			var mine []int
			for i, r := range rows {
				if r.Dialect == d {
					mine = append(mine, i)
				}
			}
			if len(mine) != 4 {
				t.Fatalf("%d audit rows of %s: %+v", len(mine), d, rows)
			}
			whole := rows[mine[3]]
			// Anthropic counts cached input apart; the audit counts all input.
			wantIn := int64(11)
			if whole.InputTokens != wantIn || whole.OutputTokens != 3 || whole.CachedTokens != 4 || whole.Estimated || whole.TraceID != "trace-whole-"+d ||
				whole.Upstream != map[string]string{"openai": "oa", "anthropic": "an"}[d] || whole.Team != "web" || whole.Status != 200 || whole.Stream {
				t.Errorf("whole answer's audit row %+v", whole)
			}
			streamed := rows[mine[2]]
			if streamed.InputTokens != 12 || streamed.OutputTokens != 7 || streamed.Estimated || !streamed.Stream || streamed.TTFBMS <= 0 || streamed.TTFBMS > streamed.LatencyMS {
				t.Errorf("streamed answer's audit row %+v", streamed)
			}
		})
	}
	if strings.Contains(tm.gw.log(), oaKey) || strings.Contains(tm.gw.log(), anKey) || strings.Contains(tm.gw.log(), tm.tok) {
		t.Fatal("the serve log holds a key or a token")
	}
}

func toolDefs(d string) []any {
	schema := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	if d == "anthropic" {
		return []any{map[string]any{"name": "get_weather", "description": "Weather of a city", "input_schema": schema}}
	}
	return []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Weather of a city", "parameters": schema}}}
}

// A 1×1 red PNG.
const redDot = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

func imageBody(d string) map[string]any {
	if d == "anthropic" {
		return map[string]any{"model": "claude", "max_tokens": 100, "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": redDot}},
			map[string]any{"type": "text", "text": "What is this?"}}}}}
	}
	return map[string]any{"model": "gpt", "messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "What is this?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + redDot}}}}}}
}

func streamedText(t *testing.T, d string, evs []sseEvent) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range evs {
		if ev.Data == "[DONE]" {
			continue
		}
		var v struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Type  string `json:"type"`
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &v); err != nil {
			t.Fatalf("event %q is not JSON", ev.Data)
		}
		if d == "openai" {
			for _, c := range v.Choices {
				b.WriteString(c.Delta.Content)
			}
		} else if v.Type == "content_block_delta" && v.Delta.Type == "text_delta" {
			b.WriteString(v.Delta.Text)
		}
	}
	return b.String()
}

func streamedToolArgs(t *testing.T, d string, evs []sseEvent) map[string]string {
	t.Helper()
	out := map[string]string{}
	names := map[int]string{}
	for _, ev := range evs {
		if ev.Data == "[DONE]" {
			continue
		}
		if d == "openai" {
			var v struct {
				Choices []struct {
					Delta struct {
						ToolCalls []struct {
							Index    int `json:"index"`
							Function struct {
								Name      string `json:"name"`
								Arguments string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"delta"`
				} `json:"choices"`
			}
			json.Unmarshal([]byte(ev.Data), &v)
			for _, c := range v.Choices {
				for _, tc := range c.Delta.ToolCalls {
					if tc.Function.Name != "" {
						names[tc.Index] = tc.Function.Name
					}
					out[names[tc.Index]] += tc.Function.Arguments
				}
			}
			continue
		}
		var v struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		json.Unmarshal([]byte(ev.Data), &v)
		switch v.Type {
		case "content_block_start":
			if v.ContentBlock.Type == "tool_use" {
				names[v.Index] = v.ContentBlock.Name
			}
		case "content_block_delta":
			if n, ok := names[v.Index]; ok {
				out[n] += v.Delta.PartialJSON
			}
		}
	}
	return out
}

func errorOf(t *testing.T, d string, body string) (typ, msg string) {
	t.Helper()
	var v struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("error body %q is not JSON", body)
	}
	if d == "anthropic" && v.Type != "error" {
		t.Fatalf("an Anthropic error body must have type error: %s", body)
	}
	if v.Error.Message == "" {
		t.Fatalf("error body without a message: %s", body)
	}
	return v.Error.Type, v.Error.Message
}

// TestErrorsInTheClientsDialect: every refusal comes in the endpoint's own error
// shape, with the status a vendor SDK retries correctly, and says what to do.
func TestErrorsInTheClientsDialect(t *testing.T) {
	tm := newTeam(t, "sqlite")
	bob := tm.addUser("bob", "--models", "claude")
	tm.must("", "config", "set", "limits.max_body_mb", "1")
	waitFor(t, "the setting to reach serve", func() bool {
		resp := post(t, tm.gw.URL+"/v1/chat/completions", tm.tok, "openai", chatBody("openai", "gpt", strings.Repeat("x", 1100<<10), false, nil))
		readAll(t, resp)
		return resp.StatusCode == 413
	})
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			url := tm.gw.URL + endpoint(d)
			cases := []struct {
				name   string
				tok    string
				body   any
				status int
				typ    string
				says   string
			}{
				{"no token", "", chatBody(d, model(d), "hi", false, nil), 401, map[string]string{"openai": "invalid_request_error", "anthropic": "authentication_error"}[d], "no token"},
				{"bad token", "fgw_aaaaaaaaaaaaaaaa_" + strings.Repeat("b", 43), chatBody(d, model(d), "hi", false, nil), 401, "", "not valid"},
				{"not a token", "sk-whatever", chatBody(d, model(d), "hi", false, nil), 401, "", "not valid"},
				{"model not allowed", bob, chatBody(d, "gpt", "hi", false, nil), 403, "permission_error", "may not call model"},
				{"no route", tm.tok, chatBody(d, "llama-9", "hi", false, nil), 404, map[string]string{"openai": "invalid_request_error", "anthropic": "not_found_error"}[d], "no route"},
				{"not JSON", tm.tok, []byte("{nope"), 400, "invalid_request_error", "not a JSON object"},
				{"too large", tm.tok, chatBody(d, model(d), strings.Repeat("x", 1100<<10), false, nil), 413, map[string]string{"openai": "invalid_request_error", "anthropic": "request_too_large"}[d], "larger than 1 MiB"},
			}
			// A model of the other wire format is translated to, except what that
			// format cannot carry.
			untranslatable := chatBody(d, "claude", "hi", false, map[string]any{"n": 2})
			if d == "anthropic" {
				untranslatable = chatBody(d, "gpt", "hi", false, map[string]any{"messages": []any{map[string]any{"role": "user",
					"content": []any{map[string]any{"type": "document", "source": map[string]any{"type": "text", "media_type": "text/plain", "data": "x"}}}}}})
			}
			cases = append(cases, struct {
				name   string
				tok    string
				body   any
				status int
				typ    string
				says   string
			}{"untranslatable", tm.tok, untranslatable, 400, "invalid_request_error", "cannot be translated"})
			for _, c := range cases {
				if c.name == "model not allowed" && d == "anthropic" {
					c.body = chatBody(d, "gpt", "hi", false, nil) // bob may call claude only
				}
				resp := post(t, url, c.tok, d, c.body)
				body := readAll(t, resp)
				if resp.StatusCode != c.status {
					t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.status, body)
					continue
				}
				typ, msg := errorOf(t, d, body)
				if c.typ != "" && typ != c.typ || !strings.Contains(msg, c.says) {
					t.Errorf("%s: %s %q", c.name, typ, msg)
				}
			}
		})
	}
	// Wrong endpoints say which exist.
	resp, _ := http.Get(tm.gw.URL + "/v1/embeddings")
	if body := readAll(t, resp); resp.StatusCode != 404 || !strings.Contains(body, "/v1/chat/completions") {
		t.Errorf("unknown endpoint: %d %s", resp.StatusCode, body)
	}
	// Refusals before any upstream are audited too.
	rows := tm.requests(16)
	bad := 0
	for _, r := range rows {
		if r.Status == 401 && r.User == "" {
			bad++
		}
	}
	if bad < 6 {
		t.Errorf("%d audited refusals of bad tokens", bad)
	}
}

// TestUpstreamFailures: an upstream's refusal of the request passes on as it came
// (its key scrubbed); a refusal of the gateway's key is the gateway's 502; an
// upstream that fails before answering hands over to the route's fallback; one
// that fails mid-stream ends the client's stream with the dialect's error event.
func TestUpstreamFailures(t *testing.T) {
	tm := newTeam(t, "sqlite")
	oa2 := modeltest.NewOpenAI(t)
	an2 := modeltest.NewAnthropic(t)
	tm.must("", "upstream", "add", "oa2", "--kind", "openai", "--base-url", oa2.URL)
	tm.must("", "upstream", "add", "an2", "--kind", "anthropic", "--base-url", an2.URL)
	tm.must("", "upstream", "add", "dead", "--kind", "openai", "--base-url", "http://127.0.0.1:1/v1")
	tm.must("", "route", "add", "gpt", "--upstream", "oa", "--upstream-model", "gpt-4o-mini", "--fallback", "oa2")
	tm.must("", "route", "add", "claude", "--upstream", "an", "--upstream-model", "claude-sonnet-4-5", "--fallback", "an2")
	tm.must("", "route", "add", "gpt-dead", "--upstream", "dead", "--fallback", "oa2")
	tm.gw.waitGeneration(t, 11)
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			fake, second := tm.fake(d), map[string]*modeltest.Server{"openai": oa2, "anthropic": an2}[d]
			url := tm.gw.URL + endpoint(d)
			key := map[string]string{"openai": oaKey, "anthropic": anKey}[d]

			// 400 from the vendor: passed on, no fallback, the key scrubbed.
			fake.Add(modeltest.Turn{Status: 400, ErrorMessage: "bad value, and by the way your key is " + key})
			resp := post(t, url, tm.tok, d, chatBody(d, model(d), "hi", false, nil))
			body := readAll(t, resp)
			if resp.StatusCode != 400 || strings.Contains(body, key) || !strings.Contains(body, "[redacted]") {
				t.Errorf("400 passed on: %d %s", resp.StatusCode, body)
			}
			if second.Remaining() != 0 || len(second.Requests()) != 0 {
				t.Errorf("a 400 went to the fallback")
			}

			// 503 then the fallback answers, streamed.
			fake.Add(modeltest.Turn{Status: 503})
			second.Add(modeltest.Text("from the fallback"))
			resp = post(t, url, tm.tok, d, chatBody(d, model(d), "hi", true, nil))
			if text := streamedText(t, d, readSSE(t, resp)); text != "from the fallback" {
				t.Errorf("fallback text %q", text)
			}

			// The gateway's key refused: the client is told it is the gateway's
			// problem, not its token (502, not 401), and the fallback is tried.
			fake.Add(modeltest.Turn{Status: 401})
			second.Add(modeltest.Turn{Status: 401})
			resp = post(t, url, tm.tok, d, chatBody(d, model(d), "hi", false, nil))
			body = readAll(t, resp)
			if _, msg := errorOf(t, d, body); resp.StatusCode != 502 || !strings.Contains(msg, "refused the gateway's key") {
				t.Errorf("upstream 401: %d %s", resp.StatusCode, body)
			}
			// Retrying in a second will not mend the gateway's key: the SDKs are
			// told not to.
			if v := resp.Header.Get("X-Should-Retry"); v != "false" {
				t.Errorf("upstream 401: X-Should-Retry %q", v)
			}

			// A stream that breaks after it began: no fallback (the client has
			// bytes), the stream ends with the dialect's error event.
			fake.Add(modeltest.Turn{Text: "This answer will not finish, sadly.", BreakAfter: 4})
			resp = post(t, url, tm.tok, d, chatBody(d, model(d), "hi", true, nil))
			evs := readSSE(t, resp)
			last := evs[len(evs)-1]
			if d == "anthropic" && last.Name != "error" || !strings.Contains(last.Data, `"error"`) || !strings.Contains(last.Data, "broke") {
				t.Errorf("mid-stream failure ended with %+v", last)
			}
			if d == "openai" && !strings.Contains(last.Data, `"server_error"`) {
				t.Errorf("OpenAI mid-stream error event %s", last.Data)
			}

			// The vendor's own in-stream error event passes as it came.
			fake.Add(modeltest.Turn{Text: "partial", StreamError: true})
			resp = post(t, url, tm.tok, d, chatBody(d, model(d), "hi", true, nil))
			evs = readSSE(t, resp)
			if last := evs[len(evs)-1]; !strings.Contains(last.Data, "error") {
				t.Errorf("vendor error event: %+v", last)
			}

			rows := tm.requests(0)
			var fb, cut bool
			for _, r := range rows {
				if r.Dialect != d {
					continue
				}
				if r.Attempts == 2 && r.Status == 200 && r.Upstream == map[string]string{"openai": "oa2", "anthropic": "an2"}[d] {
					fb = true
				}
				if r.Status == 502 && r.Stream && r.Estimated && r.OutputTokens > 0 {
					cut = true
				}
			}
			if !fb || !cut {
				t.Errorf("audit lacks the fallback (%v) or the cut stream with estimated usage (%v): %+v", fb, cut, rows)
			}
		})
	}
	// A dead upstream (connection refused) falls back too.
	oa2.Add(modeltest.Text("alive"))
	resp := post(t, tm.gw.URL+"/v1/chat/completions", tm.tok, "openai", chatBody("openai", "gpt-dead", "hi", false, nil))
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, "alive") {
		t.Errorf("dead upstream: %d %s", resp.StatusCode, body)
	}
	if strings.Contains(tm.gw.log(), oaKey) || strings.Contains(tm.gw.log(), anKey) {
		t.Fatal("the serve log holds a key")
	}
}

// TestClientDisconnectCancelsUpstream: a client that goes away mid-stream ends
// the upstream call at once, and the audit says so with estimated usage.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	tm := newTeam(t, "sqlite")
	for _, d := range dialects {
		fake := tm.fake(d)
		fake.Add(modeltest.Turn{Text: strings.Repeat("slow words ", 200), ChunkDelay: 20 * time.Millisecond})
		resp := post(t, tm.gw.URL+endpoint(d), tm.tok, d, chatBody(d, model(d), "hi", true, nil))
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		waitFor(t, d+" upstream to see the cancel", func() bool { return fake.Last().Aborted })
	}
	rows := tm.requests(2)
	for _, r := range rows {
		if r.Status != 499 || !r.Estimated {
			t.Errorf("audit of a client that went away: %+v", r)
		}
	}
}

// TestDisabledMidStream: disabling a user from the command line while their
// answer streams ends it with the dialect's error event, within a second or two.
func TestDisabledMidStream(t *testing.T) {
	tm := newTeam(t, "sqlite")
	for i, d := range dialects {
		if i > 0 {
			g := tm.gw.generation(t)
			tm.must("", "user", "enable", "alice")
			tm.gw.waitGeneration(t, g+1)
		}
		fake := tm.fake(d)
		fake.Add(modeltest.Turn{Text: strings.Repeat("long answer ", 500), ChunkDelay: 10 * time.Millisecond})
		resp := post(t, tm.gw.URL+endpoint(d), tm.tok, d, chatBody(d, model(d), "hi", true, nil))
		br := bufio.NewReader(resp.Body)
		br.ReadString('\n')
		start := time.Now()
		tm.must("", "user", "disable", "alice")
		var last string
		for {
			line, err := br.ReadString('\n')
			if strings.HasPrefix(line, "data: ") {
				last = line
			}
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		t.Logf("%s: the stream ended %v after disable", d, time.Since(start).Round(time.Millisecond))
		if !strings.Contains(last, "disabled") || !strings.Contains(last, `"error"`) {
			t.Errorf("%s: last event %q", d, last)
		}
		waitFor(t, d+": the upstream call to end", func() bool { return fake.Last().Aborted })
		// And the next request is refused.
		resp = post(t, tm.gw.URL+endpoint(d), tm.tok, d, chatBody(d, model(d), "hi", false, nil))
		if body := readAll(t, resp); resp.StatusCode != 403 || !strings.Contains(body, "disabled") {
			t.Errorf("%s: after disable: %d %s", d, resp.StatusCode, body)
		}
	}
}
