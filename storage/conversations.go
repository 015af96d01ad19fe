package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Conversation statuses; the conversations table's CHECK holds the same list.
const (
	ConversationIdle        = "idle"
	ConversationRunning     = "running"
	ConversationInterrupted = "interrupted"
)

// Message roles as stored. RoleSummary is the compaction summary: it stands for every
// message up to its SummaryOf ordinal when the history is sent to a model.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSummary   = "summary"
)

var ErrConversationNotFound = NewError(NotFound, "no such conversation")

// Conversation is one chat: its settings and where it stands.
type Conversation struct {
	ID         string    `json:"id"`
	Title      string    `json:"title"`
	ProviderID string    `json:"provider_id"`
	TabID      int       `json:"tab_id"`
	Origin     string    `json:"origin"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// StoredMessage is one row of a conversation. ToolCalls is the assistant turn's
// calls as JSON (kept opaque here: the model package owns its shape).
type StoredMessage struct {
	Ordinal    int64           `json:"ordinal"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Images     []string        `json:"images,omitempty"`
	// Reasoning is an assistant turn's thinking as JSON, kept for the vendors
	// that require it back.
	Reasoning json.RawMessage `json:"reasoning,omitempty"`
	SummaryOf int64           `json:"summary_of,omitempty"`
	RunID     string          `json:"run_id,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

const conversationColumns = `id, title, provider_id, tab_id, origin, status, created_at, updated_at`

func scanConversation(s rowScanner) (Conversation, error) {
	var c Conversation
	var created, updated string
	err := s.Scan(&c.ID, &c.Title, &c.ProviderID, &c.TabID, &c.Origin, &c.Status, &created, &updated)
	c.CreatedAt, c.UpdatedAt = parseTime(created), parseTime(updated)
	return c, err
}

// CreateConversation stores a new conversation; CreatedAt and UpdatedAt are set here.
func (db *DB) CreateConversation(ctx context.Context, c Conversation) (Conversation, error) {
	if c.ID == "" {
		return c, fmt.Errorf("creating conversation: an id is required")
	}
	if c.Status == "" {
		c.Status = ConversationIdle
	}
	now := db.stamp()
	out, err := scanConversation(db.sql.QueryRowContext(ctx, `INSERT INTO conversations(`+conversationColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+conversationColumns,
		c.ID, c.Title, c.ProviderID, c.TabID, c.Origin, c.Status, now, now))
	if err != nil {
		return out, fmt.Errorf("creating conversation: %w", err)
	}
	return out, nil
}

// GetConversation reads one conversation.
func (db *DB) GetConversation(ctx context.Context, id string) (Conversation, error) {
	c, err := scanConversation(db.sql.QueryRowContext(ctx, `SELECT `+conversationColumns+` FROM conversations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("conversation %q: %w", id, ErrConversationNotFound)
	}
	return c, err
}

// ListConversations returns conversations, most recently updated first. limit 0
// means 100.
func (db *DB) ListConversations(ctx context.Context, limit int) ([]Conversation, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT `+conversationColumns+` FROM conversations ORDER BY updated_at DESC, id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing conversations: %w", err)
	}
	defer rows.Close()
	out := []Conversation{}
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ConversationUpdate names the fields to change; nil leaves a field alone.
type ConversationUpdate struct {
	Title      *string
	ProviderID *string
	TabID      *int
	Origin     *string
	Status     *string
}

// UpdateConversation changes a conversation and touches its updated_at.
func (db *DB) UpdateConversation(ctx context.Context, id string, u ConversationUpdate) (Conversation, error) {
	c, err := scanConversation(db.sql.QueryRowContext(ctx, `UPDATE conversations SET
			title = COALESCE(?, title), provider_id = COALESCE(?, provider_id), tab_id = COALESCE(?, tab_id),
			origin = COALESCE(?, origin), status = COALESCE(?, status), updated_at = ?
		WHERE id = ? RETURNING `+conversationColumns,
		u.Title, u.ProviderID, u.TabID, u.Origin, u.Status, db.stamp(), id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("conversation %q: %w", id, ErrConversationNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("updating conversation %q: %w", id, err)
	}
	return c, nil
}

// DeleteConversation removes a conversation with its messages, runs, model calls and
// task list: someone who deletes a chat expects what it held gone.
func (db *DB) DeleteConversation(ctx context.Context, id string) error {
	defer db.purge(ctx)
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("deleting conversation %q: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("conversation %q: %w", id, ErrConversationNotFound)
		}
		// tasks has no foreign key (it predates conversations).
		_, err = tx.ExecContext(ctx, `DELETE FROM tasks WHERE conversation_id = ?`, id)
		return err
	})
}

// AppendMessage adds a message at the end of a conversation and returns its ordinal.
func (db *DB) AppendMessage(ctx context.Context, conversationID string, m StoredMessage) (int64, error) {
	var images string
	if len(m.Images) > 0 {
		b, _ := json.Marshal(m.Images)
		images = string(b)
	}
	var ordinal int64
	// One transaction: the ordinal is read and taken under the write lock, and the
	// conversation's updated_at moves with it.
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		now := db.stamp()
		err := tx.QueryRowContext(ctx, `INSERT INTO messages(conversation_id, ordinal, role, content, tool_calls, tool_call_id, images, summary_of, run_id, created_at, reasoning)
			VALUES (?, (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM messages WHERE conversation_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)
			RETURNING ordinal`,
			conversationID, conversationID, m.Role, m.Content, string(m.ToolCalls), m.ToolCallID, images, m.SummaryOf, m.RunID, now, string(m.Reasoning)).Scan(&ordinal)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE conversations SET updated_at = ? WHERE id = ?`, now, conversationID)
		return err
	})
	if err != nil {
		if strings.Contains(err.Error(), "FOREIGN KEY") {
			return 0, fmt.Errorf("appending message: conversation %q: %w", conversationID, ErrConversationNotFound)
		}
		return 0, fmt.Errorf("appending message: %w", err)
	}
	return ordinal, nil
}

// Messages returns every message of a conversation in order, summaries included.
func (db *DB) Messages(ctx context.Context, conversationID string) ([]StoredMessage, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT ordinal, role, content, tool_calls, tool_call_id, images, summary_of, run_id, created_at, reasoning
		FROM messages WHERE conversation_id = ? ORDER BY ordinal`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("reading messages: %w", err)
	}
	defer rows.Close()
	out := []StoredMessage{}
	for rows.Next() {
		var m StoredMessage
		var calls, images, created, reasoning string
		if err := rows.Scan(&m.Ordinal, &m.Role, &m.Content, &calls, &m.ToolCallID, &images, &m.SummaryOf, &m.RunID, &created, &reasoning); err != nil {
			return nil, err
		}
		if reasoning != "" {
			m.Reasoning = json.RawMessage(reasoning)
		}
		if calls != "" {
			m.ToolCalls = json.RawMessage(calls)
		}
		if images != "" {
			json.Unmarshal([]byte(images), &m.Images)
		}
		m.CreatedAt = parseTime(created)
		out = append(out, m)
	}
	return out, rows.Err()
}
