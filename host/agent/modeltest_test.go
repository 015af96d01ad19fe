package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/storage"
)

// The loop against the real provider clients and the fake vendors: tool calls whose
// arguments stream in pieces, several in one turn, a retried 429 in the diagnostics
// record, for both wire formats.
func TestLoopThroughFakeVendors(t *testing.T) {
	for _, kind := range []string{modeltest.OpenAI, modeltest.Anthropic} {
		t.Run(kind, func(t *testing.T) {
			fake := modeltest.New(t, kind,
				modeltest.Fail(429, "0"),
				modeltest.Tools("echo", `{"text":"one"}`, "create_task", `{"subject":"check the echo"}`),
				modeltest.Text("Echoed one and made a task."),
			)
			defer fake.Close()
			e := newEnv(t, &fakeProvider{})
			ctx := context.Background()
			if _, _, err := e.db.SaveProvider(ctx, storage.ProviderConfig{ID: "v", Kind: kind, BaseURL: fake.URL, Model: "fake-model", Default: true}); err != nil {
				t.Fatal(err)
			}
			e.db.SetSecret(ctx, "provider.v.key", []byte("sk-test"))
			e.m.opts.Open = func(ctx context.Context, id string) (model.Provider, error) { return model.Open(ctx, e.db, id) }

			r, out := e.send("echo one, and track it", "")
			if out.Status != storage.RunCompleted || out.Text != "Echoed one and made a task." {
				t.Fatalf("outcome %+v", out)
			}
			var deltas strings.Builder
			for _, ev := range e.eventsOf(r.ID) {
				if ev.Type == EventTextDelta {
					deltas.WriteString(ev.Text)
				}
			}
			if deltas.String() != out.Text {
				t.Errorf("streamed %q", deltas.String())
			}
			var results []modeltest.ToolResult
			for _, m := range fake.Last().Messages {
				results = append(results, m.ToolResults...)
			}
			if len(results) != 2 || !strings.Contains(results[0].Content, `"echo":"one"`) || !strings.Contains(results[1].Content, "check the echo") {
				t.Fatalf("results the vendor got: %+v", results)
			}
			if len(fake.Last().Tools) == 0 {
				t.Fatal("no tools offered to the vendor")
			}
			calls, _ := e.db.ModelCalls(ctx, r.ID)
			if len(calls) != 2 {
				t.Fatalf("%d model calls recorded", len(calls))
			}
			var attempts []recordedAttempt
			json.Unmarshal(calls[0].Attempts, &attempts)
			if len(attempts) != 2 || attempts[0].Status != 429 || calls[0].ProviderID != "v" || calls[0].Model != "fake-model" {
				t.Fatalf("first call's record: attempts %+v, %+v", attempts, calls[0])
			}
		})
	}
}

// TestReasoningKeptAcrossHostRestart: DeepSeek's thinking mode refuses a history
// whose tool-calling turn lacks its reasoning_content; the reasoning is stored with
// the turn, so a conversation resumed by another host still sends it, and it is
// never the answer.
func TestReasoningKeptAcrossHostRestart(t *testing.T) {
	fake := modeltest.NewOpenAI(t,
		modeltest.Turn{Reasoning: "A task first.", ToolCalls: []modeltest.Call{{Name: "create_task", Arguments: `{"subject":"s"}`}}},
		modeltest.Turn{Reasoning: "Now answer.", Text: "Done."},
		modeltest.Turn{Text: "Still here."})
	fake.RequireReasoning()
	e := newEnv(t, &fakeProvider{})
	ctx := context.Background()
	e.db.SaveProvider(ctx, storage.ProviderConfig{ID: "ds", Kind: "openai", BaseURL: fake.URL, Model: "deepseek-v4-flash", Default: true})
	open := func(ctx context.Context, id string) (model.Provider, error) { return model.Open(ctx, e.db, id) }
	e.m.opts.Open = open
	r, out := e.send("make a task", "")
	if out.Status != storage.RunCompleted || out.Text != "Done." {
		t.Fatalf("outcome %+v", out)
	}
	e.close()
	e.open(func(o *Options) { o.Open = open })
	_, out = e.send("and now?", r.ConversationID)
	if out.Status != storage.RunCompleted || out.Text != "Still here." {
		t.Fatalf("after a restart: %+v", out)
	}
	if !strings.Contains(string(fake.Last().Body), `"reasoning_content":"A task first."`) {
		t.Fatalf("the stored reasoning was not sent back: %s", fake.Last().Body)
	}
}
