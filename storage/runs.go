package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Run statuses; the runs table's CHECK holds the same list.
const (
	RunRunning     = "running"
	RunCompleted   = "completed"
	RunFailed      = "failed"
	RunCancelled   = "cancelled"
	RunInterrupted = "interrupted" // its host process exited while it ran
)

var ErrRunNotFound = NewError(NotFound, "no such run")

// Run is one pass of the agent loop over a conversation.
type Run struct {
	ID             string    `json:"id"`
	ConversationID string    `json:"conversation_id"`
	ParentRunID    string    `json:"parent_run_id,omitempty"`
	AgentType      string    `json:"agent_type,omitempty"`
	Status         string    `json:"status"`
	Error          string    `json:"error,omitempty"`
	ProviderID     string    `json:"provider_id"`
	Model          string    `json:"model"`
	StartedAt      time.Time `json:"started_at"`
	FinishedAt     time.Time `json:"finished_at,omitzero"`
	InputTokens    int       `json:"input_tokens"`
	OutputTokens   int       `json:"output_tokens"`
	ToolCalls      int       `json:"tool_calls"`
	// Parts of the tokens above: prompt read from and written to the vendor's
	// cache, and reasoning.
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens"`
}

// Tokens is a usage count as the runs and model_calls tables keep it.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite, Reasoning int
}

// ModelCall is the diagnostics record of one model call: exactly what the model was
// given and what it answered.
type ModelCall struct {
	ID           int64           `json:"id"`
	RunID        string          `json:"run_id"`
	Ordinal      int             `json:"ordinal"`
	Purpose      string          `json:"purpose"` // "turn" or "compaction"
	ProviderID   string          `json:"provider_id"`
	Model        string          `json:"model"`
	Request      json.RawMessage `json:"request"`
	Response     json.RawMessage `json:"response,omitempty"`
	InputTokens  int             `json:"input_tokens"`
	OutputTokens int             `json:"output_tokens"`
	// Parts of the tokens above, as the vendor billed them.
	CacheReadTokens  int             `json:"cache_read_tokens"`
	CacheWriteTokens int             `json:"cache_write_tokens"`
	ReasoningTokens  int             `json:"reasoning_tokens"`
	StopReason       string          `json:"stop_reason,omitempty"`
	LatencyMS        int64           `json:"latency_ms"`
	Attempts         json.RawMessage `json:"attempts"`
	Error            string          `json:"error,omitempty"`
	StartedAt        time.Time       `json:"started_at"`
}

const runColumns = `id, conversation_id, parent_run_id, agent_type, status, error, provider_id, model, started_at, finished_at, input_tokens, output_tokens, tool_calls, cache_read_tokens, cache_write_tokens, reasoning_tokens`

func scanRun(s rowScanner) (Run, error) {
	var r Run
	var started, finished string
	err := s.Scan(&r.ID, &r.ConversationID, &r.ParentRunID, &r.AgentType, &r.Status, &r.Error, &r.ProviderID, &r.Model,
		&started, &finished, &r.InputTokens, &r.OutputTokens, &r.ToolCalls, &r.CacheReadTokens, &r.CacheWriteTokens, &r.ReasoningTokens)
	r.StartedAt = parseTime(started)
	if finished != "" {
		r.FinishedAt = parseTime(finished)
	}
	return r, err
}

// CreateRun stores a run as running, with a fresh heartbeat, and marks its
// conversation running (a sub-agent's run leaves the conversation as it is).
func (db *DB) CreateRun(ctx context.Context, r Run) (Run, error) {
	var out Run
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		now := db.stamp()
		var err error
		out, err = scanRun(tx.QueryRowContext(ctx, `INSERT INTO runs(id, conversation_id, parent_run_id, agent_type, status, provider_id, model, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+runColumns,
			r.ID, r.ConversationID, r.ParentRunID, r.AgentType, RunRunning, r.ProviderID, r.Model, now, now))
		if err != nil || r.ParentRunID != "" {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE conversations SET status = ?, updated_at = ? WHERE id = ?`, ConversationRunning, now, r.ConversationID)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("creating run: %w", err)
	}
	return out, nil
}

// FinishRun records how a run ended, and sets its conversation back to idle (or
// interrupted) unless another run of it is still going.
func (db *DB) FinishRun(ctx context.Context, id, status, errText string, t Tokens, toolCalls int) error {
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		now := db.stamp()
		var conv, parent string
		err := tx.QueryRowContext(ctx, `UPDATE runs SET status = ?, error = ?, finished_at = ?, input_tokens = ?, output_tokens = ?, tool_calls = ?,
				cache_read_tokens = ?, cache_write_tokens = ?, reasoning_tokens = ?
			WHERE id = ? RETURNING conversation_id, parent_run_id`, status, errText, now, t.Input, t.Output, toolCalls,
			t.CacheRead, t.CacheWrite, t.Reasoning, id).Scan(&conv, &parent)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %q: %w", id, ErrRunNotFound)
		}
		if err != nil || parent != "" {
			return err
		}
		convStatus := ConversationIdle
		if status == RunInterrupted {
			convStatus = ConversationInterrupted
		}
		_, err = tx.ExecContext(ctx, `UPDATE conversations SET status = ?, updated_at = ? WHERE id = ?
			AND NOT EXISTS (SELECT 1 FROM runs WHERE conversation_id = ? AND parent_run_id = '' AND status = 'running')`,
			convStatus, now, conv, conv)
		return err
	})
}

// HeartbeatRuns tells other host processes that these runs are alive.
func (db *DB) HeartbeatRuns(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		now := db.stamp()
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET heartbeat_at = ? WHERE id = ? AND status = 'running'`, now, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// InterruptStaleRuns marks as interrupted every running run whose heartbeat is older
// than staleBefore: its host process exited (or crashed) while it ran. Runs of other
// live processes keep their heartbeat fresh and are left alone. Their conversations
// become interrupted, so the UI can offer to resume them.
func (db *DB) InterruptStaleRuns(ctx context.Context, staleBefore time.Time) (int64, error) {
	var n int64
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		now := db.stamp()
		res, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'interrupted', finished_at = ?,
				error = 'the host process exited while the run was going'
			WHERE status = 'running' AND heartbeat_at < ?`, now, formatTime(staleBefore))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, `UPDATE conversations SET status = 'interrupted'
			WHERE status = 'running' AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.conversation_id = conversations.id AND runs.status = 'running')`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("marking interrupted runs: %w", err)
	}
	return n, nil
}

// GetRun reads one run.
func (db *DB) GetRun(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(db.sql.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("run %q: %w", id, ErrRunNotFound)
	}
	return r, err
}

// ListRuns returns a conversation's runs, oldest first, sub-agents' included.
func (db *DB) ListRuns(ctx context.Context, conversationID string) ([]Run, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT `+runColumns+` FROM runs WHERE conversation_id = ? ORDER BY started_at, id`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// AddModelCall stores one model call's record; the ordinal is the next of its run.
func (db *DB) AddModelCall(ctx context.Context, c ModelCall) (int64, error) {
	if len(c.Attempts) == 0 {
		c.Attempts = json.RawMessage("[]")
	}
	if c.Purpose == "" {
		c.Purpose = "turn"
	}
	started := c.StartedAt
	if started.IsZero() {
		started = db.Now()
	}
	var id int64
	err := db.sql.QueryRowContext(ctx, `INSERT INTO model_calls(run_id, ordinal, purpose, provider_id, model, request, response,
			input_tokens, output_tokens, latency_ms, attempts, error, started_at, cache_read_tokens, cache_write_tokens, reasoning_tokens, stop_reason)
		VALUES (?, (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM model_calls WHERE run_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`,
		c.RunID, c.RunID, c.Purpose, c.ProviderID, c.Model, string(c.Request), string(c.Response),
		c.InputTokens, c.OutputTokens, c.LatencyMS, string(c.Attempts), c.Error, formatTime(started),
		c.CacheReadTokens, c.CacheWriteTokens, c.ReasoningTokens, c.StopReason).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("recording model call: %w", err)
	}
	return id, nil
}

// ModelCalls returns a run's model calls in order.
func (db *DB) ModelCalls(ctx context.Context, runID string) ([]ModelCall, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT id, run_id, ordinal, purpose, provider_id, model, request, response,
			input_tokens, output_tokens, latency_ms, attempts, error, started_at, cache_read_tokens, cache_write_tokens, reasoning_tokens, stop_reason
		FROM model_calls WHERE run_id = ? ORDER BY ordinal`, runID)
	if err != nil {
		return nil, fmt.Errorf("reading model calls: %w", err)
	}
	defer rows.Close()
	out := []ModelCall{}
	for rows.Next() {
		var c ModelCall
		var req, resp, attempts, started string
		if err := rows.Scan(&c.ID, &c.RunID, &c.Ordinal, &c.Purpose, &c.ProviderID, &c.Model, &req, &resp,
			&c.InputTokens, &c.OutputTokens, &c.LatencyMS, &attempts, &c.Error, &started,
			&c.CacheReadTokens, &c.CacheWriteTokens, &c.ReasoningTokens, &c.StopReason); err != nil {
			return nil, err
		}
		c.Request, c.Attempts = json.RawMessage(req), json.RawMessage(attempts)
		if resp != "" {
			c.Response = json.RawMessage(resp)
		}
		c.StartedAt = parseTime(started)
		out = append(out, c)
	}
	return out, rows.Err()
}

// PruneModelCalls deletes the records of model calls made before the given time.
func (db *DB) PruneModelCalls(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.sql.ExecContext(ctx, `DELETE FROM model_calls WHERE started_at < ?`, formatTime(before))
	if err != nil {
		return 0, fmt.Errorf("pruning model calls: %w", err)
	}
	n, err := res.RowsAffected()
	if n > 0 {
		db.purge(ctx)
	}
	return n, err
}

// stamp is the current time as the conversation and run tables store it: fixed
// width, so that ordering and comparing the text orders and compares the times.
func (db *DB) stamp() string { return formatTime(db.Now()) }
