// Package proxy serves the model endpoints: it authenticates a request by the
// user's token, picks the route by model name, takes the quota, calls the route's
// upstream with the gateway's key (falling back to the next upstream while nothing
// has reached the client), passes the answer on as it comes, meters it, and
// settles and audits the request.
package proxy

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/gateway/auth"
	"github.com/ferryhq/ferry/gateway/dialect"
	"github.com/ferryhq/ferry/gateway/metrics"
	"github.com/ferryhq/ferry/gateway/quota"
	"github.com/ferryhq/ferry/gateway/settings"
	"github.com/ferryhq/ferry/gateway/store"
)

// TraceHeader carries the trace id of the client's run (a Ferry host sends its
// run's); the gateway records it in the request's audit row.
const TraceHeader = "X-Ferry-Trace-Id"

// RequestIDHeader names the gateway's audit row of the request, in its answer.
const RequestIDHeader = "X-Ferry-Gateway-Request"

// maxContent bounds each of a request's stored prompt and answer.
const maxContent = 1 << 20

// Proxy serves /v1/chat/completions, /v1/messages and /v1/models.
type Proxy struct {
	store    *store.Store
	instance string
	log      zerolog.Logger
	http     *http.Client
	snap     atomic.Pointer[auth.Snapshot]
	rec      *recorder
	j        *Journal
	m        *meters
	// handlers counts the requests being served, for a shutdown to wait on.
	handlers sync.WaitGroup
	// Now is the clock; tests replace it.
	Now func() time.Time

	mu     sync.Mutex
	active map[*inflight]struct{}
	// inUse counts the requests in flight by "user:NAME" and "team:NAME", and
	// the bytes of body held under "".
	inUse map[string]int64
	// keyUse is when each further key was last used, since the last TakeKeyUses.
	keyUse map[string]time.Time
	// cooling is until when an upstream that said it was rate limited goes
	// after the others of a route.
	cooling map[string]time.Time
}

// order is the order a request tries a route's upstreams in: one picked by the
// route's weights first (else the primary), then the rest as listed; those
// cooling down after a 429 last.
func (p *Proxy) order(r *store.Route) []string {
	names := append([]string{r.Upstream}, r.Fallbacks...)
	if len(r.Weights) == len(names) {
		total := int64(0)
		for _, w := range r.Weights {
			total += w
		}
		if total > 0 {
			n := rand.Int64N(total)
			for i, w := range r.Weights {
				if n < w {
					names = append(append([]string{names[i]}, names[:i]...), names[i+1:]...)
					break
				}
				n -= w
			}
		}
	}
	now := p.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var ready, cool []string
	for _, n := range names {
		if now.Before(p.cooling[n]) {
			cool = append(cool, n)
		} else {
			ready = append(ready, n)
		}
	}
	return append(ready, cool...)
}

// coolDown puts an upstream after the others for as long as it asked (its
// Retry-After), 10 s when it did not say, 1 to 60 s.
func (p *Proxy) coolDown(name string, advice http.Header) {
	d := 10 * time.Second
	if s, err := strconv.Atoi(advice.Get("Retry-After")); err == nil {
		d = time.Duration(s) * time.Second
	}
	d = min(max(d, time.Second), time.Minute)
	p.mu.Lock()
	p.cooling[name] = p.Now().Add(d)
	p.mu.Unlock()
}

// TakeKeyUses returns when keys were last used since the last call.
func (p *Proxy) TakeKeyUses() map[string]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.keyUse
	p.keyUse = map[string]time.Time{}
	return out
}

// inflight is a request being answered, which a change of its user cuts short.
type inflight struct {
	user   *store.User
	cancel context.CancelCauseFunc
}

type meters struct {
	requests  *metrics.CounterVec
	tokens    *metrics.CounterVec
	latency   *metrics.HistogramVec
	ttfb      *metrics.HistogramVec
	upErrors  *metrics.CounterVec
	refusals  *metrics.CounterVec
	active    *metrics.Gauge
	fallbacks *metrics.CounterVec
	spend     *metrics.CounterVec
}

// New makes a proxy writing to st, counting into reg.
// What the journal j holds from processes that stopped (spooled) is written
// first.
func New(st *store.Store, j *Journal, spooled []store.Settlement, instance string, reg *metrics.Registry, log zerolog.Logger) *Proxy {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Hundreds of streams may be open to one vendor at once.
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 512
	t.ResponseHeaderTimeout = 0
	p := &Proxy{store: st, instance: instance, log: log, http: &http.Client{Transport: t}, Now: time.Now,
		active: map[*inflight]struct{}{}, inUse: map[string]int64{}, keyUse: map[string]time.Time{}, cooling: map[string]time.Time{}}
	p.m = &meters{
		requests:  reg.NewCounter("ferry_gateway_requests_total", "Model requests answered, by endpoint dialect, model, upstream and HTTP status.", "dialect", "model", "upstream", "status"),
		tokens:    reg.NewCounter("ferry_gateway_tokens_total", "Tokens counted, by model and kind (input, output, cached).", "model", "kind"),
		latency:   reg.NewHistogram("ferry_gateway_request_duration_seconds", "Time from a request's arrival to its last byte, by model and status.", metrics.LatencyBuckets, "model", "status"),
		ttfb:      reg.NewHistogram("ferry_gateway_time_to_first_byte_seconds", "Time from a request's arrival to the first byte of its answer, by model.", metrics.LatencyBuckets, "model"),
		upErrors:  reg.NewCounter("ferry_gateway_upstream_errors_total", "Failed upstream attempts, by upstream and reason.", "upstream", "reason"),
		refusals:  reg.NewCounter("ferry_gateway_quota_refusals_total", "Requests refused by a quota, by what ran out (tokens, requests).", "limit"),
		active:    reg.NewGauge("ferry_gateway_active_requests", "Requests being answered now."),
		spend:     reg.NewCounter("ferry_gateway_spend_micros_total", "What requests cost by the price table, in millionths of its currency, by model.", "model"),
		fallbacks: reg.NewCounter("ferry_gateway_fallbacks_total", "Requests passed to a route's next upstream, by the upstream that failed.", "upstream"),
	}
	p.j = j
	p.rec = newRecorder(st, j, spooled, log)
	return p
}

// SetSnapshot puts a new configuration in force and cuts the requests of users it
// disabled, removed or gave a new token.
func (p *Proxy) SetSnapshot(s *auth.Snapshot) {
	p.snap.Store(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	for f := range p.active {
		if !s.StillValid(f.user) {
			f.cancel(errRevoked)
		}
	}
}

// Snapshot is the configuration in force.
func (p *Proxy) Snapshot() *auth.Snapshot { return p.snap.Load() }

// Close writes the audit of answered requests, to the database or else to the
// journal, which stays for the next start only when it holds something.
func (p *Proxy) Close() {
	left := p.rec.close()
	p.j.Close()
	if left == 0 {
		p.j.Remove()
	}
}

// Adopt settles what gateway processes that died on this machine (sharing its
// spool folder) left in their journals; it returns how many requests.
func (p *Proxy) Adopt() (int, error) {
	left, err := p.j.Adopt()
	if len(left) > 0 {
		p.rec.adopt(left)
	}
	return len(left), err
}

// Wait waits for the requests being served to end.
func (p *Proxy) Wait() { p.handlers.Wait() }

// Backlog is what waits to be written to the database: in memory, and in the
// journal.
func (p *Proxy) Backlog() (queued, spooled int) { return p.rec.backlog() }

// Flush waits until every request answered so far is settled and audited.
func (p *Proxy) Flush() { p.rec.flush() }

// ErrShutdown ends the requests still in flight when a stop's grace is over.
var ErrShutdown = errors.New("the gateway is stopping")

var (
	errRevoked      = errors.New("the user was disabled, removed or given a new token")
	errIdle         = errors.New("the upstream sent nothing for too long")
	errFirstByte    = errors.New("the upstream did not begin its answer in time")
	errNoQuotaCheck = errors.New("the quota could not be checked")
	errQuotaCut     = errors.New("the daily token quota ran out during the answer")
	errClientGon    = errors.New("the client went away")
)

// Handler serves the model endpoints.
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { p.serve(w, r, dialect.OpenAI) })
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) { p.serve(w, r, dialect.Anthropic) })
	mux.HandleFunc("GET /v1/models", p.models)
	mux.HandleFunc("GET /v1/models/{model...}", p.model)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		d := clientDialect(r)
		writeError(w, d, dialect.KindNotFound, fmt.Sprintf("%s %s is not an endpoint of this gateway: it serves POST /v1/chat/completions, POST /v1/messages, GET /v1/models and GET /v1/models/{model}", r.Method, r.URL.Path), 0)
	})
	return mux
}

// clientDialect guesses the dialect of a request to a path that has none:
// Anthropic's clients always send anthropic-version.
func clientDialect(r *http.Request) dialect.Dialect {
	if r.Header.Get("anthropic-version") != "" || strings.HasPrefix(r.URL.Path, "/v1/messages") {
		return dialect.Anthropic
	}
	return dialect.OpenAI
}

func writeError(w http.ResponseWriter, d dialect.Dialect, k dialect.Kind, msg string, retryAfter time.Duration) {
	writeErrorStatus(w, d, k, k.Status(), msg, retryAfter)
}

func writeErrorStatus(w http.ResponseWriter, d dialect.Dialect, k dialect.Kind, status int, msg string, retryAfter time.Duration) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
		// The vendors' SDKs prefer this one when present: the wait to the
		// millisecond rather than rounded up to the second.
		h.Set("Retry-After-Ms", strconv.FormatInt(retryAfter.Milliseconds(), 10))
	}
	w.WriteHeader(status)
	w.Write(dialect.ErrorBody(d, k, msg))
}

// dontRetry tells the vendors' SDKs not to retry an error that the next few
// seconds will not mend: without it they retry every 429, and sleep out its
// Retry-After however long it is (a used-up daily quota's runs to midnight).
func dontRetry(w http.ResponseWriter) { w.Header().Set("X-Should-Retry", "false") }

// modelsFor authenticates a models request and lists the models its user may
// call; ok is false when it has answered with an error.
func (p *Proxy) modelsFor(w http.ResponseWriter, r *http.Request) (d dialect.Dialect, ms []dialect.Model, ok bool) {
	d = clientDialect(r)
	snap := p.Snapshot()
	u, err := snap.Authenticate(auth.Credential(r.Header))
	if err != nil {
		k := dialect.KindAuth
		if errors.Is(err, auth.ErrDisabled) {
			k = dialect.KindForbidden
		}
		writeError(w, d, k, err.Error(), 0)
		return d, nil, false
	}
	for _, rt := range snap.ModelsFor(u) {
		owner := "ferry-gateway"
		if up := snap.Upstreams[rt.Upstream]; up != nil {
			owner = up.Kind
		}
		ms = append(ms, dialect.Model{ID: rt.Model, Created: rt.CreatedAt.Unix(), Owner: owner})
	}
	return d, ms, true
}

func (p *Proxy) models(w http.ResponseWriter, r *http.Request) {
	d, ms, ok := p.modelsFor(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(dialect.Models(d, ms))
}

// model answers GET /v1/models/{model}: one model of the list (the SDKs'
// models.retrieve), or 404 for a model the user may not call or that has no route.
func (p *Proxy) model(w http.ResponseWriter, r *http.Request) {
	d, ms, ok := p.modelsFor(w, r)
	if !ok {
		return
	}
	id := r.PathValue("model")
	for _, m := range ms {
		if m.ID == id {
			w.Header().Set("Content-Type", "application/json")
			w.Write(dialect.ModelBody(d, m))
			return
		}
	}
	writeError(w, d, dialect.KindNotFound, fmt.Sprintf("model %q is not one you may call; GET /v1/models lists those you may", clip(id, 200)), 0)
}

// call is one model request on its way through.
type call struct {
	p     *Proxy
	w     http.ResponseWriter
	r     *http.Request
	d     dialect.Dialect
	snap  *auth.Snapshot
	start time.Time

	rec  store.Request
	user *store.User
	req  *dialect.Request
	body []byte
	res  *store.Reservation
	held int64 // tokens the reservation holds (0: no token quota)
	// vendorCap is the answer's limit the vendor is given for a request that
	// named none under a token quota (0: none set).
	vendorCap int64
	reserve   int64 // quota.output_reserve
	wrote     bool
	price     *store.Price // of the upstream model; nil: none
	reasoning int64        // of the output tokens, reasoning
	// unrecorded: refused because usage cannot be recorded now.
	unrecorded bool
	content    *store.Content
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, d dialect.Dialect) {
	c := &call{p: p, w: w, r: r, d: d, snap: p.Snapshot(), start: p.Now()}
	c.rec = store.Request{ID: store.NewID(c.start), Time: c.start.UTC(), Dialect: string(d), TraceID: traceID(r.Header), Client: clientIP(r)}
	w.Header().Set(RequestIDHeader, c.rec.ID)
	// The SDKs show this as the request's id (in errors too): the audit row's.
	w.Header().Set(dialect.RequestIDHeader(d), c.rec.ID)
	p.handlers.Add(1)
	defer p.handlers.Done()
	p.m.active.Add(1)
	defer p.m.active.Add(-1)
	c.run()
	c.finish()
}

// traceID reads the client's trace id when it is a plain token of up to 128
// characters; anything else is not recorded.
func traceID(h http.Header) string {
	v := h.Get(TraceHeader)
	if len(v) > 128 {
		return ""
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r)) {
			return ""
		}
	}
	return v
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// fail answers with an error before anything was sent, and records it.
func (c *call) fail(k dialect.Kind, msg string, retryAfter time.Duration) {
	c.rec.Status, c.rec.Error = k.Status(), msg
	writeError(c.w, c.d, k, msg, retryAfter)
	c.wrote = true
}

func (c *call) run() {
	snap := c.snap
	u, err := snap.Authenticate(auth.Credential(c.r.Header))
	if u != nil {
		c.user, c.rec.User, c.rec.Team = u, u.Name, u.Team
	}
	if err != nil {
		if errors.Is(err, auth.ErrDisabled) {
			c.fail(dialect.KindForbidden, fmt.Sprintf("user %q is disabled; ask a gateway admin", u.Name), 0)
		} else {
			c.fail(dialect.KindAuth, err.Error(), 0)
		}
		return
	}
	if u.KeyID != "" {
		c.p.mu.Lock()
		c.p.keyUse[u.KeyID] = c.start
		c.p.mu.Unlock()
	}
	if msg, wait := c.p.rec.refusal(); msg != "" {
		c.fail(dialect.KindOverloaded, msg, wait)
		c.unrecorded = true
		return
	}
	limit := snap.Settings.Int(settings.MaxBodyMB) << 20
	if c.r.ContentLength > limit {
		c.fail(dialect.KindTooLarge, fmt.Sprintf("the request body is larger than %d MiB (the gateway's limits.max_body_mb)", limit>>20), 0)
		return
	}
	// Before a byte of the body is read: what one user, one team and all
	// together may hold in memory is bounded.
	need := c.r.ContentLength
	if need < 0 {
		need = limit
	}
	release, k, msg := c.p.take(u, need, snap.Settings)
	if release == nil {
		c.fail(k, msg, time.Second)
		return
	}
	defer release()
	buf := bytes.NewBuffer(make([]byte, 0, min(need, limit)+1))
	_, err = buf.ReadFrom(http.MaxBytesReader(c.w, c.r.Body, limit))
	c.body = buf.Bytes()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			c.fail(dialect.KindTooLarge, fmt.Sprintf("the request body is larger than %d MiB (the gateway's limits.max_body_mb)", limit>>20), 0)
		} else {
			c.fail(dialect.KindBadRequest, "could not read the request body: "+err.Error(), 0)
		}
		return
	}
	c.req, err = dialect.Parse(c.d, c.body)
	if err != nil {
		c.fail(dialect.KindBadRequest, err.Error(), 0)
		return
	}
	c.rec.Model, c.rec.Stream = clip(c.req.Model, 200), c.req.Stream
	route := snap.Routes[c.req.Model]
	if route == nil {
		c.fail(dialect.KindNotFound, fmt.Sprintf("the gateway has no route for model %q; GET /v1/models lists the models you may call", c.rec.Model), 0)
		return
	}
	if !u.MayUse(route.Model) {
		c.fail(dialect.KindForbidden, fmt.Sprintf("user %q may not call model %q; ask a gateway admin", u.Name, route.Model), 0)
		return
	}
	primary := snap.Upstreams[route.Upstream]
	if primary == nil {
		c.fail(dialect.KindUpstream, fmt.Sprintf("the route of model %q names upstream %q, which is gone", route.Model, route.Upstream), 0)
		return
	}
	if up := dialect.Dialect(primary.Kind); up != c.d {
		// What the other format cannot carry is refused before any quota is taken.
		if _, err := dialect.TranslateRequest(c.d, up, c.req.Body(dialect.Options{Model: route.UpstreamModel}), dialect.TranslateOptions{}); err != nil {
			c.fail(dialect.KindBadRequest, fmt.Sprintf("model %q is served by an %s upstream, and this request cannot be translated for it: %v", route.Model, primary.Kind, err), 0)
			return
		}
	}
	c.rec.UpstreamModel = route.UpstreamModel
	c.price = snap.Prices[route.UpstreamModel]
	if c.snap.Settings.Bool(settings.StoreContent) {
		c.content = &store.Content{Request: clip(string(c.body), maxContent)}
	}
	// The parsed request is all that is needed from here: a large body is not
	// held twice for the answer's length.
	c.body = nil
	if !c.admit() {
		return
	}
	// Should this process die during the answer, the next start charges the
	// request this.
	pre := store.Settlement{Reservation: c.res, Request: c.rec}
	pre.Request.InputTokens, pre.Request.Estimated = dialect.EstimateBytes(c.req.InputBound), true
	pre.Request.CostMicros = quota.Cost(c.price, pre.Request.InputTokens, 0, 0, 0)
	if err := c.p.j.Admit(pre); err != nil {
		c.p.log.Error().Err(err).Msg("journaling a request")
		c.fail(dialect.KindOverloaded, "the gateway cannot record usage now (its local spool is full); try again later", 5*time.Second)
		return
	}
	c.forward(route)
}

// take counts a request in flight for its user and team, holding need bytes of
// body; nil, with the refusal, when a cap is reached.
func (p *Proxy) take(u *store.User, need int64, set settings.Values) (release func(), k dialect.Kind, msg string) {
	userCap, teamCap := set.Int(settings.UserInFlight), set.Int(settings.TeamInFlight)
	memCap := set.Int(settings.BodyMemoryMB) << 20
	uk, tk := "user:"+u.Name, "team:"+u.Team
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case userCap > 0 && p.inUse[uk] >= userCap:
		return nil, dialect.KindRateLimit, fmt.Sprintf("you have %d requests in flight, this gateway's limit (limits.user_concurrency); try again when one ends", userCap)
	case teamCap > 0 && u.Team != "" && p.inUse[tk] >= teamCap:
		return nil, dialect.KindRateLimit, fmt.Sprintf("your team has %d requests in flight, this gateway's limit (limits.team_concurrency); try again when one ends", teamCap)
	case p.inUse[""]+need > memCap && p.inUse[""] > 0:
		return nil, dialect.KindOverloaded, "the gateway holds as many request bodies as it may (limits.body_memory_mb); try again in a second"
	}
	p.inUse[uk]++
	p.inUse[tk]++
	p.inUse[""] += need
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.inUse[uk]--
		p.inUse[tk]--
		p.inUse[""] -= need
		for _, key := range []string{uk, tk} {
			if p.inUse[key] == 0 {
				delete(p.inUse, key)
			}
		}
	}, 0, ""
}

// admit takes the request's quota: its requests of the minute, and a hold of its
// tokens of the day.
func (c *call) admit() bool {
	lim := quota.Of(c.user, c.snap.Teams[c.user.Team])
	c.reserve = c.snap.Settings.Int(settings.OutputReserve)
	out := c.req.MaxTokens
	if out == 0 {
		out = c.reserve
	}
	tokens := c.req.InputBound + out*c.req.Choices
	hold := int64(0)
	if lim.Tokens() {
		hold = tokens
	}
	claims := lim.Claims(c.start, hold)
	// A budget holds what the tokens held would cost at most; a model without a
	// price costs nothing against it.
	budgeted := false
	if p := c.price; p != nil && lim.Budgets() {
		perOut := max(p.Output, p.Reasoning)
		spend := quota.Spend{Amount: (c.req.InputBound*p.Input + out*c.req.Choices*perOut + 999_999) / 1_000_000, PerMTok: perOut}
		claims = append(claims, lim.BudgetClaims(c.start, spend)...)
		budgeted = true
	}
	if len(claims) == 0 {
		return true
	}
	c.res = &store.Reservation{ID: c.rec.ID, Instance: c.p.instance, Claims: claims}
	err := c.p.store.Reserve(c.r.Context(), c.res)
	var ref *store.Refused
	if errors.As(err, &ref) {
		why := quota.Explain(ref, c.start)
		if !why.Rate && !why.UsedUp {
			// Held room frees when its holders end: say when, if they are
			// requests of a process that stopped.
			live, freed, err := c.p.store.Holders(c.r.Context(), ref.Claim.Scope, ref.Claim.Bucket)
			if err == nil && !live && !freed.IsZero() {
				why = quota.HeldByStopped(ref, c.start, freed)
			}
		}
		k, what := dialect.KindQuota, "tokens"
		if why.Rate {
			k, what = dialect.KindRateLimit, "requests"
		}
		c.p.m.refusals.Inc(what)
		c.res = nil
		if why.UsedUp {
			dontRetry(c.w)
		}
		c.fail(k, why.Msg, why.RetryAfter)
		return false
	}
	if err != nil {
		c.res = nil
		c.p.log.Error().Err(err).Msg("taking quota")
		// The database is unreachable: the quota cannot be kept, so the request
		// is not served.
		c.fail(dialect.KindOverloaded, "the gateway cannot check the quota now (its database is unreachable); try again in a few seconds", 5*time.Second)
		return false
	}
	if budgeted && !lim.Tokens() {
		// The stream's hold grows as it runs, as a token quota's does.
		c.held = tokens
	}
	if lim.Tokens() {
		c.held = hold
		// The vendor may bill no more than the quota has room for, shared by
		// the n answers; a whole answer that named no limit, which cannot be cut,
		// no more than the reserve either.
		if c.res.Room > 0 {
			capTok := max((c.res.Room-dialect.EstimateBytes(c.req.InputBound))/c.req.Choices, 1)
			if !c.req.Stream && c.req.MaxTokens == 0 {
				capTok = min(capTok, c.reserve)
			}
			c.vendorCap = capTok
		}
	}
	return true
}

// attemptError is a failed upstream attempt.
type attemptError struct {
	kind     dialect.Kind
	msg      string
	fallback bool // the next upstream may succeed
	reason   string
	final    bool // retrying soon will not help: the client is told not to
	// passthrough is the upstream's own error response, in the client's dialect,
	// given to the client as it came when no fallback is left, with the
	// upstream's advice on retrying.
	status int
	body   []byte
	advice http.Header
}

// adviceHeaders are an upstream's headers on when to retry, which the vendors'
// SDKs read: passed on with the upstream's error.
var adviceHeaders = []string{"Retry-After", "Retry-After-Ms", "X-Should-Retry"}

func advice(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range adviceHeaders {
		if v := h.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	return out
}

func (c *call) forward(route *store.Route) {
	ctx, cancel := context.WithCancelCause(c.r.Context())
	defer cancel(nil)
	f := &inflight{user: c.user, cancel: cancel}
	c.p.mu.Lock()
	c.p.active[f] = struct{}{}
	c.p.mu.Unlock()
	defer func() {
		c.p.mu.Lock()
		delete(c.p.active, f)
		c.p.mu.Unlock()
	}()
	// A change that landed between authentication and registration is not missed.
	if s := c.p.Snapshot(); !s.StillValid(c.user) {
		cancel(errRevoked)
	}

	names := c.p.order(route)
	var last *attemptError
	for i, name := range names {
		up := c.snap.Upstreams[name]
		if up == nil {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		c.rec.Attempts++
		c.rec.Upstream = up.Name
		aerr := c.attempt(ctx, up, route)
		if aerr == nil {
			return
		}
		c.p.m.upErrors.Inc(up.Name, aerr.reason)
		if aerr.reason == "429" {
			c.p.coolDown(up.Name, aerr.advice)
		}
		last = aerr
		if !aerr.fallback || c.wrote {
			break
		}
		if i < len(names)-1 {
			c.p.m.fallbacks.Inc(up.Name)
			c.p.log.Warn().Str("upstream", up.Name).Str("model", route.Model).Str("reason", aerr.msg).Msg("falling back")
		}
	}
	if c.wrote {
		return
	}
	if cause := context.Cause(ctx); ctx.Err() != nil {
		c.endBeforeAnswer(cause)
		return
	}
	if last == nil {
		c.fail(dialect.KindUpstream, fmt.Sprintf("no upstream of model %q speaks this endpoint's format", route.Model), 0)
		return
	}
	if last.body != nil {
		c.rec.Status, c.rec.Error = last.status, clip(last.msg, 500)
		h := c.w.Header()
		h.Set("Content-Type", "application/json")
		for k, v := range last.advice {
			h[k] = v
		}
		c.w.WriteHeader(last.status)
		c.w.Write(last.body)
		c.wrote = true
		return
	}
	if last.final {
		dontRetry(c.w)
	}
	c.fail(last.kind, last.msg, 0)
}

// endBeforeAnswer records a request whose context ended before any answer.
// The vendor had the prompt by then, and bills it: the request is charged its
// estimate.
func (c *call) endBeforeAnswer(cause error) {
	if c.rec.Attempts > 0 {
		c.rec.InputTokens, c.rec.Estimated = dialect.EstimateBytes(c.req.InputBound), true
	}
	switch {
	case errors.Is(cause, errRevoked):
		c.fail(dialect.KindForbidden, "this user was disabled, removed or given a new token; ask a gateway admin", 0)
	case errors.Is(cause, ErrShutdown):
		c.fail(dialect.KindOverloaded, "the gateway is restarting and could not answer in its grace; try again", time.Second)
	default:
		c.rec.Status, c.rec.Error = 499, "the client went away before the answer"
	}
}

// scrub removes the upstream's key from text the upstream sent, should it quote
// it back.
func scrub(b []byte, key string) []byte {
	if len(key) < 8 {
		return b
	}
	return bytes.ReplaceAll(b, []byte(key), []byte("[redacted]"))
}

func (c *call) attempt(parent context.Context, up *store.Upstream, route *store.Route) *attemptError {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	opts := dialect.Options{Model: route.UpstreamModel}
	opts.CapTokens = c.vendorCap
	upD := dialect.Dialect(up.Kind)
	reqBody := c.req.Body(opts)
	if upD != c.d {
		var err error
		if reqBody, err = dialect.TranslateRequest(c.d, upD, reqBody, dialect.TranslateOptions{MaxTokens: c.reserve}); err != nil {
			return &attemptError{kind: dialect.KindBadRequest, msg: err.Error(), reason: "translate"}
		}
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, dialect.Endpoint(upD, up.BaseURL), bytes.NewReader(reqBody))
	if err != nil {
		return &attemptError{kind: dialect.KindUpstream, msg: "bad upstream URL", reason: "config"}
	}
	dialect.Headers(upD, hreq.Header, c.r.Header, up.APIKey, c.req.Stream)
	hreq.Header.Set("User-Agent", "ferry-gateway/"+buildinfo.Version)
	// Until the answer begins, its own bound: a stream's first event comes at
	// once, a whole answer only when it is written. Then the idle bound, reset
	// by every byte.
	idle := c.snap.Settings.Seconds(settings.IdleTimeout)
	first, firstKey := c.snap.Settings.Seconds(settings.FirstByte), settings.FirstByte
	if !c.req.Stream {
		first, firstKey = c.snap.Settings.Seconds(settings.WholeTimeout), settings.WholeTimeout
	}
	var begun atomic.Bool
	watchdog := time.AfterFunc(first, func() {
		if begun.Load() {
			cancel(errIdle)
		} else {
			cancel(errFirstByte)
		}
	})
	defer watchdog.Stop()
	late := func() *attemptError {
		return &attemptError{kind: dialect.KindTimeout, msg: fmt.Sprintf("upstream %q did not begin its answer within %s (%s)", up.Name, first, firstKey), fallback: true, reason: "timeout"}
	}
	resp, err := c.p.http.Do(hreq)
	if err != nil {
		if parent.Err() != nil {
			return &attemptError{kind: dialect.KindUpstream, msg: "cancelled", reason: "cancelled"}
		}
		if errors.Is(context.Cause(ctx), errFirstByte) {
			return late()
		}
		// The details (the upstream's address among them) are for the log, not
		// for users.
		c.p.log.Warn().Str("upstream", up.Name).Str("error", string(scrub([]byte(unwrapURLError(err).Error()), up.APIKey))).Msg("cannot reach an upstream")
		return &attemptError{kind: dialect.KindUpstream, msg: fmt.Sprintf("cannot reach upstream %q (%s)", up.Name, netReason(err)), fallback: true, reason: "network"}
	}
	defer resp.Body.Close()
	body := &idleReader{r: resp.Body, reset: func() { begun.Store(true); watchdog.Reset(idle) }}
	if resp.StatusCode != http.StatusOK {
		return c.upstreamStatus(up, resp)
	}
	var aerr *attemptError
	if c.req.Stream {
		aerr = c.stream(ctx, up, resp, body)
	} else {
		aerr = c.whole(ctx, up, resp, body)
	}
	if aerr != nil && errors.Is(context.Cause(ctx), errFirstByte) {
		return late()
	}
	return aerr
}

// netReason names a network failure without the addresses its error carries.
func netReason(err error) string {
	var dns *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dns):
		return "its host name does not resolve"
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid):
		return "its TLS certificate is not trusted"
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the connection closed"
	}
	return "network error"
}

func unwrapURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

type idleReader struct {
	r     io.Reader
	reset func()
}

func (b *idleReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.reset()
	}
	return n, err
}

// upstreamStatus reads an upstream's error answer and decides what follows.
func (c *call) upstreamStatus(up *store.Upstream, resp *http.Response) *attemptError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	b = scrub(b, up.APIKey)
	st := resp.StatusCode
	vendorMsg := vendorMessage(b)
	e := &attemptError{reason: strconv.Itoa(st)}
	switch {
	case st == 401 || st == 403:
		// The gateway's key, not the client's token: the client cannot fix it.
		e.kind, e.fallback, e.final = dialect.KindUpstream, true, true
		e.msg = fmt.Sprintf("upstream %q refused the gateway's key (HTTP %d: %s); a gateway admin must update it with: ferry gateway upstream add %s … --api-key-stdin", up.Name, st, vendorMsg, up.Name)
	case st == 429:
		e.kind, e.fallback = dialect.KindRateLimit, true
		e.msg = fmt.Sprintf("upstream %q is rate limiting the gateway: %s", up.Name, vendorMsg)
		e.status, e.body, e.advice = st, b, advice(resp.Header)
		if !json200ish(b) {
			e.body = dialect.ErrorBody(c.d, dialect.KindRateLimit, e.msg)
		}
	case st == 408 || st >= 500:
		e.kind, e.fallback = dialect.KindUpstream, true
		if st == 504 || st == 408 {
			e.kind = dialect.KindTimeout
		}
		e.msg = fmt.Sprintf("upstream %q failed (HTTP %d): %s", up.Name, st, vendorMsg)
		if st == 503 || st == 529 {
			// Overloaded: passed on as it is, for the client's SDK to back off.
			e.kind = dialect.KindOverloaded
			e.status, e.body, e.advice = st, b, advice(resp.Header)
			if !json200ish(b) {
				e.body = dialect.ErrorBody(c.d, dialect.KindOverloaded, e.msg)
			}
		}
	default:
		// The request itself is at fault (400, 404, 413, 422…): another upstream
		// would refuse it too. The vendor's answer is in the client's dialect.
		e.kind = dialect.KindBadRequest
		e.msg = fmt.Sprintf("upstream %q refused the request (HTTP %d): %s", up.Name, st, vendorMsg)
		e.status, e.body = st, b
		if !json200ish(b) {
			e.body = dialect.ErrorBody(c.d, dialect.KindBadRequest, e.msg)
		}
	}
	if e.body != nil && dialect.Dialect(up.Kind) != c.d {
		// The vendor's error in its own format would puzzle the client's SDK.
		e.body = dialect.TranslateError(c.d, e.kind, b)
	}
	return e
}

// json200ish: the body is a JSON object, fit to pass on as an error answer.
func json200ish(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 1 && b[0] == '{' && b[len(b)-1] == '}'
}

// vendorMessage finds the message of a vendor's error body.
func vendorMessage(b []byte) string {
	var v struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &v) == nil {
		if v.Error.Message != "" {
			return clip(v.Error.Message, 300)
		}
		if v.Message != "" {
			return clip(v.Message, 300)
		}
	}
	s := strings.TrimSpace(string(b))
	if s == "" || strings.HasPrefix(s, "<") {
		return "no message"
	}
	return clip(s, 300)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// commit sends the response's headers: from here on there is no fallback.
func (c *call) commit(status int, h http.Header) {
	out := c.w.Header()
	for k, v := range h {
		out[k] = v
	}
	c.w.WriteHeader(status)
	c.wrote = true
	c.rec.TTFB = c.p.Now().Sub(c.start)
	c.p.m.ttfb.Observe(c.rec.TTFB.Seconds(), c.rec.Model)
}

func (c *call) stream(ctx context.Context, up *store.Upstream, resp *http.Response, body io.Reader) *attemptError {
	sr := newSSEReader(body)
	ev, err := sr.next()
	if err != nil {
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errIdle) && !errors.Is(context.Cause(ctx), errFirstByte) {
			return &attemptError{kind: dialect.KindUpstream, msg: "cancelled", reason: "cancelled"}
		}
		return &attemptError{kind: dialect.KindUpstream, msg: fmt.Sprintf("upstream %q's stream ended before its first event (%s)", up.Name, netReason(err)), fallback: true, reason: "stream"}
	}
	c.commit(http.StatusOK, http.Header{
		"Content-Type":      {"text/event-stream; charset=utf-8"},
		"Cache-Control":     {"no-cache"},
		"X-Accel-Buffering": {"no"},
	})
	rc := http.NewResponseController(c.w)
	upD := dialect.Dialect(up.Kind)
	meter := &dialect.Meter{D: upD, HideUsage: upD == dialect.OpenAI && c.d == dialect.OpenAI && !c.req.IncludeUsage}
	var tr *dialect.StreamTranslator
	if upD != c.d {
		tr = &dialect.StreamTranslator{From: upD, To: c.d, Model: c.req.Model, IncludeUsage: c.req.IncludeUsage}
	}
	var captured []byte
	clientGone := false
	for {
		if meter.Event(ev.name, ev.data) {
			raw := ev.raw
			if tr != nil {
				raw = tr.Event(ev.name, ev.data)
			} else if !bytes.HasSuffix(raw, []byte("\n\n")) {
				raw = append(raw, '\n')
			}
			if len(raw) == 0 {
				// Nothing of this event in the client's format.
			} else if _, werr := c.w.Write(raw); werr != nil {
				clientGone = true
				break
			}
			if c.content != nil && len(captured) < maxContent {
				captured = append(captured, raw...)
			}
			if !sr.buffered() {
				rc.Flush()
			}
		}
		if c.held > 0 && c.req.MaxTokens == 0 && c.req.InputBound+meter.OutBytes > c.held {
			// The answer has run past its hold: hold more while there is room, or
			// end it here.
			if err := c.p.store.Extend(ctx, c.res, c.reserve); err != nil {
				cause := errQuotaCut
				if !errors.As(err, new(*store.Refused)) {
					c.p.log.Error().Err(err).Msg("extending a reservation")
					cause = errNoQuotaCheck
				}
				c.cut(meter, cause)
				c.settleStream(meter)
				return nil
			}
			c.held += c.reserve
		}
		ev, err = sr.next()
		if err != nil {
			break
		}
	}
	switch {
	case meter.Err != nil:
		c.rec.Status, c.rec.Error = 502, clip(fmt.Sprintf("upstream %q sent an error in the stream: %s %s", up.Name, meter.Err.Type, meter.Err.Message), 500)
	case meter.Done:
		c.rec.Status = 200
	case clientGone:
		c.cut(meter, errClientGon)
	case ctx.Err() != nil:
		c.cut(meter, context.Cause(ctx))
	case c.r.Context().Err() != nil:
		c.cut(meter, errClientGon)
	default:
		c.cut(meter, fmt.Errorf("upstream %q's stream broke before its end (%s)", up.Name, netReason(err)))
	}
	if c.content != nil {
		c.content.Response = string(captured)
	}
	c.settleStream(meter)
	return nil
}

// cut ends a stream the gateway could not finish, with the dialect's error event
// when the client is still there.
func (c *call) cut(meter *dialect.Meter, cause error) {
	var k dialect.Kind
	var msg string
	switch {
	case errors.Is(context.Cause(c.r.Context()), ErrShutdown):
		k, msg = dialect.KindOverloaded, "the gateway is restarting and could not finish this answer in its grace; the answer is incomplete"
	case errors.Is(cause, errClientGon) || c.r.Context().Err() != nil:
		c.rec.Status, c.rec.Error = 499, "the client went away during the answer"
		return
	case errors.Is(cause, errRevoked):
		k, msg = dialect.KindForbidden, "this user was disabled, removed or given a new token during the answer; ask a gateway admin"
	case errors.Is(cause, errNoQuotaCheck):
		k, msg = dialect.KindOverloaded, "the gateway could not hold more of the quota during the answer (its database is unreachable, or this gateway was taken for stopped); the answer is incomplete"
	case errors.Is(cause, errQuotaCut):
		k, msg = dialect.KindQuota, "the daily token quota ran out during the answer; it renews at midnight UTC"
	case errors.Is(cause, errIdle):
		k, msg = dialect.KindTimeout, fmt.Sprintf("the upstream sent nothing for %s (upstream.idle_timeout_s); the answer is incomplete", c.snap.Settings.Seconds(settings.IdleTimeout))
	default:
		k, msg = dialect.KindUpstream, cause.Error()+"; the answer is incomplete"
	}
	c.rec.Status, c.rec.Error = k.Status(), clip(msg, 500)
	c.w.Write(dialect.ErrorEvent(c.d, k, msg))
	http.NewResponseController(c.w).Flush()
}

func (c *call) settleStream(meter *dialect.Meter) {
	u := meter.Final(dialect.EstimateBytes(c.req.InputBound))
	c.rec.InputTokens, c.rec.OutputTokens, c.rec.CachedTokens, c.rec.Estimated = u.Input, u.Output, u.Cached, !u.Final
	c.reasoning = u.Reasoning
}

// maxWhole bounds how much of a whole answer is kept to read its usage; past it
// the answer still passes on, and its usage is estimated.
const maxWhole = 16 << 20

// translated answers a whole answer of the other format: it is read whole
// (bounded), rewritten, then sent.
func (c *call) translated(ctx context.Context, up *store.Upstream, body io.Reader) *attemptError {
	upD := dialect.Dialect(up.Kind)
	b, err := io.ReadAll(io.LimitReader(body, maxWhole))
	if err != nil || len(b) == 0 {
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errIdle) && !errors.Is(context.Cause(ctx), errFirstByte) {
			return &attemptError{kind: dialect.KindUpstream, msg: "cancelled", reason: "cancelled"}
		}
		return &attemptError{kind: dialect.KindUpstream, msg: fmt.Sprintf("upstream %q's answer broke before its end (%s)", up.Name, netReason(err)), fallback: true, reason: "stream"}
	}
	out, err := dialect.TranslateWhole(upD, c.d, b, c.req.Model)
	if err != nil {
		return &attemptError{kind: dialect.KindUpstream, msg: fmt.Sprintf("upstream %q's answer: %v", up.Name, err), fallback: true, reason: "translate"}
	}
	c.commit(http.StatusOK, http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(out))}})
	if _, werr := c.w.Write(out); werr != nil {
		c.rec.Status, c.rec.Error = 499, "the client went away during the answer"
	} else {
		c.rec.Status = 200
	}
	if c.content != nil {
		c.content.Response = clip(string(out), maxContent)
	}
	u, ok := dialect.WholeUsage(upD, b)
	if !ok {
		u = dialect.Usage{Input: dialect.EstimateBytes(c.req.InputBound), Output: dialect.EstimateBytes(int64(len(b)))}
	}
	c.rec.InputTokens, c.rec.OutputTokens, c.rec.CachedTokens, c.rec.Estimated = u.Input, u.Output, u.Cached, !u.Final
	c.reasoning = u.Reasoning
	return nil
}

func (c *call) whole(ctx context.Context, up *store.Upstream, resp *http.Response, body io.Reader) *attemptError {
	if dialect.Dialect(up.Kind) != c.d {
		return c.translated(ctx, up, body)
	}
	first := make([]byte, 32<<10)
	n, err := io.ReadAtLeast(body, first, 1)
	if n == 0 {
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errIdle) && !errors.Is(context.Cause(ctx), errFirstByte) {
			return &attemptError{kind: dialect.KindUpstream, msg: "cancelled", reason: "cancelled"}
		}
		return &attemptError{kind: dialect.KindUpstream, msg: fmt.Sprintf("upstream %q's answer ended before its first byte (%s)", up.Name, netReason(err)), fallback: true, reason: "stream"}
	}
	h := http.Header{"Content-Type": {resp.Header.Get("Content-Type")}}
	if resp.ContentLength >= 0 && !resp.Uncompressed {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	c.commit(http.StatusOK, h)
	kept := append([]byte(nil), first[:n]...)
	c.w.Write(first[:n])
	var rerr error
	if err == nil {
		for {
			m, e := body.Read(first)
			if m > 0 {
				if _, werr := c.w.Write(first[:m]); werr != nil {
					rerr = werr
					break
				}
				if len(kept) < maxWhole {
					kept = append(kept, first[:m]...)
				}
			}
			if e != nil {
				if e != io.EOF {
					rerr = e
				}
				break
			}
		}
	}
	if c.content != nil {
		c.content.Response = clip(string(kept), maxContent)
	}
	u, ok := dialect.WholeUsage(c.d, kept)
	switch {
	case rerr != nil && c.r.Context().Err() != nil:
		c.rec.Status, c.rec.Error = 499, "the client went away during the answer"
	case rerr != nil:
		c.rec.Status, c.rec.Error = 502, clip(fmt.Sprintf("upstream %q's answer broke before its end (%s)", up.Name, netReason(rerr)), 500)
	default:
		c.rec.Status = 200
	}
	if !ok {
		u = dialect.Usage{Input: dialect.EstimateBytes(c.req.InputBound), Output: dialect.EstimateBytes(int64(len(kept)))}
	}
	c.rec.InputTokens, c.rec.OutputTokens, c.rec.CachedTokens, c.rec.Estimated = u.Input, u.Output, u.Cached, !u.Final
	c.reasoning = u.Reasoning
	return nil
}

// finish counts the request and hands it to the recorder, which settles its
// reservation and writes its audit row off the answer's path.
func (c *call) finish() {
	c.rec.CostMicros = quota.Cost(c.price, c.rec.InputTokens, c.rec.CachedTokens, c.rec.OutputTokens, c.reasoning)
	if c.rec.CostMicros > 0 {
		c.p.m.spend.Add(uint64(c.rec.CostMicros), c.rec.Model)
	}
	c.rec.Latency = c.p.Now().Sub(c.start)
	c.rec.LatencyMS, c.rec.TTFBMS = float64(c.rec.Latency.Microseconds())/1000, float64(c.rec.TTFB.Microseconds())/1000
	status := strconv.Itoa(c.rec.Status)
	c.p.m.requests.Inc(string(c.d), c.rec.Model, c.rec.Upstream, status)
	c.p.m.latency.Observe(c.rec.Latency.Seconds(), c.rec.Model, status)
	if c.rec.InputTokens > 0 {
		c.p.m.tokens.Add(uint64(c.rec.InputTokens), c.rec.Model, "input")
	}
	if c.rec.OutputTokens > 0 {
		c.p.m.tokens.Add(uint64(c.rec.OutputTokens), c.rec.Model, "output")
	}
	if c.rec.CachedTokens > 0 {
		c.p.m.tokens.Add(uint64(c.rec.CachedTokens), c.rec.Model, "cached")
	}
	st := store.Settlement{Reservation: c.res, Request: c.rec}
	if c.content != nil && c.rec.User != "" {
		st.Content = c.content
	}
	// A request refused because usage cannot be recorded now is counted, not
	// recorded: recording it would grow what cannot be written.
	if !c.unrecorded {
		c.p.rec.add(st)
	}
	ev := c.p.log.Info()
	if c.rec.Status >= 400 {
		ev = c.p.log.Warn().Str("error", c.rec.Error)
	}
	ev.Str("id", c.rec.ID).Str("user", c.rec.User).Str("model", c.rec.Model).Str("upstream", c.rec.Upstream).
		Int("status", c.rec.Status).Int64("in", c.rec.InputTokens).Int64("out", c.rec.OutputTokens).
		Dur("latency", c.rec.Latency).Str("trace_id", c.rec.TraceID).Msg("request")
}
