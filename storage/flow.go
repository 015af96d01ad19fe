package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ConversationFlow reads the data-flow state of a conversation (host/flow); nil when
// none is stored yet.
func (db *DB) ConversationFlow(ctx context.Context, conversationID string) ([]byte, error) {
	var state string
	err := db.sql.QueryRowContext(ctx, `SELECT state FROM conversation_flow WHERE conversation_id = ?`, conversationID).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the data-flow state of conversation %q: %w", conversationID, err)
	}
	return []byte(state), nil
}

// SetConversationFlow stores the data-flow state of a conversation, replacing what
// was there. A conversation that does not exist (deleted meanwhile) stores nothing.
func (db *DB) SetConversationFlow(ctx context.Context, conversationID string, state []byte) error {
	_, err := db.sql.ExecContext(ctx, `INSERT INTO conversation_flow(conversation_id, state, updated_at)
		SELECT id, ?, ? FROM conversations WHERE id = ?
		ON CONFLICT(conversation_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
		string(state), db.stamp(), conversationID)
	if err != nil {
		return fmt.Errorf("storing the data-flow state of conversation %q: %w", conversationID, err)
	}
	return nil
}
