package storage

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestConversationsAndRuns(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	clock := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	db.Now = func() time.Time { return clock }

	a, err := db.CreateConversation(ctx, Conversation{ID: "a", Title: "first", TabID: 4, Origin: "https://example.com"})
	if err != nil || a.Status != ConversationIdle || !a.CreatedAt.Equal(clock) {
		t.Fatalf("create: %+v %v", a, err)
	}
	clock = clock.Add(time.Second)
	db.CreateConversation(ctx, Conversation{ID: "b"})
	if _, err := db.CreateConversation(ctx, Conversation{ID: "a"}); err == nil {
		t.Fatal("duplicate id accepted")
	}
	clock = clock.Add(time.Second)
	ord, err := db.AppendMessage(ctx, "a", StoredMessage{Role: RoleUser, Content: "hi", Images: []string{"data:image/png;base64,AA=="}})
	if err != nil || ord != 1 {
		t.Fatalf("append: %d %v", ord, err)
	}
	db.AppendMessage(ctx, "a", StoredMessage{Role: RoleAssistant, ToolCalls: json.RawMessage(`[{"id":"1","name":"x","arguments":{}}]`),
		Reasoning: json.RawMessage(`{"text":"think"}`)})
	db.AppendMessage(ctx, "a", StoredMessage{Role: RoleTool, ToolCallID: "1", Content: `{"success":true}`})
	if _, err := db.AppendMessage(ctx, "nope", StoredMessage{Role: RoleUser, Content: "x"}); !errors.Is(err, ErrConversationNotFound) {
		t.Fatalf("append to a missing conversation: %v", err)
	}
	if _, err := db.AppendMessage(ctx, "a", StoredMessage{Role: "system", Content: "x"}); err == nil {
		t.Fatal("a bad role was stored")
	}
	msgs, _ := db.Messages(ctx, "a")
	if len(msgs) != 3 || msgs[0].Images[0] != "data:image/png;base64,AA==" || string(msgs[1].ToolCalls) == "" || msgs[2].ToolCallID != "1" ||
		string(msgs[1].Reasoning) != `{"text":"think"}` || msgs[0].Reasoning != nil {
		t.Fatalf("messages %+v", msgs)
	}
	// Appending moved "a" to the top of the list.
	list, _ := db.ListConversations(ctx, 0)
	if len(list) != 2 || list[0].ID != "a" {
		t.Fatalf("list %+v", list)
	}
	title := "renamed"
	if c, err := db.UpdateConversation(ctx, "a", ConversationUpdate{Title: &title}); err != nil || c.Title != "renamed" || c.TabID != 4 {
		t.Fatalf("rename %+v %v", c, err)
	}
	if _, err := db.UpdateConversation(ctx, "zz", ConversationUpdate{Title: &title}); !errors.Is(err, ErrConversationNotFound) {
		t.Fatalf("rename missing: %v", err)
	}

	// A run marks its conversation running; its end sets it back.
	if _, err := db.CreateRun(ctx, Run{ID: "r1", ConversationID: "a", ProviderID: "p", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if c, _ := db.GetConversation(ctx, "a"); c.Status != ConversationRunning {
		t.Fatalf("conversation during a run: %s", c.Status)
	}
	id, err := db.AddModelCall(ctx, ModelCall{RunID: "r1", ProviderID: "p", Model: "m", Request: json.RawMessage(`{"messages":[]}`), InputTokens: 3,
		CacheReadTokens: 2, StopReason: "end_turn"})
	if err != nil || id == 0 {
		t.Fatal(err)
	}
	db.AddModelCall(ctx, ModelCall{RunID: "r1", ProviderID: "p", Model: "m", Request: json.RawMessage(`{}`), Error: "boom"})
	calls, _ := db.ModelCalls(ctx, "r1")
	if len(calls) != 2 || calls[0].Ordinal != 1 || calls[1].Ordinal != 2 || calls[1].Error != "boom" || string(calls[0].Attempts) != "[]" ||
		calls[0].CacheReadTokens != 2 || calls[0].StopReason != "end_turn" {
		t.Fatalf("model calls %+v", calls)
	}
	if err := db.FinishRun(ctx, "r1", RunCompleted, "", Tokens{Input: 10, Output: 5, CacheRead: 4}, 2); err != nil {
		t.Fatal(err)
	}
	r, _ := db.GetRun(ctx, "r1")
	if r.Status != RunCompleted || r.InputTokens != 10 || r.CacheReadTokens != 4 || r.ToolCalls != 2 || r.FinishedAt.IsZero() {
		t.Fatalf("run %+v", r)
	}
	if c, _ := db.GetConversation(ctx, "a"); c.Status != ConversationIdle {
		t.Fatalf("conversation after the run: %s", c.Status)
	}
	if err := db.FinishRun(ctx, "zz", RunFailed, "", Tokens{}, 0); !errors.Is(err, ErrRunNotFound) {
		t.Fatalf("finish missing: %v", err)
	}

	// Stale runs: only a heartbeat older than the limit counts as dead.
	db.CreateRun(ctx, Run{ID: "old", ConversationID: "b"})
	clock = clock.Add(time.Minute)
	db.CreateRun(ctx, Run{ID: "fresh", ConversationID: "a"})
	n, err := db.InterruptStaleRuns(ctx, clock.Add(-30*time.Second))
	if err != nil || n != 1 {
		t.Fatalf("interrupted %d: %v", n, err)
	}
	old, _ := db.GetRun(ctx, "old")
	fresh, _ := db.GetRun(ctx, "fresh")
	b, _ := db.GetConversation(ctx, "b")
	if old.Status != RunInterrupted || fresh.Status != RunRunning || b.Status != ConversationInterrupted {
		t.Fatalf("old %s, fresh %s, conversation b %s", old.Status, fresh.Status, b.Status)
	}
	clock = clock.Add(time.Minute)
	db.HeartbeatRuns(ctx, []string{"fresh"})
	if n, _ := db.InterruptStaleRuns(ctx, clock.Add(-30*time.Second)); n != 0 {
		t.Fatal("a run with a fresh heartbeat was interrupted")
	}

	// Retention of model calls.
	if n, _ := db.PruneModelCalls(ctx, clock); n != 2 {
		t.Fatalf("pruned %d", n)
	}

	// Deleting a conversation takes its messages, runs and tasks with it.
	db.CreateTask(ctx, "a", "a task", "")
	if err := db.DeleteConversation(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := db.Messages(ctx, "a"); len(msgs) != 0 {
		t.Fatal("messages survived")
	}
	if _, err := db.GetRun(ctx, "r1"); !errors.Is(err, ErrRunNotFound) {
		t.Fatal("run survived")
	}
	if tasks, _ := db.ListTasks(ctx, "a"); len(tasks) != 0 {
		t.Fatal("tasks survived")
	}
	if err := db.DeleteConversation(ctx, "a"); !errors.Is(err, ErrConversationNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}
