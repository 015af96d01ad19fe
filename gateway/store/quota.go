package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Claim is one quota counter a request takes from: a user's or a team's tokens of
// the day, or its requests of the minute.
type Claim struct {
	Scope  string `json:"scope"`  // e.g. "user:alice:tokens", "team:web:requests"
	Bucket int64  `json:"bucket"` // the UTC day or minute number
	Amount int64  `json:"amount"` // tokens held, or 1 request
	Limit  int64  `json:"limit"`
	// Count adds Amount to used at once (requests); otherwise Amount is held as
	// reserved until the request settles with what it really took (tokens).
	Count bool `json:"count,omitempty"`
	// PerMTok, for a budget's claim (amounts in micros), is what a million more
	// tokens of answer cost: a stream's hold grows by that rate.
	PerMTok int64 `json:"per_mtok,omitempty"`
}

// more is what n more tokens of answer add to the claim.
func (c Claim) more(n int64) int64 {
	if c.PerMTok == 0 {
		return n
	}
	return (n*c.PerMTok + 999_999) / 1_000_000
}

// Reservation is what one request in flight holds.
type Reservation struct {
	ID       string
	Instance string
	Claims   []Claim
	// Room is, once reserved, the fewest tokens any of its token counters had
	// free before this hold was taken (0: no token counter): a bound the
	// vendor's own limit on the answer can be set from.
	Room int64 `json:"-"`
}

// ErrReleased: the reservation was released by another process, which took
// this one for dead; it can no longer grow.
var ErrReleased = errors.New("the reservation was released as an orphan")

// Refused says which claim found its counter full.
type Refused struct {
	Claim    Claim
	Used     int64
	Reserved int64
}

func (r *Refused) Error() string {
	return fmt.Sprintf("%s is at %d of %d", r.Claim.Scope, r.Used+r.Reserved, r.Claim.Limit)
}

// takeSQL takes a claim only while its counter has room left: the condition is
// checked on the row as it stands when this statement holds its lock (PostgreSQL
// re-reads a row another transaction has just changed before applying the update;
// SQLite's immediate transactions run one at a time), so no two requests can both
// see the same room. Admission needs room, not room for the whole estimate: the
// last request admitted may run past the limit by at most its own size, and no
// request sees room that another already holds.
const takeReservedSQL = `INSERT INTO quota_counters(scope, bucket, used, reserved) VALUES (?, ?, 0, ?)
	ON CONFLICT(scope, bucket) DO UPDATE SET reserved = quota_counters.reserved + excluded.reserved
	WHERE quota_counters.used + quota_counters.reserved < ?
	RETURNING used, reserved`

const takeCountedSQL = `INSERT INTO quota_counters(scope, bucket, used, reserved) VALUES (?, ?, ?, 0)
	ON CONFLICT(scope, bucket) DO UPDATE SET used = quota_counters.used + excluded.used
	WHERE quota_counters.used + quota_counters.reserved < ?
	RETURNING used, reserved`

// Reserve takes every claim or none, in one transaction. A full counter returns
// *Refused and changes nothing. The reservation is recorded so that, should this
// process die before settling, another releases it.
func (s *Store) Reserve(ctx context.Context, r *Reservation) error {
	if len(r.Claims) == 0 {
		return nil
	}
	return s.tx(ctx, func(t *sql.Tx) error {
		room, err := s.take(ctx, t, r.Claims)
		if err != nil {
			return err
		}
		r.Room = room
		held := heldClaims(r.Claims)
		if len(held) == 0 {
			return nil
		}
		b, _ := json.Marshal(held)
		_, err = t.ExecContext(ctx, s.q(`INSERT INTO reservations(id, instance, claims, created_at) VALUES (?, ?, ?, ?)`),
			r.ID, r.Instance, string(b), s.micros())
		return err
	})
}

// take takes the claims and returns the room the tightest token counter had
// before.
func (s *Store) take(ctx context.Context, t *sql.Tx, claims []Claim) (int64, error) {
	room := int64(0)
	for _, c := range claims {
		if c.Limit <= 0 {
			continue
		}
		q := takeReservedSQL
		if c.Count {
			q = takeCountedSQL
		}
		var used, reserved int64
		err := t.QueryRowContext(ctx, s.q(q), c.Scope, c.Bucket, c.Amount, c.Limit).Scan(&used, &reserved)
		if errors.Is(err, sql.ErrNoRows) {
			ref := &Refused{Claim: c}
			t.QueryRowContext(ctx, s.q(`SELECT used, reserved FROM quota_counters WHERE scope = ? AND bucket = ?`), c.Scope, c.Bucket).Scan(&ref.Used, &ref.Reserved)
			return 0, ref
		}
		if err != nil {
			return 0, fmt.Errorf("taking quota from %s: %w", c.Scope, err)
		}
		if !c.Count && c.PerMTok == 0 {
			if free := c.Limit - (used + reserved - c.Amount); room == 0 || free < room {
				room = max(free, 1)
			}
		}
	}
	return room, nil
}

func heldClaims(cs []Claim) []Claim {
	var out []Claim
	for _, c := range cs {
		if !c.Count && c.Limit > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Extend holds more of the reservation's token counters: a stream has run past
// what was reserved for it. Refused when a counter is full; nothing changes then.
func (s *Store) Extend(ctx context.Context, r *Reservation, more int64) error {
	held := heldClaims(r.Claims)
	if len(held) == 0 || more <= 0 {
		return nil
	}
	ext := make([]Claim, len(held))
	for i, c := range held {
		c.Amount = c.more(more)
		ext[i] = c
	}
	err := s.tx(ctx, func(t *sql.Tx) error {
		if _, err := s.take(ctx, t, ext); err != nil {
			return err
		}
		for i := range held {
			held[i].Amount += held[i].more(more)
		}
		b, _ := json.Marshal(held)
		res, err := t.ExecContext(ctx, s.q(`UPDATE reservations SET claims = ? WHERE id = ?`), string(b), r.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Released as an orphan (this process was taken for dead): what the
			// counters would now hold for it could never be given back.
			return ErrReleased
		}
		return nil
	})
	if err == nil {
		for i := range r.Claims {
			if !r.Claims[i].Count && r.Claims[i].Limit > 0 {
				r.Claims[i].Amount += r.Claims[i].more(more)
			}
		}
	}
	return err
}

// Request is one audited model request.
type Request struct {
	ID            string    `json:"id"`
	Time          time.Time `json:"time"`
	User          string    `json:"user"`
	Team          string    `json:"team"`
	Dialect       string    `json:"dialect"` // openai or anthropic: the endpoint called
	Model         string    `json:"model"`
	Upstream      string    `json:"upstream"`
	UpstreamModel string    `json:"upstream_model"`
	Stream        bool      `json:"stream"`
	Status        int       `json:"status"`
	Error         string    `json:"error"`
	InputTokens   int64     `json:"input_tokens"`
	OutputTokens  int64     `json:"output_tokens"`
	CachedTokens  int64     `json:"cached_tokens"`
	// CostMicros is what the request cost by the price table, in micros.
	CostMicros int64 `json:"cost_micros"`
	// Estimated: the vendor's final figures never came (a cut stream), so the
	// tokens are the gateway's estimate.
	Estimated bool          `json:"estimated"`
	Latency   time.Duration `json:"-"`
	TTFB      time.Duration `json:"-"`
	LatencyMS float64       `json:"latency_ms"`
	TTFBMS    float64       `json:"ttfb_ms"`
	Attempts  int           `json:"attempts"`
	TraceID   string        `json:"trace_id"`
	Client    string        `json:"client"`
}

// Settlement ends one request: the held tokens are swapped for what it used, and
// the request is audited and counted.
type Settlement struct {
	Reservation *Reservation // nil: it held nothing
	Request     Request
	// Content is the prompt and answer, kept only when the store_content setting
	// is on.
	Content *Content
}

// Content is a request's body and its answer as sent.
type Content struct {
	Request  string `json:"request"`
	Response string `json:"response"`
}

// Settle writes a batch of settlements in one transaction.
func (s *Store) Settle(ctx context.Context, batch []Settlement) error {
	if len(batch) == 0 {
		return nil
	}
	return s.tx(ctx, func(t *sql.Tx) error {
		for i := range batch {
			if err := s.settle1(ctx, t, &batch[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) settle1(ctx context.Context, t *sql.Tx, st *Settlement) error {
	r := &st.Request
	used := r.InputTokens + r.OutputTokens
	if r.ID == "" {
		r.ID = NewID(r.Time)
	}
	// A settlement replayed from a spool may already be here (the database
	// committed it, and the answer was lost): it is not counted twice.
	res, err := t.ExecContext(ctx, s.q(`INSERT INTO requests(id, ts, user_name, team, dialect, model, upstream, upstream_model, stream, status, error,
		input_tokens, output_tokens, cached_tokens, estimated, latency_us, ttfb_us, attempts, trace_id, client, cost_micros)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`),
		r.ID, r.Time.UnixMicro(), r.User, r.Team, r.Dialect, r.Model, r.Upstream, r.UpstreamModel, boolInt(r.Stream), r.Status, r.Error,
		r.InputTokens, r.OutputTokens, r.CachedTokens, boolInt(r.Estimated), r.Latency.Microseconds(), r.TTFB.Microseconds(), r.Attempts, r.TraceID, r.Client, r.CostMicros)
	if err != nil {
		return fmt.Errorf("auditing request: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	// Every request's tokens count on its user's and team's counters of the day,
	// limited or not, so that a limit set in the afternoon sees the morning.
	held := map[string]Claim{}
	if rv := st.Reservation; rv != nil && len(heldClaims(rv.Claims)) > 0 {
		del, err := t.ExecContext(ctx, s.q(`DELETE FROM reservations WHERE id = ?`), rv.ID)
		if err != nil {
			return err
		}
		// Gone already: another process released it as an orphan while this one
		// could not reach the database, and took its hold back then.
		if n, _ := del.RowsAffected(); n > 0 {
			for _, c := range heldClaims(rv.Claims) {
				held[c.Scope] = c
			}
		}
	}
	// Tokens of the day, and spend of the day and the month, by user and team.
	type counter struct {
		scope  string
		bucket int64
		used   int64
	}
	var counters []counter
	for _, who := range []struct {
		scope func(string, string) string
		name  string
	}{{UserScope, r.User}, {TeamScope, r.Team}} {
		if who.name == "" {
			continue
		}
		counters = append(counters, counter{who.scope(who.name, Tokens), Day(r.Time), used},
			counter{who.scope(who.name, Cost), Day(r.Time), r.CostMicros},
			counter{who.scope(who.name, CostMonth), Month(r.Time), r.CostMicros})
	}
	for _, k := range counters {
		c, ok := held[k.scope]
		if !ok {
			c = Claim{Scope: k.scope, Bucket: k.bucket}
		}
		used := k.used
		if used == 0 && c.Amount == 0 {
			continue
		}
		if _, err := t.ExecContext(ctx, s.q(`INSERT INTO quota_counters(scope, bucket, used, reserved) VALUES (?, ?, ?, 0)
			ON CONFLICT(scope, bucket) DO UPDATE SET used = quota_counters.used + excluded.used, reserved = quota_counters.reserved - ?`),
			c.Scope, c.Bucket, used, c.Amount); err != nil {
			return err
		}
	}
	if st.Content != nil {
		if _, err := t.ExecContext(ctx, s.q(`INSERT INTO request_content(id, request, response) VALUES (?, ?, ?)`), r.ID, st.Content.Request, st.Content.Response); err != nil {
			return err
		}
	}
	if r.User == "" {
		return nil // refused before anyone was known: audited, counted for no one
	}
	errs := 0
	if r.Status >= 400 {
		errs = 1
	}
	_, err = t.ExecContext(ctx, s.q(`INSERT INTO usage_daily(day, user_name, team, model, requests, errors, input_tokens, output_tokens, cached_tokens, estimated, cost_micros)
		VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(day, user_name, team, model) DO UPDATE SET requests = usage_daily.requests + 1, errors = usage_daily.errors + excluded.errors,
			input_tokens = usage_daily.input_tokens + excluded.input_tokens, output_tokens = usage_daily.output_tokens + excluded.output_tokens,
			cached_tokens = usage_daily.cached_tokens + excluded.cached_tokens, estimated = usage_daily.estimated + excluded.estimated,
			cost_micros = usage_daily.cost_micros + excluded.cost_micros`),
		Day(r.Time), r.User, r.Team, r.Model, errs, r.InputTokens, r.OutputTokens, r.CachedTokens, boolInt(r.Estimated), r.CostMicros)
	return err
}

// What a counter counts.
const (
	Tokens    = "tokens"     // tokens of a UTC day
	Requests  = "requests"   // requests of a minute
	Cost      = "cost"       // spend of a UTC day, in micros
	CostMonth = "cost_month" // spend of a UTC month, in micros
)

// Month is the UTC month number of t (months since year 0); MonthStart its
// first instant.
func Month(t time.Time) int64 { u := t.UTC(); return int64(u.Year())*12 + int64(u.Month()) - 1 }

// MonthStart is the first instant of month number m.
func MonthStart(m int64) time.Time {
	return time.Date(int(m/12), time.Month(m%12+1), 1, 0, 0, 0, 0, time.UTC)
}

// UserScope and TeamScope name the counters of a user or a team.
func UserScope(name, what string) string { return "user:" + name + ":" + what }
func TeamScope(name, what string) string { return "team:" + name + ":" + what }

// Day is the UTC day number of t; Minute its minute number.
func Day(t time.Time) int64    { return t.Unix() / 86400 }
func Minute(t time.Time) int64 { return t.Unix() / 60 }

// DayStart is the first instant of day number d.
func DayStart(d int64) time.Time { return time.Unix(d*86400, 0).UTC() }

// Beat records that instance is alive, and forgets instances gone for a day.
func (s *Store) Beat(ctx context.Context, instance, addr string, started time.Time) error {
	now := s.micros()
	return s.tx(ctx, func(t *sql.Tx) error {
		if _, err := t.ExecContext(ctx, s.q(`INSERT INTO instances(id, addr, started_at, heartbeat) VALUES (?, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET heartbeat = excluded.heartbeat`), instance, addr, started.UnixMicro(), now); err != nil {
			return err
		}
		_, err := t.ExecContext(ctx, s.q(`DELETE FROM instances WHERE heartbeat < ?`), now-int64(24*time.Hour/time.Microsecond))
		return err
	})
}

// Leave removes an instance that stops cleanly.
func (s *Store) Leave(ctx context.Context, instance string) error {
	return s.tx(ctx, func(t *sql.Tx) error {
		_, err := t.ExecContext(ctx, s.q(`DELETE FROM instances WHERE id = ?`), instance)
		return err
	})
}

// How a process that stopped without settling is found out: it beats every
// BeatEvery; one silent for OrphanAfter is taken for dead, and what it held is
// released by the next sweep, every SweepEvery.
const (
	BeatEvery   = 10 * time.Second
	OrphanAfter = 30 * time.Second
	SweepEvery  = 5 * time.Second
)

// Holders tells who holds a scope's counter of bucket: whether a living
// process's request does, and else when the earliest hold of a stopped process
// is released (zero when none is).
func (s *Store) Holders(ctx context.Context, scope string, bucket int64) (live bool, freed time.Time, err error) {
	// The claims are JSON written by this package: a scope appears in them
	// exactly so, with LIKE's own characters escaped.
	pat, _ := json.Marshal(Claim{Scope: scope, Bucket: bucket})
	needle := strings.TrimSuffix(strings.TrimPrefix(string(pat), "{"), `,"amount":0,"limit":0}`)
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(needle)
	// A process that missed a beat is taken to have stopped; should it be alive
	// after all, it settles its requests itself.
	alive := s.micros() - (BeatEvery + BeatEvery/2).Microseconds()
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT r.created_at, COALESCE(i.heartbeat, 0) FROM reservations r LEFT JOIN instances i ON i.id = r.instance
		WHERE r.claims LIKE ? ESCAPE '\'`), "%"+esc+"%")
	if err != nil {
		return false, time.Time{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var created, beat int64
		if err := rows.Scan(&created, &beat); err != nil {
			return false, time.Time{}, err
		}
		if beat >= alive {
			live = true
			continue
		}
		// ReleaseOrphans takes it once both are older than OrphanAfter.
		at := time.UnixMicro(max(created, beat)).Add(OrphanAfter + SweepEvery)
		if freed.IsZero() || at.Before(freed) {
			freed = at
		}
	}
	return live, freed, rows.Err()
}

// ReleaseOrphans gives back what reservations of instances silent for longer than
// stale held: their process died before settling. It returns how many it released.
func (s *Store) ReleaseOrphans(ctx context.Context, stale time.Duration) (int, error) {
	cutoff := s.micros() - stale.Microseconds()
	n := 0
	err := s.tx(ctx, func(t *sql.Tx) error {
		rows, err := t.QueryContext(ctx, s.q(`SELECT id, claims FROM reservations
			WHERE instance NOT IN (SELECT id FROM instances WHERE heartbeat >= ?) AND created_at < ?`), cutoff, cutoff)
		if err != nil {
			return err
		}
		type orphan struct {
			id     string
			claims []Claim
		}
		var os []orphan
		for rows.Next() {
			var o orphan
			var b string
			if err := rows.Scan(&o.id, &b); err != nil {
				rows.Close()
				return err
			}
			json.Unmarshal([]byte(b), &o.claims)
			os = append(os, o)
		}
		rows.Close()
		for _, o := range os {
			for _, c := range o.claims {
				if _, err := t.ExecContext(ctx, s.q(`UPDATE quota_counters SET reserved = reserved - ? WHERE scope = ? AND bucket = ?`), c.Amount, c.Scope, c.Bucket); err != nil {
					return err
				}
			}
			if _, err := t.ExecContext(ctx, s.q(`DELETE FROM reservations WHERE id = ?`), o.id); err != nil {
				return err
			}
		}
		n = len(os)
		return nil
	})
	return n, err
}

// Counter is one quota counter as it stands.
type Counter struct {
	Scope    string `json:"scope"`
	Bucket   int64  `json:"bucket"`
	Used     int64  `json:"used"`
	Reserved int64  `json:"reserved"`
}

// Counter reads one counter (zero when it has no row yet).
func (s *Store) Counter(ctx context.Context, scope string, bucket int64) (Counter, error) {
	c := Counter{Scope: scope, Bucket: bucket}
	err := s.db.QueryRowContext(ctx, s.q(`SELECT used, reserved FROM quota_counters WHERE scope = ? AND bucket = ?`), scope, bucket).Scan(&c.Used, &c.Reserved)
	if err == sql.ErrNoRows {
		err = nil
	}
	return c, err
}

// PruneCounters drops counters of buckets before the given day and minute: they
// can no longer admit anything.
func (s *Store) PruneCounters(ctx context.Context, day, minute int64) error {
	return s.tx(ctx, func(t *sql.Tx) error {
		_, err := t.ExecContext(ctx, s.q(`DELETE FROM quota_counters WHERE ((scope LIKE '%:tokens' OR scope LIKE '%:cost') AND bucket < ?)
			OR (scope LIKE '%:requests' AND bucket < ?) OR (scope LIKE '%:cost_month' AND bucket < ?)`), day, minute, Month(DayStart(day)))
		return err
	})
}
