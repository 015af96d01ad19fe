package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Task statuses; the tasks table's CHECK constraint holds the same list.
const (
	TaskPending    = "pending"
	TaskInProgress = "in_progress"
	TaskCompleted  = "completed"
)

// TaskStatuses lists every valid status, in the order a task moves through them.
var TaskStatuses = []string{TaskPending, TaskInProgress, TaskCompleted}

var (
	ErrTaskNotFound   = NewError(NotFound, "no such task in this conversation")
	ErrBadTaskStatus  = NewError(Invalid, "status must be one of %s", strings.Join(TaskStatuses, ", "))
	ErrEmptyTaskTitle = NewError(Invalid, "a task needs a subject (a short title)")
)

// Task is one entry of a conversation's task list.
type Task struct {
	ID             int64
	ConversationID string
	Ordinal        int64 // position in the conversation's list, from 1
	Subject        string
	Description    string
	Status         string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// TaskUpdate names the fields to change; nil leaves a field as it is.
type TaskUpdate struct {
	Status      *string
	Subject     *string
	Description *string
}

// ValidTaskStatus reports whether s is one of TaskStatuses.
func ValidTaskStatus(s string) bool {
	for _, v := range TaskStatuses {
		if s == v {
			return true
		}
	}
	return false
}

const taskColumns = `id, conversation_id, ordinal, subject, description, status, created_at, updated_at`

func scanTask(s rowScanner) (Task, error) {
	var t Task
	var created, updated string
	if err := s.Scan(&t.ID, &t.ConversationID, &t.Ordinal, &t.Subject, &t.Description, &t.Status, &created, &updated); err != nil {
		return t, err
	}
	t.CreatedAt, t.UpdatedAt = parseTime(created), parseTime(updated)
	return t, nil
}

// CreateTask appends a pending task to the conversation's list.
func (db *DB) CreateTask(ctx context.Context, conversationID, subject, description string) (Task, error) {
	if strings.TrimSpace(subject) == "" {
		return Task{}, ErrEmptyTaskTitle
	}
	var t Task
	// One transaction, so two processes adding to one conversation at once cannot
	// both take the same ordinal.
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		var err error
		t, err = scanTask(tx.QueryRowContext(ctx, `INSERT INTO tasks(conversation_id, ordinal, subject, description, status, created_at, updated_at)
			VALUES (?, (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM tasks WHERE conversation_id = ?), ?, ?, ?, ?, ?)
			RETURNING `+taskColumns, conversationID, conversationID, subject, description, TaskPending, now, now))
		return err
	})
	if err != nil {
		return Task{}, fmt.Errorf("creating task: %w", err)
	}
	return t, nil
}

// UpdateTask changes a task of the conversation. A task of another conversation is
// ErrTaskNotFound, as if it did not exist: one conversation's model has no business
// with another's list.
func (db *DB) UpdateTask(ctx context.Context, conversationID string, id int64, u TaskUpdate) (Task, error) {
	if u.Status != nil && !ValidTaskStatus(*u.Status) {
		return Task{}, fmt.Errorf("updating task %d: %w, not %q", id, ErrBadTaskStatus, *u.Status)
	}
	if u.Subject != nil && strings.TrimSpace(*u.Subject) == "" {
		return Task{}, fmt.Errorf("updating task %d: %w", id, ErrEmptyTaskTitle)
	}
	t, err := scanTask(db.sql.QueryRowContext(ctx, `UPDATE tasks SET
			status = COALESCE(?, status), subject = COALESCE(?, subject), description = COALESCE(?, description), updated_at = ?
		WHERE id = ? AND conversation_id = ? RETURNING `+taskColumns,
		u.Status, u.Subject, u.Description, db.now(), id, conversationID))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, fmt.Errorf("updating task %d: %w", id, ErrTaskNotFound)
	}
	if err != nil {
		return Task{}, fmt.Errorf("updating task %d: %w", id, err)
	}
	return t, nil
}

// ListTasks returns the conversation's tasks in the order they were created.
func (db *DB) ListTasks(ctx context.Context, conversationID string) ([]Task, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE conversation_id = ? ORDER BY ordinal`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	defer rows.Close()
	out := []Task{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
