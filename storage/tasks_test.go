package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestTasks(t *testing.T) {
	db, dir := openTemp(t)
	ctx := context.Background()
	db.Now = func() time.Time { return time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC) }

	a, err := db.CreateTask(ctx, "c1", "read the docs", "all of them")
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != TaskPending || a.Ordinal != 1 || a.ConversationID != "c1" || !a.CreatedAt.Equal(db.Now()) {
		t.Fatalf("created %+v", a)
	}
	b, _ := db.CreateTask(ctx, "c1", "write the code", "")
	other, _ := db.CreateTask(ctx, "c2", "elsewhere", "")
	if b.Ordinal != 2 || other.Ordinal != 1 {
		t.Fatalf("ordinals %d, %d: each conversation counts from 1", b.Ordinal, other.Ordinal)
	}
	if _, err := db.CreateTask(ctx, "c1", "  ", ""); !errors.Is(err, ErrEmptyTaskTitle) {
		t.Fatalf("empty subject: %v", err)
	}

	str := func(s string) *string { return &s }
	db.Now = func() time.Time { return time.Date(2026, 5, 6, 8, 0, 0, 0, time.UTC) }
	u, err := db.UpdateTask(ctx, "c1", a.ID, TaskUpdate{Status: str(TaskInProgress)})
	if err != nil || u.Status != TaskInProgress || u.Subject != "read the docs" || u.Description != "all of them" || !u.UpdatedAt.After(u.CreatedAt) {
		t.Fatalf("update status: %+v %v", u, err)
	}
	u, err = db.UpdateTask(ctx, "c1", a.ID, TaskUpdate{Subject: str("read the spec"), Description: str("")})
	if err != nil || u.Status != TaskInProgress || u.Subject != "read the spec" || u.Description != "" {
		t.Fatalf("update subject: %+v %v", u, err)
	}
	for _, bad := range []string{"done", "", "PENDING", "in progress"} {
		_, err := db.UpdateTask(ctx, "c1", a.ID, TaskUpdate{Status: str(bad)})
		if !errors.Is(err, ErrBadTaskStatus) || !strings.Contains(err.Error(), "pending, in_progress, completed") {
			t.Errorf("status %q: %v", bad, err)
		}
	}
	if _, err := db.UpdateTask(ctx, "c1", a.ID, TaskUpdate{Subject: str("")}); !errors.Is(err, ErrEmptyTaskTitle) {
		t.Errorf("empty subject update: %v", err)
	}
	// Another conversation's task is not found, and is left alone.
	if _, err := db.UpdateTask(ctx, "c1", other.ID, TaskUpdate{Status: str(TaskCompleted)}); !errors.Is(err, ErrTaskNotFound) {
		t.Errorf("cross-conversation update: %v", err)
	}
	if _, err := db.UpdateTask(ctx, "c1", 9999, TaskUpdate{}); !errors.Is(err, ErrTaskNotFound) {
		t.Errorf("missing task: %v", err)
	}
	// The CHECK constraint holds even for a writer that skips the Go check.
	if _, err := db.sql.Exec(`UPDATE tasks SET status = 'done' WHERE id = ?`, a.ID); err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Errorf("CHECK constraint did not refuse a bad status: %v", err)
	}

	db.UpdateTask(ctx, "c1", b.ID, TaskUpdate{Status: str(TaskCompleted)})
	db.Close()
	// A restart loses nothing.
	db2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	list, err := db2.ListTasks(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, t := range list {
		got = append(got, fmt.Sprintf("%d:%s:%s", t.Ordinal, t.Subject, t.Status))
	}
	if fmt.Sprint(got) != "[1:read the spec:in_progress 2:write the code:completed]" {
		t.Fatalf("list after restart: %v", got)
	}
	if l, _ := db2.ListTasks(ctx, "nobody"); l == nil || len(l) != 0 {
		t.Fatalf("empty conversation: %#v", l)
	}
}
