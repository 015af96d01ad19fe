package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

type change struct {
	conv  string
	tasks []Task
}

func setup(t *testing.T) (map[string]tools.Tool, *[]change, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var changes []change
	ts := map[string]tools.Tool{}
	for _, tool := range Tools(Deps{Store: db, OnChange: func(c string, l []Task) { changes = append(changes, change{c, l}) }}) {
		ts[tool.Name] = tool
	}
	return ts, &changes, dir
}

func run(t *testing.T, ts map[string]tools.Tool, conv, name, args string) (any, error) {
	t.Helper()
	return ts[name].Run(context.Background(), &tools.Call{Tool: name, Arguments: json.RawMessage(args), ConversationID: conv})
}

func must(t *testing.T, ts map[string]tools.Tool, conv, name, args string) any {
	t.Helper()
	res, err := run(t, ts, conv, name, args)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return res
}

func fails(t *testing.T, ts map[string]tools.Tool, conv, name, args string, code tools.Code, reason string) {
	t.Helper()
	_, err := run(t, ts, conv, name, args)
	f, ok := tools.AsFailure(err)
	if !ok || f.Code != code || !strings.Contains(f.Reason, reason) {
		t.Errorf("%s %s: %v; want %s mentioning %q", name, args, err, code, reason)
	}
}

func TestTaskTools(t *testing.T) {
	ts, changes, dir := setup(t)
	a := must(t, ts, "conv-1", "create_task", `{"subject": "collect prices", "description": "three shops"}`).(Task)
	if a.Status != "pending" || a.Subject != "collect prices" || a.ID == "" {
		t.Fatalf("created %+v", a)
	}
	b := must(t, ts, "conv-1", "create_task", `{"subject": "compare"}`).(Task)
	must(t, ts, "conv-2", "create_task", `{"subject": "unrelated"}`)

	// The id works as the string it was given as, and as a number.
	u := must(t, ts, "conv-1", "update_task", fmt.Sprintf(`{"task_id": %q, "status": "in_progress"}`, a.ID)).(Task)
	if u.Status != "in_progress" || u.Description != "three shops" {
		t.Fatalf("update: %+v", u)
	}
	must(t, ts, "conv-1", "update_task", fmt.Sprintf(`{"task_id": %s, "status": "completed", "subject": "compare prices"}`, b.ID))

	l := must(t, ts, "conv-1", "list_tasks", `{}`).(ListResult)
	out, _ := json.Marshal(l)
	if len(l.Tasks) != 2 || l.Tasks[0].Status != "in_progress" || l.Tasks[1].Subject != "compare prices" ||
		l.Summary != "2 tasks: 0 pending, 1 in_progress, 1 completed" || strings.Contains(string(out), "conversation") {
		t.Fatalf("list: %s", out)
	}

	fails(t, ts, "conv-1", "update_task", fmt.Sprintf(`{"task_id": %q, "status": "done"}`, a.ID), tools.CodeInvalidParams, "pending, in_progress, completed")
	fails(t, ts, "conv-1", "update_task", fmt.Sprintf(`{"task_id": %q}`, a.ID), tools.CodeInvalidParams, "nothing to change")
	fails(t, ts, "conv-1", "update_task", `{"task_id": "abc", "status": "completed"}`, tools.CodeInvalidParams, "task_id")
	fails(t, ts, "conv-1", "update_task", `{"status": "completed"}`, tools.CodeInvalidParams, "missing")
	fails(t, ts, "conv-2", "update_task", fmt.Sprintf(`{"task_id": %q, "status": "completed"}`, a.ID), tools.CodeActionUnavailable, "list_tasks")
	fails(t, ts, "conv-1", "create_task", `{"subject": " "}`, tools.CodeInvalidParams, "subject")

	// Every committed change told the UI, with the whole list of that conversation.
	if len(*changes) != 5 {
		t.Fatalf("%d change notifications, want 5", len(*changes))
	}
	last := (*changes)[4]
	if last.conv != "conv-1" || len(last.tasks) != 2 || last.tasks[1].Status != "completed" {
		t.Fatalf("last notification: %+v", last)
	}

	// No conversation: the "default" list, and it survives a restart.
	must(t, ts, "", "create_task", `{"subject": "from the command line"}`)
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again := map[string]tools.Tool{}
	for _, tool := range Tools(Deps{Store: db}) {
		again[tool.Name] = tool
	}
	l = must(t, again, "", "list_tasks", ``).(ListResult)
	if len(l.Tasks) != 1 || l.Tasks[0].Subject != "from the command line" {
		t.Fatalf("default conversation: %+v", l)
	}
	if l := must(t, again, "conv-1", "list_tasks", `{}`).(ListResult); len(l.Tasks) != 2 {
		t.Fatalf("conv-1 after reopening: %+v", l)
	}
	if l := must(t, again, "nobody", "list_tasks", `{}`).(ListResult); len(l.Tasks) != 0 || l.Summary != "no tasks" {
		t.Fatalf("empty: %+v", l)
	}
}

func TestTaskToolDefinitions(t *testing.T) {
	for _, tool := range Tools(Deps{}) {
		var schema map[string]any
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: %v", tool.Name, err)
		}
		if tool.Description == "" || tool.Source != tools.SourceBuiltin {
			t.Errorf("%s: %q from %s", tool.Name, tool.Description, tool.Source)
		}
	}
}
