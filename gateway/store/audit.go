package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// RequestFilter picks audited requests; zero fields do not filter.
type RequestFilter struct {
	User    string
	Team    string
	Model   string
	TraceID string
	Errors  bool // only failed requests (status 400 and above)
	Since   time.Time
	Until   time.Time
	Before  string // an id: only older rows (paging)
	Limit   int    // 0: 1000
}

const requestCols = `id, ts, user_name, team, dialect, model, upstream, upstream_model, stream, status, error,
	input_tokens, output_tokens, cached_tokens, estimated, latency_us, ttfb_us, attempts, trace_id, client, cost_micros`

func scanRequest(sc interface{ Scan(...any) error }) (Request, error) {
	var r Request
	var ts, lat, ttfb int64
	var stream, est int
	err := sc.Scan(&r.ID, &ts, &r.User, &r.Team, &r.Dialect, &r.Model, &r.Upstream, &r.UpstreamModel, &stream, &r.Status, &r.Error,
		&r.InputTokens, &r.OutputTokens, &r.CachedTokens, &est, &lat, &ttfb, &r.Attempts, &r.TraceID, &r.Client, &r.CostMicros)
	r.Time = time.UnixMicro(ts).UTC()
	r.Stream, r.Estimated = stream != 0, est != 0
	r.Latency, r.TTFB = time.Duration(lat)*time.Microsecond, time.Duration(ttfb)*time.Microsecond
	r.LatencyMS, r.TTFBMS = float64(lat)/1000, float64(ttfb)/1000
	return r, err
}

type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, arg any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, arg)
}

// eq adds column = value, unless value is empty (a filter not given).
func (w *where) eq(column, value string) {
	if value != "" {
		w.add(column+" = ?", value)
	}
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// Requests lists audited requests, newest first.
func (s *Store) Requests(ctx context.Context, f RequestFilter) ([]Request, error) {
	var w where
	w.eq("user_name", f.User)
	w.eq("team", f.Team)
	w.eq("model", f.Model)
	w.eq("trace_id", f.TraceID)
	if f.Errors {
		w.add("status >= ?", 400)
	}
	if !f.Since.IsZero() {
		w.add("ts >= ?", f.Since.UnixMicro())
	}
	if !f.Until.IsZero() {
		w.add("ts < ?", f.Until.UnixMicro())
	}
	if f.Before != "" {
		w.add("id < ?", f.Before)
	}
	limit := f.Limit
	if limit <= 0 || limit > 10000 {
		limit = 1000
	}
	w.args = append(w.args, limit)
	return queryAll(ctx, s, `SELECT `+requestCols+` FROM requests`+w.String()+` ORDER BY id DESC LIMIT ?`, w.args, scanRequest)
}

// RequestContent reads the stored prompt and answer of a request, when kept.
func (s *Store) RequestContent(ctx context.Context, id string) (*Content, error) {
	var c Content
	err := s.db.QueryRowContext(ctx, s.q(`SELECT request, response FROM request_content WHERE id = ?`), id).Scan(&c.Request, &c.Response)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errorf(ErrNotFound, "no stored content for request %q (the store_content setting was off)", id)
	}
	return &c, err
}

// AdminAction is one audited change of the gateway's configuration.
type AdminAction struct {
	ID     string    `json:"id"`
	Time   time.Time `json:"time"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Target string    `json:"target"`
	Detail string    `json:"detail"`
}

// ActionFilter picks admin actions.
type ActionFilter struct {
	User  string // actions by this admin or on this user
	Since time.Time
	Limit int
}

// AdminActions lists admin actions, newest first.
func (s *Store) AdminActions(ctx context.Context, f ActionFilter) ([]AdminAction, error) {
	var w where
	if f.User != "" {
		w.conds = append(w.conds, "(actor = ? OR (target = ? AND action LIKE 'user.%'))")
		w.args = append(w.args, "admin:"+f.User, f.User)
	}
	if !f.Since.IsZero() {
		w.add("ts >= ?", f.Since.UnixMicro())
	}
	limit := f.Limit
	if limit <= 0 || limit > 10000 {
		limit = 1000
	}
	w.args = append(w.args, limit)
	return queryAll(ctx, s, `SELECT id, ts, actor, action, target, detail FROM admin_actions`+w.String()+` ORDER BY id DESC LIMIT ?`, w.args,
		func(sc interface{ Scan(...any) error }) (AdminAction, error) {
			var a AdminAction
			var ts int64
			err := sc.Scan(&a.ID, &ts, &a.Actor, &a.Action, &a.Target, &a.Detail)
			a.Time = time.UnixMicro(ts).UTC()
			return a, err
		})
}

// UsageFilter picks and groups daily usage.
type UsageFilter struct {
	User  string
	Team  string
	Model string
	Since time.Time // from this day on
	Until time.Time // before this day
	// By lists the columns to group by, of "day", "user", "team", "model"; empty
	// keeps them all.
	By []string
}

// UsageRow is usage summed over what the filter did not group by.
type UsageRow struct {
	Day          string `json:"day,omitempty"` // YYYY-MM-DD, UTC
	User         string `json:"user,omitempty"`
	Team         string `json:"team,omitempty"`
	Model        string `json:"model,omitempty"`
	Requests     int64  `json:"requests"`
	Errors       int64  `json:"errors"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	CachedTokens int64  `json:"cached_tokens"`
	Estimated    int64  `json:"estimated"` // requests whose tokens are estimates
	CostMicros   int64  `json:"cost_micros"`
}

var usageCols = map[string]string{"day": "day", "user": "user_name", "team": "team", "model": "model"}

// Usage sums daily usage.
func (s *Store) Usage(ctx context.Context, f UsageFilter) ([]UsageRow, error) {
	by := f.By
	if len(by) == 0 {
		by = []string{"day", "user", "team", "model"}
	}
	var cols []string
	for _, b := range by {
		c, ok := usageCols[b]
		if !ok {
			return nil, errorf(ErrInvalid, "usage cannot be grouped by %q: use day, user, team or model", b)
		}
		cols = append(cols, c)
	}
	var w where
	w.eq("user_name", f.User)
	w.eq("team", f.Team)
	w.eq("model", f.Model)
	if !f.Since.IsZero() {
		w.add("day >= ?", Day(f.Since))
	}
	if !f.Until.IsZero() {
		w.add("day < ?", Day(f.Until))
	}
	group := strings.Join(cols, ", ")
	q := `SELECT ` + group + `, SUM(requests), SUM(errors), SUM(input_tokens), SUM(output_tokens), SUM(cached_tokens), SUM(estimated), SUM(cost_micros)
		FROM usage_daily` + w.String() + ` GROUP BY ` + group + ` ORDER BY ` + group
	return queryAll(ctx, s, q, w.args, func(sc interface{ Scan(...any) error }) (UsageRow, error) {
		var u UsageRow
		var day int64
		dest := make([]any, 0, len(cols)+6)
		for _, c := range cols {
			switch c {
			case "day":
				dest = append(dest, &day)
			case "user_name":
				dest = append(dest, &u.User)
			case "team":
				dest = append(dest, &u.Team)
			case "model":
				dest = append(dest, &u.Model)
			}
		}
		dest = append(dest, &u.Requests, &u.Errors, &u.InputTokens, &u.OutputTokens, &u.CachedTokens, &u.Estimated, &u.CostMicros)
		err := sc.Scan(dest...)
		for _, c := range cols {
			if c == "day" {
				u.Day = DayStart(day).Format("2006-01-02")
			}
		}
		return u, err
	})
}

// Prune deletes audited requests, their content and admin actions older than
// before. Daily usage stays.
func (s *Store) Prune(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.tx(ctx, func(t *sql.Tx) error {
		cut := before.UnixMicro()
		if _, err := t.ExecContext(ctx, s.q(`DELETE FROM request_content WHERE id IN (SELECT id FROM requests WHERE ts < ?)`), cut); err != nil {
			return err
		}
		res, err := t.ExecContext(ctx, s.q(`DELETE FROM requests WHERE ts < ?`), cut)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = t.ExecContext(ctx, s.q(`DELETE FROM admin_actions WHERE ts < ?`), cut)
		return err
	})
	return n, err
}
