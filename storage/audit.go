package storage

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// AuditEntry is one row of the audit log: one tool call, whatever its outcome.
type AuditEntry struct {
	ID             int64           `json:"id,omitempty"`
	Time           time.Time       `json:"time"`
	CallID         string          `json:"call_id"`
	Tool           string          `json:"tool"`
	Source         string          `json:"source"`
	Origin         string          `json:"origin"`
	Caller         string          `json:"caller"`
	Arguments      json.RawMessage `json:"arguments"`
	Result         string          `json:"result"`
	Code           string          `json:"code"`
	Success        bool            `json:"success"`
	Dangerous      bool            `json:"dangerous"`
	TraceID        string          `json:"trace_id"`
	ParentTrace    string          `json:"parent_trace"`
	Depth          int             `json:"depth"`
	ConversationID string          `json:"conversation_id"`
	RunID          string          `json:"run_id"`
	Duration       time.Duration   `json:"duration_ns"`
}

// AuditFilter selects rows; zero fields select everything. Limit 0 means 100, and
// no query returns more than 10,000 rows (export has no limit).
type AuditFilter struct {
	Since  time.Time `json:"since,omitzero"`
	Until  time.Time `json:"until,omitzero"`
	Tool   string    `json:"tool,omitempty"`
	Code   string    `json:"code,omitempty"`
	Origin string    `json:"origin,omitempty"`
	Caller string    `json:"caller,omitempty"`
	Limit  int       `json:"limit,omitempty"`
}

// AuditLog appends entries without making the caller wait for SQLite: Record hands
// the entry to one writer goroutine, which writes whatever has queued up in one
// transaction. Close drains the queue, so a normal exit loses nothing.
type AuditLog struct {
	db *DB
	ch chan auditMsg
	// retention says how long rows are kept; the writer prunes at start and daily.
	retention func() time.Duration
	onError   func(error)

	closeOnce sync.Once
	mu        sync.RWMutex // held for reading while sending, for writing to close ch
	closed    bool
	done      chan struct{}
}

type auditMsg struct {
	entry AuditEntry
	flush chan struct{} // when set, a flush marker rather than an entry
}

// AuditOptions configures the writer.
type AuditOptions struct {
	// Retention is read at start and once a day; nil or a non-positive duration
	// keeps everything.
	Retention func() time.Duration
	// OnError reports a failed write (the rows of that batch are lost; the writer
	// goes on). Nil ignores errors.
	OnError func(error)
	// Buffer is how many entries may wait; Record blocks beyond it rather than drop
	// one. Zero means 4096.
	Buffer int
}

// OpenAuditLog starts the writer.
func (db *DB) OpenAuditLog(opts AuditOptions) *AuditLog {
	if opts.Buffer <= 0 {
		opts.Buffer = 4096
	}
	a := &AuditLog{
		db: db, ch: make(chan auditMsg, opts.Buffer),
		retention: opts.Retention, onError: opts.OnError,
		done: make(chan struct{}),
	}
	go a.writer()
	return a
}

// Record queues an entry. After Close it writes synchronously, so a late call still
// leaves its row.
func (a *AuditLog) Record(e AuditEntry) {
	a.mu.RLock()
	if !a.closed {
		a.ch <- auditMsg{entry: e}
		a.mu.RUnlock()
		return
	}
	a.mu.RUnlock()
	if err := a.db.insertAudit(context.Background(), []AuditEntry{e}); err != nil {
		a.report(err)
	}
}

// Flush waits until every entry recorded before it is in the database.
func (a *AuditLog) Flush(ctx context.Context) error {
	a.mu.RLock()
	if a.closed {
		a.mu.RUnlock()
		return nil
	}
	done := make(chan struct{})
	a.ch <- auditMsg{flush: done}
	a.mu.RUnlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes everything queued and stops the writer. It is safe to call twice.
func (a *AuditLog) Close() error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		a.closed = true
		close(a.ch)
		a.mu.Unlock()
	})
	<-a.done
	return nil
}

func (a *AuditLog) report(err error) {
	if a.onError != nil {
		a.onError(err)
	}
}

// maxBatch bounds one transaction so a burst never holds the write lock long enough
// to stall another host process.
const maxBatch = 512

func (a *AuditLog) writer() {
	defer close(a.done)
	a.prune()
	daily := time.NewTicker(24 * time.Hour)
	defer daily.Stop()
	batch := make([]AuditEntry, 0, maxBatch)
	var flushes []chan struct{}
	for {
		var (
			msg auditMsg
			ok  bool
		)
		select {
		case msg, ok = <-a.ch:
		case <-daily.C:
			a.prune()
			continue
		}
		if !ok {
			return
		}
		// Take what is already waiting, then write it all in one transaction.
	drain:
		for {
			if msg.flush != nil {
				flushes = append(flushes, msg.flush)
			} else {
				batch = append(batch, msg.entry)
			}
			if len(batch) >= maxBatch {
				break
			}
			select {
			case msg, ok = <-a.ch:
				if !ok {
					break drain
				}
			default:
				break drain
			}
		}
		if len(batch) > 0 {
			if err := a.db.insertAudit(context.Background(), batch); err != nil {
				a.report(fmt.Errorf("audit log: %d rows not written: %w", len(batch), err))
			}
			batch = batch[:0]
		}
		for _, f := range flushes {
			close(f)
		}
		flushes = flushes[:0]
		if !ok {
			return
		}
	}
}

func (a *AuditLog) prune() {
	if a.retention == nil {
		return
	}
	keep := a.retention()
	if keep <= 0 {
		return
	}
	if _, err := a.db.PruneAudit(context.Background(), a.db.Now().Add(-keep)); err != nil {
		a.report(err)
	}
}

const auditColumns = `time, call_id, tool, source, origin, caller, arguments, result, code, success,
	dangerous, trace_id, parent_trace, depth, conversation, run, duration_us`

func (db *DB) insertAudit(ctx context.Context, rows []AuditEntry) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("writing audit log: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO audit_log(`+auditColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("writing audit log: %w", err)
	}
	defer stmt.Close()
	for _, e := range rows {
		args := string(e.Arguments)
		if args == "" {
			args = "null"
		}
		if _, err := stmt.ExecContext(ctx, formatTime(e.Time), e.CallID, e.Tool, e.Source, e.Origin, e.Caller,
			args, e.Result, e.Code, e.Success, e.Dangerous, e.TraceID, e.ParentTrace, e.Depth,
			e.ConversationID, e.RunID, e.Duration.Microseconds()); err != nil {
			return fmt.Errorf("writing audit log: %w", err)
		}
	}
	return tx.Commit()
}

func formatTime(t time.Time) string {
	// Fixed width (always nine fraction digits) so that text order is time order.
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00")
}

// PruneAudit deletes rows older than before and says how many.
func (db *DB) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.sql.ExecContext(ctx, `DELETE FROM audit_log WHERE time < ?`, formatTime(before))
	if err != nil {
		return 0, fmt.Errorf("pruning audit log: %w", err)
	}
	n, err := res.RowsAffected()
	if n > 0 {
		db.purge(ctx)
	}
	return n, err
}

func (f AuditFilter) where() (string, []any) {
	var conds []string
	var args []any
	if !f.Since.IsZero() {
		conds, args = append(conds, "time >= ?"), append(args, formatTime(f.Since))
	}
	if !f.Until.IsZero() {
		conds, args = append(conds, "time < ?"), append(args, formatTime(f.Until))
	}
	for _, c := range []struct{ col, v string }{{"tool", f.Tool}, {"code", f.Code}, {"origin", f.Origin}, {"caller", f.Caller}} {
		if c.v != "" {
			conds, args = append(conds, c.col+" = ?"), append(args, c.v)
		}
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// MaxAuditQuery is the most rows one QueryAudit returns.
const MaxAuditQuery = 10000

// QueryAudit returns matching rows, newest first.
func (db *DB) QueryAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = 100
	case limit > MaxAuditQuery:
		limit = MaxAuditQuery
	}
	var out []AuditEntry
	err := db.scanAudit(ctx, f, "DESC", limit, func(e AuditEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// EachAudit calls each for every matching row, newest first, up to f.Limit rows (0:
// all of them), without holding them all in memory.
func (db *DB) EachAudit(ctx context.Context, f AuditFilter, each func(AuditEntry) error) error {
	return db.scanAudit(ctx, f, "DESC", f.Limit, each)
}

// ExportAuditJSONL writes every matching row, oldest first, one JSON object a line.
func (db *DB) ExportAuditJSONL(ctx context.Context, w io.Writer, f AuditFilter) (int, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	err := db.scanAudit(ctx, f, "ASC", f.Limit, func(e AuditEntry) error {
		n++
		return enc.Encode(e)
	})
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

func (db *DB) scanAudit(ctx context.Context, f AuditFilter, order string, limit int, each func(AuditEntry) error) error {
	where, args := f.where()
	q := `SELECT id, ` + auditColumns + ` FROM audit_log` + where + ` ORDER BY time ` + order + `, id ` + order
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := db.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("reading audit log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			e       AuditEntry
			ts, arg string
			us      int64
		)
		if err := rows.Scan(&e.ID, &ts, &e.CallID, &e.Tool, &e.Source, &e.Origin, &e.Caller, &arg, &e.Result,
			&e.Code, &e.Success, &e.Dangerous, &e.TraceID, &e.ParentTrace, &e.Depth, &e.ConversationID,
			&e.RunID, &us); err != nil {
			return fmt.Errorf("reading audit log: %w", err)
		}
		e.Time, _ = time.Parse(time.RFC3339Nano, ts)
		e.Arguments = json.RawMessage(arg)
		e.Duration = time.Duration(us) * time.Microsecond
		if err := each(e); err != nil {
			return err
		}
	}
	return rows.Err()
}
