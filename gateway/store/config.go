package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Upstream kinds: the wire format an upstream speaks.
const (
	KindOpenAI    = "openai"
	KindAnthropic = "anthropic"
)

// User is one person (or program) allowed to call the gateway.
type User struct {
	Name        string `json:"name"`
	Team        string `json:"team"`
	Admin       bool   `json:"admin"`
	Disabled    bool   `json:"disabled"`
	DailyTokens int64  `json:"daily_tokens"` // 0: no limit of its own
	RPM         int64  `json:"rpm"`          // requests a minute; 0: no limit of its own
	// Budgets in micros of the price table's currency, a UTC day and month (0: none).
	DailyBudget   int64     `json:"daily_budget_micros"`
	MonthlyBudget int64     `json:"monthly_budget_micros"`
	Models        []string  `json:"models"` // empty: every routed model
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`

	// Key is the name of the further key a request authenticated with ("": the
	// user's own token); KeyID its token's id.
	Key   string `json:"-"`
	KeyID string `json:"-"`

	// The token is kept only as these: never the token itself.
	TokenID   string `json:"-"`
	TokenSalt string `json:"-"`
	TokenHash string `json:"-"`
}

// MayUse tells whether the user may call model.
func (u *User) MayUse(model string) bool {
	if len(u.Models) == 0 {
		return true
	}
	for _, m := range u.Models {
		if m == model {
			return true
		}
	}
	return false
}

// Team is a group of users with limits of its own, shared by its members.
type Team struct {
	Name        string `json:"name"`
	DailyTokens int64  `json:"daily_tokens"`
	RPM         int64  `json:"rpm"`
	// Budgets in micros, shared by the team's members (0: none).
	DailyBudget   int64     `json:"daily_budget_micros"`
	MonthlyBudget int64     `json:"monthly_budget_micros"`
	Members       int       `json:"members"`
	CreatedAt     time.Time `json:"created_at"`
}

// Upstream is a vendor endpoint with the team's key for it.
type Upstream struct {
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	BaseURL   string    `json:"base_url"`
	APIKey    string    `json:"-"` // never listed, logged or returned
	HasKey    bool      `json:"has_key"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Route maps a model name clients use to an upstream, the model name sent there,
// and the upstreams tried in order when it fails before answering.
type Route struct {
	Model         string   `json:"model"`
	Upstream      string   `json:"upstream"`
	UpstreamModel string   `json:"upstream_model"`
	Fallbacks     []string `json:"fallbacks"`
	// Weights, when set, spread requests over the upstream and its fallbacks in
	// these proportions (one each, in that order); the others stay fallbacks.
	Weights   []int64   `json:"weights,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Config is everything a serving process needs, read at once.
type Config struct {
	Generation int64
	Users      []User
	Teams      []Team
	Upstreams  []Upstream // with keys
	Routes     []Route
	Settings   map[string]string
	Prices     []Price
	Keys       []Key
}

// ValidName checks a user, team or upstream name.
func ValidName(what, name string) error {
	if name == "" || len(name) > 64 {
		return errorf(ErrInvalid, "%s name %q: use 1-64 letters, digits, '.', '_', '-' or '@', starting with a letter or digit", what, name)
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-' || r == '@'):
		default:
			return errorf(ErrInvalid, "%s name %q: use 1-64 letters, digits, '.', '_', '-' or '@', starting with a letter or digit", what, name)
		}
	}
	return nil
}

// ValidModel checks a model name as clients and vendors write them
// (gpt-4o-mini, claude-sonnet-4-5, qwen2.5:7b, meta-llama/Llama-3.1-8B).
func ValidModel(name string) error {
	bad := errorf(ErrInvalid, "model name %q: use 1-200 letters, digits and . _ - : / @ +", name)
	if name == "" || len(name) > 200 {
		return bad
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("._-:/@+", r):
		default:
			return bad
		}
	}
	return nil
}

// ValidUpstream checks an upstream's kind and base URL.
func ValidUpstream(u Upstream) error {
	if err := ValidName("upstream", u.Name); err != nil {
		return err
	}
	if u.Kind != KindOpenAI && u.Kind != KindAnthropic {
		return errorf(ErrInvalid, "upstream kind %q: use openai (OpenAI and compatible servers) or anthropic", u.Kind)
	}
	p, err := url.Parse(u.BaseURL)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return errorf(ErrInvalid, "base URL %q: give an http:// or https:// URL, e.g. https://api.openai.com/v1 or https://api.anthropic.com", u.BaseURL)
	}
	if p.RawQuery != "" || p.Fragment != "" || p.User != nil {
		return errorf(ErrInvalid, "base URL %q: leave out credentials, query and fragment; the key goes in --api-key-stdin", u.BaseURL)
	}
	return nil
}

func (s *Store) audit(ctx context.Context, t *sql.Tx, actor, action, target string, detail any) error {
	d := "{}"
	if detail != nil {
		b, err := json.Marshal(detail)
		if err != nil {
			return err
		}
		d = string(b)
	}
	now := s.Now()
	_, err := t.ExecContext(ctx, s.q(`INSERT INTO admin_actions(id, ts, actor, action, target, detail) VALUES (?, ?, ?, ?, ?, ?)`),
		NewID(now), now.UnixMicro(), actor, action, target, d)
	return err
}

// change runs one audited configuration change.
func (s *Store) change(ctx context.Context, actor, action, target string, detail any, fn func(*sql.Tx) error) error {
	return s.tx(ctx, func(t *sql.Tx) error {
		if err := fn(t); err != nil {
			return err
		}
		if err := s.audit(ctx, t, actor, action, target, detail); err != nil {
			return err
		}
		return s.bumpGeneration(ctx, t)
	})
}

// affect turns an update that touched no row into notFound.
func affect(notFound error) func(sql.Result, error) error {
	return func(res sql.Result, err error) error { return mustAffect(res, err, notFound) }
}

func mustAffect(res sql.Result, err error, notFound error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound
	}
	return nil
}

func joinList(xs []string) string { return strings.Join(xs, ",") }

func splitList(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// TokenHash is what a user's row keeps of its token.
type TokenHash struct{ ID, Salt, Hash string }

// AddUser creates a user with the token whose hash is given.
func (s *Store) AddUser(ctx context.Context, actor string, u User, tok TokenHash) error {
	if err := ValidName("user", u.Name); err != nil {
		return err
	}
	if u.Team != "" {
		if err := ValidName("team", u.Team); err != nil {
			return err
		}
	}
	if u.DailyTokens < 0 || u.RPM < 0 || u.DailyBudget < 0 || u.MonthlyBudget < 0 {
		return errorf(ErrInvalid, "limits must be 0 (none) or more")
	}
	for _, m := range u.Models {
		if err := ValidModel(m); err != nil {
			return err
		}
	}
	now := s.micros()
	detail := map[string]any{"team": u.Team, "admin": u.Admin, "daily_tokens": u.DailyTokens, "rpm": u.RPM, "models": u.Models,
		"daily_budget_micros": u.DailyBudget, "monthly_budget_micros": u.MonthlyBudget}
	err := s.change(ctx, actor, "user.add", u.Name, detail, func(t *sql.Tx) error {
		_, err := t.ExecContext(ctx, s.q(`INSERT INTO users(name, team, admin, disabled, daily_tokens, rpm, models, token_id, token_salt, token_hash, created_at, updated_at, daily_budget, monthly_budget)
			VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			u.Name, u.Team, boolInt(u.Admin), u.DailyTokens, u.RPM, joinList(u.Models), tok.ID, tok.Salt, tok.Hash, now, now, u.DailyBudget, u.MonthlyBudget)
		return err
	})
	if isUnique(err) {
		return errorf(ErrExists, "user %q already exists (rotate gives it a new token)", u.Name)
	}
	return err
}

// UserChange is what UpdateUser changes; nil fields stay.
type UserChange struct {
	Team        *string   `json:"team,omitempty"`
	Admin       *bool     `json:"admin,omitempty"`
	Disabled    *bool     `json:"disabled,omitempty"`
	DailyTokens *int64    `json:"daily_tokens,omitempty"`
	RPM         *int64    `json:"rpm,omitempty"`
	Models      *[]string `json:"models,omitempty"`
	// Budgets in micros.
	DailyBudget   *int64 `json:"daily_budget_micros,omitempty"`
	MonthlyBudget *int64 `json:"monthly_budget_micros,omitempty"`
}

// UpdateUser changes a user's settings.
func (s *Store) UpdateUser(ctx context.Context, actor, name string, c UserChange) error {
	var sets []string
	var args []any
	if c.Team != nil {
		if *c.Team != "" {
			if err := ValidName("team", *c.Team); err != nil {
				return err
			}
		}
		sets, args = append(sets, "team = ?"), append(args, *c.Team)
	}
	if c.Admin != nil {
		sets, args = append(sets, "admin = ?"), append(args, boolInt(*c.Admin))
	}
	if c.Disabled != nil {
		sets, args = append(sets, "disabled = ?"), append(args, boolInt(*c.Disabled))
	}
	if c.DailyTokens != nil {
		if *c.DailyTokens < 0 {
			return errorf(ErrInvalid, "daily tokens must be 0 (no limit) or more")
		}
		sets, args = append(sets, "daily_tokens = ?"), append(args, *c.DailyTokens)
	}
	if c.RPM != nil {
		if *c.RPM < 0 {
			return errorf(ErrInvalid, "requests a minute must be 0 (no limit) or more")
		}
		sets, args = append(sets, "rpm = ?"), append(args, *c.RPM)
	}
	for _, b := range []struct {
		col string
		v   *int64
	}{{"daily_budget", c.DailyBudget}, {"monthly_budget", c.MonthlyBudget}} {
		if b.v != nil {
			if *b.v < 0 {
				return errorf(ErrInvalid, "a budget must be 0 (none) or more")
			}
			sets, args = append(sets, b.col+" = ?"), append(args, *b.v)
		}
	}
	if c.Models != nil {
		for _, m := range *c.Models {
			if err := ValidModel(m); err != nil {
				return err
			}
		}
		sets, args = append(sets, "models = ?"), append(args, joinList(*c.Models))
	}
	if len(sets) == 0 {
		return errorf(ErrInvalid, "nothing to change")
	}
	action := "user.update"
	if c.Disabled != nil && len(sets) == 1 {
		action = "user.enable"
		if *c.Disabled {
			action = "user.disable"
		}
	}
	sets, args = append(sets, "updated_at = ?"), append(args, s.micros(), name)
	return s.change(ctx, actor, action, name, c, func(t *sql.Tx) error {
		return affect(errorf(ErrNotFound, "no user %q", name))(t.ExecContext(ctx, s.q(`UPDATE users SET `+strings.Join(sets, ", ")+` WHERE name = ?`), args...))
	})
}

// RotateUser replaces a user's token.
func (s *Store) RotateUser(ctx context.Context, actor, name string, tok TokenHash) error {
	return s.change(ctx, actor, "user.rotate", name, nil, func(t *sql.Tx) error {
		return affect(errorf(ErrNotFound, "no user %q", name))(t.ExecContext(ctx, s.q(`UPDATE users SET token_id = ?, token_salt = ?, token_hash = ?, updated_at = ? WHERE name = ?`),
			tok.ID, tok.Salt, tok.Hash, s.micros(), name))
	})
}

// RemoveUser deletes a user; the audit and usage keep the name.
func (s *Store) RemoveUser(ctx context.Context, actor, name string) error {
	return s.change(ctx, actor, "user.remove", name, nil, func(t *sql.Tx) error {
		return affect(errorf(ErrNotFound, "no user %q", name))(t.ExecContext(ctx, s.q(`DELETE FROM users WHERE name = ?`), name))
	})
}

const userCols = `name, team, admin, disabled, daily_tokens, rpm, models, token_id, token_salt, token_hash, created_at, updated_at, daily_budget, monthly_budget`

func scanUser(sc interface{ Scan(...any) error }) (User, error) {
	var u User
	var admin, disabled int
	var models string
	var created, updated int64
	err := sc.Scan(&u.Name, &u.Team, &admin, &disabled, &u.DailyTokens, &u.RPM, &models, &u.TokenID, &u.TokenSalt, &u.TokenHash, &created, &updated, &u.DailyBudget, &u.MonthlyBudget)
	u.Admin, u.Disabled, u.Models = admin != 0, disabled != 0, splitList(models)
	u.CreatedAt, u.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return u, err
}

// Users lists every user by name.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	return queryAll(ctx, s, `SELECT `+userCols+` FROM users ORDER BY name`, nil, scanUser)
}

// GetUser reads one user.
func (s *Store) GetUser(ctx context.Context, name string) (User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, s.q(`SELECT `+userCols+` FROM users WHERE name = ?`), name))
	if errors.Is(err, sql.ErrNoRows) {
		return u, errorf(ErrNotFound, "no user %q", name)
	}
	return u, err
}

func queryAll[T any](ctx context.Context, s *Store, query string, args []any, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, error) {
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", s.where, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// SetTeam creates or changes a team's limits.
func (s *Store) SetTeam(ctx context.Context, actor string, tm Team) error {
	if err := ValidName("team", tm.Name); err != nil {
		return err
	}
	if tm.DailyTokens < 0 || tm.RPM < 0 || tm.DailyBudget < 0 || tm.MonthlyBudget < 0 {
		return errorf(ErrInvalid, "limits must be 0 (none) or more")
	}
	detail := map[string]any{"daily_tokens": tm.DailyTokens, "rpm": tm.RPM, "daily_budget_micros": tm.DailyBudget, "monthly_budget_micros": tm.MonthlyBudget}
	return s.change(ctx, actor, "team.set", tm.Name, detail, func(t *sql.Tx) error {
		_, err := t.ExecContext(ctx, s.q(`INSERT INTO teams(name, daily_tokens, rpm, created_at, daily_budget, monthly_budget) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(name) DO UPDATE SET daily_tokens = excluded.daily_tokens, rpm = excluded.rpm,
				daily_budget = excluded.daily_budget, monthly_budget = excluded.monthly_budget`),
			tm.Name, tm.DailyTokens, tm.RPM, s.micros(), tm.DailyBudget, tm.MonthlyBudget)
		return err
	})
}

// RemoveTeam drops a team's limits; its members keep the team name.
func (s *Store) RemoveTeam(ctx context.Context, actor, name string) error {
	return s.change(ctx, actor, "team.remove", name, nil, func(t *sql.Tx) error {
		return affect(errorf(ErrNotFound, "team %q has no limits set", name))(t.ExecContext(ctx, s.q(`DELETE FROM teams WHERE name = ?`), name))
	})
}

// Teams lists every team: those with limits and those only named by a user.
func (s *Store) Teams(ctx context.Context) ([]Team, error) {
	set, err := queryAll(ctx, s, `SELECT name, daily_tokens, rpm, created_at, daily_budget, monthly_budget FROM teams`, nil, func(sc interface{ Scan(...any) error }) (Team, error) {
		var tm Team
		var created int64
		err := sc.Scan(&tm.Name, &tm.DailyTokens, &tm.RPM, &created, &tm.DailyBudget, &tm.MonthlyBudget)
		tm.CreatedAt = time.UnixMicro(created).UTC()
		return tm, err
	})
	if err != nil {
		return nil, err
	}
	members, err := queryAll(ctx, s, `SELECT team, COUNT(*) FROM users WHERE team <> '' GROUP BY team`, nil, func(sc interface{ Scan(...any) error }) (Team, error) {
		var tm Team
		err := sc.Scan(&tm.Name, &tm.Members)
		return tm, err
	})
	if err != nil {
		return nil, err
	}
	byName := map[string]*Team{}
	for i := range set {
		byName[set[i].Name] = &set[i]
	}
	for _, m := range members {
		if tm := byName[m.Name]; tm != nil {
			tm.Members = m.Members
		} else {
			set = append(set, m)
		}
	}
	sort.Slice(set, func(i, j int) bool { return set[i].Name < set[j].Name })
	return set, nil
}

// SetUpstream adds an upstream or changes one; an empty key keeps the stored one.
func (s *Store) SetUpstream(ctx context.Context, actor string, u Upstream) (created bool, err error) {
	if err := ValidUpstream(u); err != nil {
		return false, err
	}
	u.BaseURL = strings.TrimRight(u.BaseURL, "/")
	now := s.micros()
	err = s.tx(ctx, func(t *sql.Tx) error {
		var kind string
		err := t.QueryRowContext(ctx, s.q(`SELECT kind FROM upstreams WHERE name = ?`), u.Name).Scan(&kind)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			created = true
			_, err = t.ExecContext(ctx, s.q(`INSERT INTO upstreams(name, kind, base_url, api_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`),
				u.Name, u.Kind, u.BaseURL, s.seal.seal(u.APIKey), now, now)
		case err != nil:
			return err
		default:
			if kind != u.Kind {
				var n int
				if err := t.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM routes WHERE upstream = ? OR ','||fallbacks||',' LIKE ?`), u.Name, "%,"+u.Name+",%").Scan(&n); err != nil {
					return err
				}
				if n > 0 {
					return errorf(ErrInUse, "upstream %q is %s and %d route(s) use it; a route's upstreams all speak one wire format, so remove them before changing the kind", u.Name, kind, n)
				}
			}
			if u.APIKey != "" {
				_, err = t.ExecContext(ctx, s.q(`UPDATE upstreams SET kind = ?, base_url = ?, api_key = ?, updated_at = ? WHERE name = ?`), u.Kind, u.BaseURL, s.seal.seal(u.APIKey), now, u.Name)
			} else {
				_, err = t.ExecContext(ctx, s.q(`UPDATE upstreams SET kind = ?, base_url = ?, updated_at = ? WHERE name = ?`), u.Kind, u.BaseURL, now, u.Name)
			}
		}
		if err != nil {
			return err
		}
		action := "upstream.update"
		if created {
			action = "upstream.add"
		}
		// The key is never audited: only whether one was given.
		if err := s.audit(ctx, t, actor, action, u.Name, map[string]any{"kind": u.Kind, "base_url": u.BaseURL, "key_given": u.APIKey != ""}); err != nil {
			return err
		}
		return s.bumpGeneration(ctx, t)
	})
	if err == nil && !created && u.APIKey != "" {
		s.scrub(ctx)
	}
	return created, err
}

// RemoveUpstream deletes an upstream no route uses; its key leaves no trace in the file.
func (s *Store) RemoveUpstream(ctx context.Context, actor, name string) (err error) {
	defer func() {
		if err == nil {
			s.scrub(ctx)
		}
	}()
	return s.change(ctx, actor, "upstream.remove", name, nil, func(t *sql.Tx) error {
		var routes []string
		rows, err := t.QueryContext(ctx, s.q(`SELECT model FROM routes WHERE upstream = ? OR ','||fallbacks||',' LIKE ? ORDER BY model`), name, "%,"+name+",%")
		if err != nil {
			return err
		}
		for rows.Next() {
			var m string
			rows.Scan(&m)
			routes = append(routes, m)
		}
		rows.Close()
		if len(routes) > 0 {
			return errorf(ErrInUse, "upstream %q is used by route(s) %s: remove or change them first", name, strings.Join(routes, ", "))
		}
		return affect(errorf(ErrNotFound, "no upstream %q", name))(t.ExecContext(ctx, s.q(`DELETE FROM upstreams WHERE name = ?`), name))
	})
}

// Upstreams lists upstreams; withKeys includes their keys (for serving only).
func (s *Store) Upstreams(ctx context.Context, withKeys bool) ([]Upstream, error) {
	return queryAll(ctx, s, `SELECT name, kind, base_url, api_key, created_at, updated_at FROM upstreams ORDER BY name`, nil, func(sc interface{ Scan(...any) error }) (Upstream, error) {
		var u Upstream
		var c, up int64
		err := sc.Scan(&u.Name, &u.Kind, &u.BaseURL, &u.APIKey, &c, &up)
		u.CreatedAt, u.UpdatedAt = time.UnixMicro(c).UTC(), time.UnixMicro(up).UTC()
		u.HasKey = u.APIKey != ""
		if !withKeys {
			u.APIKey = ""
		} else if err == nil {
			var oerr error
			if u.APIKey, oerr = s.seal.open(u.APIKey); oerr != nil {
				return u, fmt.Errorf("upstream %q's key: %w", u.Name, oerr)
			}
		}
		return u, err
	})
}

// SetRoute adds a route or replaces one. Every upstream it names must exist and
// speak one wire format: they share the route's one upstream model name.
func (s *Store) SetRoute(ctx context.Context, actor string, r Route) error {
	if err := ValidModel(r.Model); err != nil {
		return err
	}
	if r.UpstreamModel == "" {
		r.UpstreamModel = r.Model
	}
	if err := ValidModel(r.UpstreamModel); err != nil {
		return err
	}
	seen := map[string]bool{r.Upstream: true}
	for _, f := range r.Fallbacks {
		if seen[f] {
			return errorf(ErrInvalid, "upstream %q is named twice in the route", f)
		}
		seen[f] = true
	}
	if len(r.Weights) > 0 && len(r.Weights) != 1+len(r.Fallbacks) {
		return errorf(ErrInvalid, "give one weight for the upstream and one for each fallback (%d), not %d", 1+len(r.Fallbacks), len(r.Weights))
	}
	var ws []string
	for _, w := range r.Weights {
		if w < 0 || w > 1_000_000 {
			return errorf(ErrInvalid, "a weight is a whole number from 0 to 1000000")
		}
		ws = append(ws, strconv.FormatInt(w, 10))
	}
	return s.change(ctx, actor, "route.set", r.Model, map[string]any{"upstream": r.Upstream, "upstream_model": r.UpstreamModel, "fallbacks": r.Fallbacks, "weights": r.Weights}, func(t *sql.Tx) error {
		kindOf := func(name string) (string, error) {
			var k string
			err := t.QueryRowContext(ctx, s.q(`SELECT kind FROM upstreams WHERE name = ?`), name).Scan(&k)
			if errors.Is(err, sql.ErrNoRows) {
				return "", errorf(ErrNotFound, "no upstream %q (add it with: ferry gateway upstream add %s --kind … --base-url …)", name, name)
			}
			return k, err
		}
		kind, err := kindOf(r.Upstream)
		if err != nil {
			return err
		}
		for _, f := range r.Fallbacks {
			k, err := kindOf(f)
			if err != nil {
				return err
			}
			if k != kind {
				return errorf(ErrInvalid, "fallback %q is %s but %q is %s: a route's upstreams must speak one wire format", f, k, r.Upstream, kind)
			}
		}
		_, err = t.ExecContext(ctx, s.q(`INSERT INTO routes(model, upstream, upstream_model, fallbacks, created_at, weights) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(model) DO UPDATE SET upstream = excluded.upstream, upstream_model = excluded.upstream_model, fallbacks = excluded.fallbacks,
				weights = excluded.weights`),
			r.Model, r.Upstream, r.UpstreamModel, joinList(r.Fallbacks), s.micros(), strings.Join(ws, ","))
		return err
	})
}

// RemoveRoute deletes a route.
func (s *Store) RemoveRoute(ctx context.Context, actor, model string) error {
	return s.change(ctx, actor, "route.remove", model, nil, func(t *sql.Tx) error {
		return affect(errorf(ErrNotFound, "no route for model %q", model))(t.ExecContext(ctx, s.q(`DELETE FROM routes WHERE model = ?`), model))
	})
}

// Routes lists routes by model.
func (s *Store) Routes(ctx context.Context) ([]Route, error) {
	return queryAll(ctx, s, `SELECT model, upstream, upstream_model, fallbacks, created_at, weights FROM routes ORDER BY model`, nil, func(sc interface{ Scan(...any) error }) (Route, error) {
		var r Route
		var fb, ws string
		var c int64
		err := sc.Scan(&r.Model, &r.Upstream, &r.UpstreamModel, &fb, &c, &ws)
		r.Fallbacks, r.CreatedAt = splitList(fb), time.UnixMicro(c).UTC()
		for _, w := range splitList(ws) {
			n, _ := strconv.ParseInt(w, 10, 64)
			r.Weights = append(r.Weights, n)
		}
		return r, err
	})
}

// SetSetting stores a setting (the caller has checked key and value).
func (s *Store) SetSetting(ctx context.Context, actor, key, value string) error {
	return s.change(ctx, actor, "setting.set", key, map[string]string{"value": value}, func(t *sql.Tx) error {
		_, err := t.ExecContext(ctx, s.q(`INSERT INTO settings(key, value, updated_at) VALUES (?, ?, ?)
			ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`), key, value, s.micros())
		return err
	})
}

// UnsetSetting returns a setting to its default.
func (s *Store) UnsetSetting(ctx context.Context, actor, key string) error {
	return s.change(ctx, actor, "setting.unset", key, nil, func(t *sql.Tx) error {
		_, err := t.ExecContext(ctx, s.q(`DELETE FROM settings WHERE key = ?`), key)
		return err
	})
}

// Settings returns the stored settings.
func (s *Store) Settings(ctx context.Context) (map[string]string, error) {
	kv, err := queryAll(ctx, s, `SELECT key, value FROM settings`, nil, func(sc interface{ Scan(...any) error }) ([2]string, error) {
		var p [2]string
		err := sc.Scan(&p[0], &p[1])
		return p, err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range kv {
		out[p[0]] = p[1]
	}
	return out, nil
}

// LoadConfig reads everything a serving process needs. The generation is read
// first: a change landing while the rest is read bumps it again, and the next poll
// reloads.
func (s *Store) LoadConfig(ctx context.Context) (*Config, error) {
	var c Config
	var err error
	if c.Generation, err = s.Generation(ctx); err != nil {
		return nil, fmt.Errorf("reading the configuration from %s: %w", s.where, err)
	}
	if c.Users, err = s.Users(ctx); err != nil {
		return nil, err
	}
	if c.Teams, err = s.Teams(ctx); err != nil {
		return nil, err
	}
	if c.Upstreams, err = s.Upstreams(ctx, true); err != nil {
		return nil, err
	}
	if c.Routes, err = s.Routes(ctx); err != nil {
		return nil, err
	}
	if c.Settings, err = s.Settings(ctx); err != nil {
		return nil, err
	}
	if c.Prices, err = s.Prices(ctx); err != nil {
		return nil, err
	}
	if c.Keys, err = s.Keys(ctx, ""); err != nil {
		return nil, err
	}
	return &c, nil
}

// Price is what an upstream model costs, in micros of the price table's
// currency per million tokens: input not read from the cache, cached input,
// output, and reasoning (billed as output by most vendors: 0 means the output's
// price).
type Price struct {
	Model     string    `json:"model"` // the upstream's name for it
	Input     int64     `json:"input"`
	Cached    int64     `json:"cached"`
	Output    int64     `json:"output"`
	Reasoning int64     `json:"reasoning"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SetPrice sets a model's price.
func (s *Store) SetPrice(ctx context.Context, actor string, p Price) error {
	if err := ValidModel(p.Model); err != nil {
		return err
	}
	if p.Input < 0 || p.Output < 0 || p.Cached < 0 || p.Reasoning < 0 {
		return errorf(ErrInvalid, "a price must be 0 or more")
	}
	return s.change(ctx, actor, "price.set", p.Model, p, func(t *sql.Tx) error {
		_, err := t.ExecContext(ctx, s.q(`INSERT INTO prices(model, input, output, cached, reasoning, updated_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(model) DO UPDATE SET input = excluded.input, output = excluded.output, cached = excluded.cached,
				reasoning = excluded.reasoning, updated_at = excluded.updated_at`),
			p.Model, p.Input, p.Output, p.Cached, p.Reasoning, s.micros())
		return err
	})
}

// RemovePrice drops a model's price: it costs nothing from then on.
func (s *Store) RemovePrice(ctx context.Context, actor, model string) error {
	return s.change(ctx, actor, "price.remove", model, nil, func(t *sql.Tx) error {
		return affect(errorf(ErrNotFound, "no price for model %q", model))(t.ExecContext(ctx, s.q(`DELETE FROM prices WHERE model = ?`), model))
	})
}

// Prices lists the price table by model.
func (s *Store) Prices(ctx context.Context) ([]Price, error) {
	return queryAll(ctx, s, `SELECT model, input, output, cached, reasoning, updated_at FROM prices ORDER BY model`, nil,
		func(sc interface{ Scan(...any) error }) (Price, error) {
			var p Price
			var up int64
			err := sc.Scan(&p.Model, &p.Input, &p.Output, &p.Cached, &p.Reasoning, &up)
			p.UpdatedAt = time.UnixMicro(up).UTC()
			return p, err
		})
}
