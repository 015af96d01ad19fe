package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/model/modeltest"
)

// recorder collects what a call reports.
type recorder struct {
	mu       sync.Mutex
	deltas   []string
	attempts []model.Attempt
	sleeps   []time.Duration
}

func (r *recorder) delta(d model.Delta) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deltas = append(r.deltas, d.Text)
}

func (r *recorder) attempt(a model.Attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = append(r.attempts, a)
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.sleeps = append(r.sleeps, d)
	r.mu.Unlock()
	return ctx.Err()
}

func newProvider(t *testing.T, srv *modeltest.Server, rec *recorder, key string) model.Provider {
	t.Helper()
	retry := model.DefaultRetry
	if rec != nil {
		retry.Sleep = rec.sleep
	}
	p, err := model.New(model.Config{ID: "fake", Kind: srv.Kind, BaseURL: srv.URL, Model: "m-1", APIKey: key, Retry: &retry})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var kinds = []string{modeltest.OpenAI, modeltest.Anthropic}

func forKinds(t *testing.T, fn func(t *testing.T, kind string)) {
	for _, k := range kinds {
		t.Run(k, func(t *testing.T) { fn(t, k) })
	}
}

func TestTextStream(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		text := "Hello, wörld — a longer answer so that it arrives in many pieces. 你好!"
		srv := modeltest.New(t, kind, modeltest.Turn{Text: text, Reasoning: "let me think about this carefully", InputTokens: 42, OutputTokens: 17})
		rec := &recorder{}
		p := newProvider(t, srv, rec, "")
		resp, err := p.Stream(context.Background(), model.Request{System: "be brief", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, rec.delta, rec.attempt)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != text || strings.Join(rec.deltas, "") != text {
			t.Fatalf("text %q, deltas %q", resp.Text, rec.deltas)
		}
		if len(rec.deltas) < 5 {
			t.Fatalf("the text came in %d deltas; the fake cuts it in many", len(rec.deltas))
		}
		if resp.StopReason != model.StopEndTurn || resp.Usage != (model.Usage{InputTokens: 42, OutputTokens: 17}) {
			t.Fatalf("stop %q usage %+v", resp.StopReason, resp.Usage)
		}
		if len(resp.ToolCalls) != 0 {
			t.Fatalf("tool calls %+v", resp.ToolCalls)
		}
		if len(rec.attempts) != 1 || rec.attempts[0].Status != 200 || rec.attempts[0].Err != "" {
			t.Fatalf("attempts %+v", rec.attempts)
		}
		got := srv.Last()
		if got.System != "be brief" || got.Model != "m-1" || !got.Stream || len(got.Messages) != 1 || got.Messages[0].Text != "hi" {
			t.Fatalf("request %+v", got)
		}
		if kind == modeltest.OpenAI && !got.IncludeUsage {
			t.Fatal("stream_options.include_usage not sent")
		}
		if kind == modeltest.Anthropic && got.MaxTokens != 4096 {
			t.Fatalf("max_tokens %d, want the default 4096", got.MaxTokens)
		}
	})
}

func TestParallelToolCallsAndRoundTrip(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		args1 := `{"url":"https://example.com/a/long/path?with=query&and=more","max_chars":5000}`
		args2 := `{"subject":"Read the page","description":"ünïcode and \"quotes\""}`
		srv := modeltest.New(t, kind,
			modeltest.Turn{Text: "Let me look.", ToolCalls: []modeltest.Call{
				{ID: "call_a", Name: "web_fetch", Arguments: args1},
				{ID: "call_b", Name: "create_task", Arguments: args2},
				{ID: "call_c", Name: "list_tabs", Arguments: ""},
			}},
			modeltest.Text("Done."))
		p := newProvider(t, srv, nil, "")
		tools := []model.ToolSpec{
			{Name: "web_fetch", Description: "fetch", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`)},
			{Name: "create_task", Description: "task", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "list_tabs", Description: "tabs"},
		}
		msgs := []model.Message{{Role: model.RoleUser, Content: "go"}}
		resp, err := p.Stream(context.Background(), model.Request{Messages: msgs, Tools: tools}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StopReason != model.StopToolUse || len(resp.ToolCalls) != 3 || resp.Text != "Let me look." {
			t.Fatalf("%+v", resp)
		}
		want := []model.ToolCall{{ID: "call_a", Name: "web_fetch", Arguments: json.RawMessage(args1)},
			{ID: "call_b", Name: "create_task", Arguments: json.RawMessage(args2)},
			{ID: "call_c", Name: "list_tabs", Arguments: json.RawMessage(`{}`)}}
		for i, w := range want {
			g := resp.ToolCalls[i]
			if g.ID != w.ID || g.Name != w.Name || string(g.Arguments) != string(w.Arguments) {
				t.Fatalf("call %d: %s %s %s", i, g.ID, g.Name, g.Arguments)
			}
		}
		req1 := srv.Last()
		if len(req1.Tools) != 3 || req1.Tools[0].Name != "web_fetch" || !strings.Contains(string(req1.Tools[0].Parameters), `"url"`) ||
			string(req1.Tools[2].Parameters) != `{"type":"object","properties":{}}` {
			t.Fatalf("tools sent: %+v", req1.Tools)
		}

		// Send the results back; the fake refuses them unless shaped as the vendor requires.
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls},
			model.Message{Role: model.RoleTool, ToolCallID: "call_a", Content: "page text", Images: []string{"data:image/png;base64,iVBORw0KGgo="}},
			model.Message{Role: model.RoleTool, ToolCallID: "call_b", Content: `{"success":true}`},
			model.Message{Role: model.RoleTool, ToolCallID: "call_c", Content: `{"success":false,"code":"HANDLER_ERROR"}`},
			model.Message{Role: model.RoleUser, Content: "and then?"})
		resp, err = p.Stream(context.Background(), model.Request{Messages: msgs, Tools: tools}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "Done." {
			t.Fatalf("%+v", resp)
		}
		req := srv.Last()
		var results []modeltest.ToolResult
		for _, m := range req.Messages {
			results = append(results, m.ToolResults...)
		}
		if len(results) != 3 || results[0].CallID != "call_a" || results[0].Content != "page text" || results[2].CallID != "call_c" {
			t.Fatalf("results sent: %+v", results)
		}
		asst := req.Messages[1]
		if asst.Role != "assistant" || len(asst.ToolCalls) != 3 || asst.ToolCalls[0].Arguments != args1 || asst.Text != "Let me look." {
			t.Fatalf("assistant message sent: %+v", asst)
		}
		switch kind {
		case modeltest.OpenAI:
			// user, assistant, tool ×3, user (the tool's image), user.
			roles := []string{}
			for _, m := range req.Messages {
				roles = append(roles, m.Role)
			}
			if strings.Join(roles, ",") != "user,assistant,tool,tool,tool,user,user" {
				t.Fatalf("roles %v", roles)
			}
			if len(req.Messages[5].Images) != 1 {
				t.Fatalf("the tool's image did not follow the results: %+v", req.Messages[5])
			}
		case modeltest.Anthropic:
			// The three results and the next user text are one user message.
			if len(req.Messages) != 3 || req.Messages[2].Role != "user" ||
				strings.Join(req.Messages[2].Blocks, ",") != "tool_result,tool_result,tool_result,text" {
				t.Fatalf("messages %+v", req.Messages)
			}
			if results[0].Images != 1 {
				t.Fatalf("image not in the tool result: %+v", results[0])
			}
		}
	})
}

func TestUserImages(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := modeltest.New(t, kind, modeltest.Text("a cat"))
		p := newProvider(t, srv, nil, "")
		img := "data:image/png;base64,iVBORw0KGgo="
		if _, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "what is it?", Images: []string{img}}}}, nil, nil); err != nil {
			t.Fatal(err)
		}
		m := srv.Last().Messages[0]
		if len(m.Images) != 1 || m.Images[0] != img || m.Text != "what is it?" {
			t.Fatalf("%+v", m)
		}
	})
}

func TestAuthHeaders(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := modeltest.New(t, kind, modeltest.Text("ok"))
		srv.SetKey("sk-right-key-1234")
		p := newProvider(t, srv, nil, "sk-right-key-1234")
		if _, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil); err != nil {
			t.Fatal(err)
		}
		h := srv.Last().Header
		if kind == modeltest.OpenAI && h.Get("Authorization") != "Bearer sk-right-key-1234" {
			t.Fatalf("headers %v", h)
		}
		if kind == modeltest.Anthropic && (h.Get("x-api-key") != "sk-right-key-1234" || h.Get("anthropic-version") != "2023-06-01") {
			t.Fatalf("headers %v", h)
		}
	})
	// Local servers need no key, and get no Authorization header.
	srv := modeltest.NewOpenAI(t, modeltest.Text("ok"))
	p := newProvider(t, srv, nil, "")
	if _, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Last().Header["Authorization"]; ok {
		t.Fatal("an Authorization header was sent without a key")
	}
}

func TestImmediateFailures(t *testing.T) {
	cases := []struct {
		status int
		want   []string
	}{
		{400, []string{"HTTP 400", "Invalid request"}},
		{401, []string{"HTTP 401", "--api-key-stdin", "refused"}},
		{403, []string{"HTTP 403", "permission"}},
		{404, []string{"HTTP 404", "base URL", "model name (m-1)"}},
	}
	forKinds(t, func(t *testing.T, kind string) {
		for _, c := range cases {
			srv := modeltest.New(t, kind, modeltest.Fail(c.status, ""), modeltest.Text("never"))
			rec := &recorder{}
			p := newProvider(t, srv, rec, "sk-wrong")
			_, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, rec.delta, rec.attempt)
			var me *model.Error
			if !errors.As(err, &me) || me.Status != c.status || me.Retryable {
				t.Fatalf("%d: %v", c.status, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%d: %q lacks %q", c.status, err, w)
				}
			}
			if len(srv.Requests()) != 1 || len(rec.attempts) != 1 || len(rec.sleeps) != 0 {
				t.Fatalf("%d was retried: %d requests", c.status, len(srv.Requests()))
			}
		}
	})
}

func TestWrongKeyMessage(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := modeltest.New(t, kind, modeltest.Text("never"))
		srv.SetKey("sk-the-right-one")
		for _, key := range []string{"", "sk-wrong-one-xyz"} {
			p := newProvider(t, srv, nil, key)
			_, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil)
			var me *model.Error
			if !errors.As(err, &me) || me.Status != 401 {
				t.Fatalf("key %q: %v", key, err)
			}
			wantFix := "the API key was refused"
			if key == "" {
				wantFix = "no API key is set"
			}
			if !strings.Contains(me.Fix, wantFix) || !strings.Contains(me.Fix, "ferry provider add fake") || me.Message == "" {
				t.Fatalf("key %q: %v", key, err)
			}
		}
	})
}

func TestRetries(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		overloaded := 503
		if kind == modeltest.Anthropic {
			overloaded = 529
		}
		date := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
		srv := modeltest.New(t, kind,
			modeltest.Fail(429, "2"),
			modeltest.Fail(overloaded, ""),
			modeltest.Fail(500, date),
			modeltest.Turn{Status: 429, Header: http.Header{"Retry-After-Ms": {"1500"}}},
			modeltest.Text("finally"))
		rec := &recorder{}
		p := newProvider(t, srv, rec, "")
		resp, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, rec.delta, rec.attempt)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "finally" || len(srv.Requests()) != 5 || len(rec.attempts) != 5 {
			t.Fatalf("%+v, %d requests, %d attempts", resp, len(srv.Requests()), len(rec.attempts))
		}
		if rec.sleeps[0] < 2*time.Second || rec.sleeps[2] < 2*time.Second || rec.sleeps[3] < 1500*time.Millisecond || rec.sleeps[3] >= 2*time.Second {
			t.Fatalf("Retry-After not honoured: %v", rec.sleeps)
		}
		if rec.sleeps[1] <= 0 || rec.sleeps[1] > time.Second {
			t.Fatalf("backoff %v", rec.sleeps[1])
		}
		for i, a := range rec.attempts[:4] {
			if a.Err == "" || a.Wait != rec.sleeps[i] || a.Status == 0 {
				t.Fatalf("attempt %d: %+v", i, a)
			}
		}

		// Five tries at most, then the last error says it gave up.
		srv = modeltest.New(t, kind, modeltest.Fail(500, "0"), modeltest.Fail(500, "0"), modeltest.Fail(500, "0"), modeltest.Fail(500, "0"), modeltest.Fail(500, "0"), modeltest.Text("too late"))
		rec = &recorder{}
		p = newProvider(t, srv, rec, "")
		_, err = p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, rec.attempt)
		if err == nil || !strings.Contains(err.Error(), "gave up after 5 tries") || len(srv.Requests()) != 5 {
			t.Fatalf("%v after %d requests", err, len(srv.Requests()))
		}

		// A wait longer than the policy allows fails at once, saying so.
		srv = modeltest.New(t, kind, modeltest.Fail(429, "3600"))
		p = newProvider(t, srv, rec, "")
		_, err = p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "asks to wait 1h0m0s") {
			t.Fatalf("%v", err)
		}
	})
}

func TestRealSleepHonoursShortRetryAfter(t *testing.T) {
	srv := modeltest.NewOpenAI(t, modeltest.Turn{Status: 429, Header: http.Header{"Retry-After-Ms": {"150"}}}, modeltest.Text("ok"))
	retry := model.DefaultRetry
	retry.BaseDelay = time.Millisecond
	p, _ := model.New(model.Config{ID: "x", Kind: "openai", BaseURL: srv.URL, Model: "m", Retry: &retry})
	start := time.Now()
	if _, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("retried after %v, before the 150 ms asked", d)
	}
}

func TestNetworkErrorRetried(t *testing.T) {
	srv := modeltest.NewOpenAI(t)
	url := srv.URL
	srv.Close()
	rec := &recorder{}
	retry := model.DefaultRetry
	retry.Sleep = rec.sleep
	retry.MaxRetries = 2
	p, _ := model.New(model.Config{ID: "x", Kind: "openai", BaseURL: url, Model: "m", Retry: &retry})
	_, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, rec.attempt)
	if err == nil || !strings.Contains(err.Error(), "cannot reach") || len(rec.attempts) != 3 || rec.attempts[0].Status != 0 {
		t.Fatalf("%v, %+v", err, rec.attempts)
	}
}

func TestBrokenStream(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		// Broken after text was shown: not retried (the text would repeat).
		srv := modeltest.New(t, kind, modeltest.Turn{Text: "a long answer that will be cut off in the middle", BreakAfter: 6}, modeltest.Text("second"))
		rec := &recorder{}
		p := newProvider(t, srv, rec, "")
		_, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, rec.delta, rec.attempt)
		if err == nil || !strings.Contains(err.Error(), "stream broke") || len(srv.Requests()) != 1 || len(rec.deltas) == 0 {
			t.Fatalf("%v, %d requests, deltas %q", err, len(srv.Requests()), rec.deltas)
		}
		// Broken before anything was shown: retried.
		srv = modeltest.New(t, kind, modeltest.Turn{ToolCalls: []modeltest.Call{{Name: "x", Arguments: `{"a":"bcdefghijklmnop"}`}}, BreakAfter: 3}, modeltest.Text("second"))
		p = newProvider(t, srv, rec, "")
		resp, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil)
		if err != nil || resp.Text != "second" {
			t.Fatalf("%v %+v", err, resp)
		}
	})
}

func TestStreamErrorEvent(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := modeltest.New(t, kind, modeltest.Turn{Text: "partial answer", StreamError: true}, modeltest.Text("never"))
		rec := &recorder{}
		p := newProvider(t, srv, rec, "")
		_, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, rec.delta, rec.attempt)
		var me *model.Error
		if !errors.As(err, &me) || me.Status != 0 || me.Type == "" || len(srv.Requests()) != 1 {
			t.Fatalf("%v", err)
		}
		want := map[string]string{modeltest.OpenAI: "server_error", modeltest.Anthropic: "overloaded_error: Overloaded"}[kind]
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q lacks %q", err, want)
		}
		// Before any text: retried.
		srv = modeltest.New(t, kind, modeltest.Turn{StreamError: true}, modeltest.Text("recovered"))
		p = newProvider(t, srv, rec, "")
		resp, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil)
		if err != nil || resp.Text != "recovered" {
			t.Fatalf("%v %+v", err, resp)
		}
	})
}

func TestCancelMidStream(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := modeltest.New(t, kind, modeltest.Turn{Text: strings.Repeat("slow words ", 200), ChunkDelay: 50 * time.Millisecond})
		p := newProvider(t, srv, nil, "")
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan struct{}, 1000)
		var cancelled time.Time
		done := make(chan error)
		go func() {
			_, err := p.Stream(ctx, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, func(model.Delta) { got <- struct{}{} }, nil)
			done <- err
		}()
		<-got
		<-got
		cancelled = time.Now()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v", err)
			}
			if d := time.Since(cancelled); d > 100*time.Millisecond {
				t.Fatalf("returned %v after cancel", d)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Stream did not return after cancel")
		}
	})
}

func TestCancelDuringBackoff(t *testing.T) {
	srv := modeltest.NewOpenAI(t, modeltest.Fail(429, "30"))
	p, _ := model.New(model.Config{ID: "x", Kind: "openai", BaseURL: srv.URL, Model: "m"})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Stream(ctx, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("%v after %v", err, time.Since(start))
	}
}

func TestIdleTimeout(t *testing.T) {
	srv := modeltest.NewOpenAI(t, modeltest.Turn{Text: "abcdefghijklmnopqrstuvwxyz", ChunkDelay: 300 * time.Millisecond})
	retry := model.DefaultRetry
	retry.MaxRetries = 0
	p, _ := model.New(model.Config{ID: "x", Kind: "openai", BaseURL: srv.URL, Model: "m", IdleTimeout: 100 * time.Millisecond, Retry: &retry})
	_, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "sent nothing for 100ms") {
		t.Fatalf("%v", err)
	}
}

func TestStopReasons(t *testing.T) {
	for _, c := range []struct{ kind, vendor, want string }{
		{"openai", "length", model.StopMaxTokens},
		{"openai", "content_filter", "content_filter"},
		{"anthropic", "max_tokens", model.StopMaxTokens},
		{"anthropic", "stop_sequence", model.StopEndTurn},
		{"anthropic", "refusal", "refusal"},
	} {
		srv := modeltest.New(t, c.kind, modeltest.Turn{Text: "x", StopReason: c.vendor})
		p := newProvider(t, srv, nil, "")
		resp, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil)
		if err != nil || resp.StopReason != c.want {
			t.Errorf("%s %s: %v %+v", c.kind, c.vendor, err, resp)
		}
	}
}

func TestScriptExhaustedAndResponder(t *testing.T) {
	srv := modeltest.NewAnthropic(t)
	p := newProvider(t, srv, nil, "")
	_, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no turn left") {
		t.Fatalf("%v", err)
	}
	srv.SetResponder(func(r modeltest.Request) modeltest.Turn { return modeltest.Text("echo " + r.Messages[0].Text) })
	resp, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil)
	if err != nil || resp.Text != "echo hi" {
		t.Fatalf("%v %+v", err, resp)
	}
}

func TestDelay(t *testing.T) {
	srv := modeltest.NewOpenAI(t, modeltest.Turn{Text: "ok", Delay: 200 * time.Millisecond})
	p := newProvider(t, srv, nil, "")
	start := time.Now()
	if _, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > time.Second {
		t.Fatalf("took %v", d)
	}
}
