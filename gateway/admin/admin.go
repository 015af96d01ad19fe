// Package admin serves /admin: a page for the gateway's admins (users and teams,
// quotas, usage as charts and tables, the audit with filters, CSV export) and the
// JSON API behind it. An admin signs in with an admin user's token, which the page
// keeps for the tab's session and sends as a bearer token: there is no cookie, so
// no other site can make a request on an admin's behalf. The page is static: its
// script builds every element from data with DOM calls, never from HTML, under a
// content security policy that allows only the page's own files.
package admin

import (
	"context"
	"embed"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferryhq/ferry/gateway/auth"
	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/gateway/token"
)

//go:embed assets
var assets embed.FS

// CSP allows the page's own script, style and message catalogs, nothing else: no
// inline script or style, no other origin, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Languages the page speaks; the first is the fallback.
var Languages = []string{"en", "zh_CN", "zh_TW", "es"}

// Admin is the /admin handler.
type Admin struct {
	st     *store.Store
	snap   func() *auth.Snapshot
	reload func(context.Context) error
	log    zerolog.Logger
	mux    *http.ServeMux
}

// New makes the handler. reload puts a change made here in force at once.
func New(st *store.Store, snap func() *auth.Snapshot, reload func(context.Context) error, log zerolog.Logger) *Admin {
	a := &Admin{st: st, snap: snap, reload: reload, log: log, mux: http.NewServeMux()}
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServer(http.FS(static))
	a.mux.HandleFunc("GET /admin", a.page)
	a.mux.HandleFunc("GET /admin/{$}", a.page)
	a.mux.Handle("GET /admin/assets/", http.StripPrefix("/admin/assets/", files))
	api := func(pattern string, h func(w http.ResponseWriter, r *http.Request, who *store.User) (any, error)) {
		a.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { a.api(w, r, h) })
	}
	api("GET /admin/api/whoami", func(w http.ResponseWriter, r *http.Request, who *store.User) (any, error) {
		return map[string]any{"name": who.Name, "team": who.Team}, nil
	})
	api("GET /admin/api/users", a.users)
	api("POST /admin/api/users", a.addUser)
	api("PATCH /admin/api/users/{name}", a.updateUser)
	api("POST /admin/api/users/{name}/rotate", a.rotateUser)
	api("DELETE /admin/api/users/{name}", a.removeUser)
	api("GET /admin/api/teams", a.teams)
	api("PUT /admin/api/teams/{name}", a.setTeam)
	api("GET /admin/api/routes", func(w http.ResponseWriter, r *http.Request, _ *store.User) (any, error) {
		return a.st.Routes(r.Context())
	})
	api("GET /admin/api/upstreams", func(w http.ResponseWriter, r *http.Request, _ *store.User) (any, error) {
		return a.st.Upstreams(r.Context(), false)
	})
	api("GET /admin/api/usage", a.usage)
	api("GET /admin/api/audit", a.audit)
	api("GET /admin/api/actions", a.actions)
	return a
}

func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	a.mux.ServeHTTP(w, r)
}

// Language picks the page's language: ?lang= when it is one of Languages, else
// the best of Accept-Language, else English.
func Language(query, acceptLanguage string) string {
	if l := canonical(query); l != "" {
		return l
	}
	type pref struct {
		tag string
		q   float64
	}
	var best pref
	for _, part := range strings.Split(acceptLanguage, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if l := canonical(tag); l != "" && q > best.q {
			best = pref{l, q}
		}
	}
	if best.tag != "" {
		return best.tag
	}
	return Languages[0]
}

// canonical maps a language tag onto one the page has: zh-Hant, zh-TW, zh-HK and
// zh-MO read Traditional Chinese; other Chinese reads Simplified.
func canonical(tag string) string {
	t := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(tag), "_", "-"))
	switch {
	case t == "":
		return ""
	case t == "zh-tw" || t == "zh-hk" || t == "zh-mo" || strings.HasPrefix(t, "zh-hant"):
		return "zh_TW"
	case t == "zh" || strings.HasPrefix(t, "zh-"):
		return "zh_CN"
	case t == "es" || strings.HasPrefix(t, "es-"):
		return "es"
	case t == "en" || strings.HasPrefix(t, "en-"):
		return "en"
	}
	return ""
}

// htmlLang is the page's lang attribute for a catalog name.
func htmlLang(l string) string { return strings.ReplaceAll(l, "_", "-") }

func (a *Admin) page(w http.ResponseWriter, r *http.Request) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, "missing page", 500)
		return
	}
	lang := Language(r.URL.Query().Get("lang"), r.Header.Get("Accept-Language"))
	// The language is one of four fixed strings: the only thing put into the page.
	page := strings.Replace(string(b), `<html lang="en" data-lang="en">`, fmt.Sprintf(`<html lang="%s" data-lang="%s">`, htmlLang(lang), lang), 1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Vary", "Accept-Language")
	io.WriteString(w, page)
}

type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func (a *Admin) api(w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request, *store.User) (any, error)) {
	who, err := a.snap().Authenticate(auth.Credential(r.Header))
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": err.Error(), "code": "unauthorized"})
		return
	}
	if !who.Admin {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf("user %q is not a gateway admin", who.Name), "code": "forbidden"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	v, err := h(w, r, who)
	if err != nil {
		status, code := http.StatusInternalServerError, "internal"
		var ae *apiError
		switch {
		case errors.As(err, &ae):
			status, code = ae.status, "bad_request"
		case errors.Is(err, store.ErrNotFound):
			status, code = http.StatusNotFound, "not_found"
		case errors.Is(err, store.ErrExists):
			status, code = http.StatusConflict, "exists"
		case errors.Is(err, store.ErrInvalid):
			status, code = http.StatusBadRequest, "invalid"
		case errors.Is(err, store.ErrInUse):
			status, code = http.StatusConflict, "in_use"
		default:
			a.log.Error().Err(err).Str("path", r.URL.Path).Msg("admin API")
		}
		writeJSON(w, status, map[string]string{"error": err.Error(), "code": code})
		return
	}
	if v == nil {
		return // the handler wrote the answer (CSV)
	}
	writeJSON(w, http.StatusOK, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &apiError{http.StatusBadRequest, "the request body is not the JSON expected: " + err.Error()}
	}
	return nil
}

func actor(who *store.User) string { return "admin:" + who.Name }

// changed puts a change in force in this process at once (others follow within a
// second).
func (a *Admin) changed(ctx context.Context) {
	if err := a.reload(ctx); err != nil {
		a.log.Warn().Err(err).Msg("reloading after an admin change")
	}
}

func (a *Admin) users(w http.ResponseWriter, r *http.Request, _ *store.User) (any, error) {
	return a.st.Users(r.Context())
}

type newUser struct {
	Name        string   `json:"name"`
	Team        string   `json:"team"`
	DailyTokens int64    `json:"daily_tokens"`
	RPM         int64    `json:"rpm"`
	Models      []string `json:"models"`
	Admin       bool     `json:"admin"`
}

func (a *Admin) addUser(w http.ResponseWriter, r *http.Request, who *store.User) (any, error) {
	var nu newUser
	if err := decode(r, &nu); err != nil {
		return nil, err
	}
	tok, h := token.New()
	if nu.Models == nil {
		nu.Models = []string{}
	}
	u := store.User{Name: nu.Name, Team: nu.Team, DailyTokens: nu.DailyTokens, RPM: nu.RPM, Models: nu.Models, Admin: nu.Admin}
	if err := a.st.AddUser(r.Context(), actor(who), u, h); err != nil {
		return nil, err
	}
	a.changed(r.Context())
	return map[string]string{"name": u.Name, "token": tok}, nil
}

func (a *Admin) updateUser(w http.ResponseWriter, r *http.Request, who *store.User) (any, error) {
	var c store.UserChange
	if err := decode(r, &c); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	if name == who.Name && ((c.Disabled != nil && *c.Disabled) || (c.Admin != nil && !*c.Admin)) {
		return nil, &apiError{http.StatusBadRequest, "you cannot disable yourself or take away your own admin right here: another admin (or the command line) must"}
	}
	if err := a.st.UpdateUser(r.Context(), actor(who), name, c); err != nil {
		return nil, err
	}
	a.changed(r.Context())
	return map[string]string{"name": name}, nil
}

func (a *Admin) rotateUser(w http.ResponseWriter, r *http.Request, who *store.User) (any, error) {
	tok, h := token.New()
	name := r.PathValue("name")
	if err := a.st.RotateUser(r.Context(), actor(who), name, h); err != nil {
		return nil, err
	}
	a.changed(r.Context())
	return map[string]string{"name": name, "token": tok}, nil
}

func (a *Admin) removeUser(w http.ResponseWriter, r *http.Request, who *store.User) (any, error) {
	name := r.PathValue("name")
	if name == who.Name {
		return nil, &apiError{http.StatusBadRequest, "you cannot remove yourself here"}
	}
	if err := a.st.RemoveUser(r.Context(), actor(who), name); err != nil {
		return nil, err
	}
	a.changed(r.Context())
	return map[string]string{"name": name}, nil
}

func (a *Admin) teams(w http.ResponseWriter, r *http.Request, _ *store.User) (any, error) {
	return a.st.Teams(r.Context())
}

func (a *Admin) setTeam(w http.ResponseWriter, r *http.Request, who *store.User) (any, error) {
	var v struct {
		DailyTokens int64 `json:"daily_tokens"`
		RPM         int64 `json:"rpm"`
	}
	if err := decode(r, &v); err != nil {
		return nil, err
	}
	tm := store.Team{Name: r.PathValue("name"), DailyTokens: v.DailyTokens, RPM: v.RPM}
	if err := a.st.SetTeam(r.Context(), actor(who), tm); err != nil {
		return nil, err
	}
	a.changed(r.Context())
	return tm, nil
}

// day reads a YYYY-MM-DD (UTC) query value.
func day(q string, name string) (time.Time, error) {
	if q == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse("2006-01-02", q)
	if err != nil {
		return t, &apiError{http.StatusBadRequest, fmt.Sprintf("%s: %q is not a date like 2026-03-04", name, q)}
	}
	return t, nil
}

func (a *Admin) usage(w http.ResponseWriter, r *http.Request, _ *store.User) (any, error) {
	q := r.URL.Query()
	f := store.UsageFilter{User: q.Get("user"), Team: q.Get("team"), Model: q.Get("model")}
	var err error
	if f.Since, err = day(q.Get("since"), "since"); err != nil {
		return nil, err
	}
	if f.Until, err = day(q.Get("until"), "until"); err != nil {
		return nil, err
	}
	if !f.Until.IsZero() {
		f.Until = f.Until.Add(24 * time.Hour) // the until day is included
	}
	if by := q.Get("by"); by != "" {
		f.By = strings.Split(by, ",")
	}
	rows, err := a.st.Usage(r.Context(), f)
	if err != nil {
		return nil, err
	}
	if q.Get("format") == "csv" {
		WriteUsageCSV(csvWriter(w, "usage"), rows)
		return nil, nil
	}
	return rows, nil
}

func (a *Admin) audit(w http.ResponseWriter, r *http.Request, _ *store.User) (any, error) {
	q := r.URL.Query()
	f := store.RequestFilter{User: q.Get("user"), Team: q.Get("team"), Model: q.Get("model"), TraceID: q.Get("trace_id"),
		Errors: q.Get("errors") == "1", Before: q.Get("before")}
	var err error
	if f.Since, err = day(q.Get("since"), "since"); err != nil {
		return nil, err
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil {
		f.Limit = n
	} else {
		f.Limit = 200
	}
	rows, err := a.st.Requests(r.Context(), f)
	if err != nil {
		return nil, err
	}
	if q.Get("format") == "csv" {
		WriteRequestsCSV(csvWriter(w, "audit"), rows)
		return nil, nil
	}
	return rows, nil
}

func (a *Admin) actions(w http.ResponseWriter, r *http.Request, _ *store.User) (any, error) {
	q := r.URL.Query()
	f := store.ActionFilter{User: q.Get("user"), Limit: 200}
	var err error
	if f.Since, err = day(q.Get("since"), "since"); err != nil {
		return nil, err
	}
	return a.st.AdminActions(r.Context(), f)
}

func csvWriter(w http.ResponseWriter, name string) *csv.Writer {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="ferry-gateway-%s-%s.csv"`, name, time.Now().UTC().Format("2006-01-02")))
	return csv.NewWriter(w)
}

// cell keeps a spreadsheet from reading a value as a formula: a cell that starts
// with = + - @ (or a tab or carriage return) gets a leading apostrophe.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// WriteUsageCSV writes usage rows as CSV, a header first.
func WriteUsageCSV(cw *csv.Writer, rows []store.UsageRow) error {
	cw.Write([]string{"day", "user", "team", "model", "requests", "errors", "input_tokens", "output_tokens", "cached_tokens", "estimated", "cost_micros"})
	for _, u := range rows {
		cw.Write([]string{u.Day, cell(u.User), cell(u.Team), cell(u.Model), itoa(u.Requests), itoa(u.Errors), itoa(u.InputTokens), itoa(u.OutputTokens), itoa(u.CachedTokens), itoa(u.Estimated), itoa(u.CostMicros)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteRequestsCSV writes audited requests as CSV, a header first.
func WriteRequestsCSV(cw *csv.Writer, rows []store.Request) error {
	cw.Write([]string{"id", "time", "user", "team", "dialect", "model", "upstream", "upstream_model", "stream", "status", "error",
		"input_tokens", "output_tokens", "cached_tokens", "estimated", "latency_ms", "ttfb_ms", "attempts", "trace_id", "client"})
	for _, r := range rows {
		cw.Write([]string{r.ID, r.Time.Format(time.RFC3339Nano), cell(r.User), cell(r.Team), r.Dialect, cell(r.Model), cell(r.Upstream), cell(r.UpstreamModel),
			strconv.FormatBool(r.Stream), strconv.Itoa(r.Status), cell(r.Error), itoa(r.InputTokens), itoa(r.OutputTokens), itoa(r.CachedTokens),
			strconv.FormatBool(r.Estimated), strconv.FormatFloat(r.LatencyMS, 'f', 3, 64), strconv.FormatFloat(r.TTFBMS, 'f', 3, 64),
			strconv.Itoa(r.Attempts), cell(r.TraceID), r.Client})
	}
	cw.Flush()
	return cw.Error()
}
