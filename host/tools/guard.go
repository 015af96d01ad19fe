package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"time"
)

// MaxDepth is the deepest call chain allowed: a call at depth 4 (the model calls a
// tool whose effect triggers a call, and so on, four times) is LOOP_DETECTED.
const MaxDepth = 3

// scopeMemory bounds the calls and results one scope remembers: a loop repeats
// quickly, so the most recent few hundred are enough, and memory stays bounded
// whatever the call rate.
const scopeMemory = 256

// guard is step 5 of the pipeline: the loop guard and the rate limits, counted per
// scope: the run a call belongs to, else the outside client session it came
// through (each control-socket connection, so each `ferry mcp`), else its
// conversation, else its caller and origin.
//
// A loop is the same call giving the same result again and again with nothing new
// in between, not the same call: reading a tab after it navigated, polling until
// an answer changes, re-reading after a click all bring a result the scope had not
// seen, and every such new result starts the counts afresh. A call that gave the
// same result repeat_limit times in a row with nothing new between them is refused
// before it runs the next time, unless a write (a click, a navigation, typing)
// has run in the scope since: then it runs once more, to see what the write did.
// A write's own repeats count like any call's, so a click and a read taking turns
// on a page that does not change are stopped at the click.
type guard struct {
	mu     sync.Mutex
	seed   maphash.Seed
	active map[activeKey]int // calls now admitted and not finished
	scopes map[string]*scope
	global bucket
	swept  time.Time
}

func newGuard() *guard {
	return &guard{
		seed:   maphash.MakeSeed(),
		active: map[activeKey]int{},
		scopes: map[string]*scope{},
	}
}

type activeKey struct {
	trace, tool string
	depth       int
}

// scope is what the guard keeps of one run, session, conversation or caller.
type scope struct {
	calls  map[uint64]*repeat // call fingerprint → its latest result
	pairs  map[uint64]time.Time
	epoch  uint64 // bumped by every result the scope had not seen
	writes uint64 // bumped by every write that ran
	rate   bucket
	last   time.Time
}

// repeat is a call's latest result and how often in a row it came back.
type repeat struct {
	result uint64
	count  int
	epoch  uint64 // the scope's epoch when count last grew or restarted
	writes uint64 // the scope's writes when the call last ran
	at     time.Time
}

// bucket is a token bucket holding up to perMinute tokens and refilling perMinute a
// minute: a burst of the full minute's allowance is fine, a sustained rate above
// it is not.
type bucket struct {
	tokens float64
	at     time.Time
	limit  int
}

func (b *bucket) take(now time.Time, perMinute int) (bool, time.Duration) {
	if perMinute <= 0 {
		return true, 0
	}
	if b.at.IsZero() || b.limit != perMinute {
		b.tokens, b.at, b.limit = float64(perMinute), now, perMinute
	}
	rate := float64(perMinute) / 60 // tokens a second
	b.tokens = math.Min(float64(perMinute), b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

type sessionKey struct{}

// WithSession marks ctx as coming through one outside client's session (a
// control-socket connection: one `ferry mcp`, one script). The loop guard and the
// rate limits count that session's calls apart from every other's.
func WithSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionKey{}, id)
}

func sessionOf(ctx context.Context) string {
	s, _ := ctx.Value(sessionKey{}).(string)
	return s
}

// countKey names what a call's repeats and rate are counted in, and how a message
// calls it.
func countKey(ctx context.Context, call *Call) (key, what string) {
	switch s := sessionOf(ctx); {
	case call.RunID != "":
		return "run:" + call.RunID, "this run"
	case s != "":
		return "session:" + s, "this client session"
	case call.ConversationID != "":
		return "conversation:" + call.ConversationID, "this conversation"
	default:
		return "caller:" + call.Caller + "|" + call.Origin, "this caller"
	}
}

// Owner names whom a call acts for, for what the call leaves behind (the tabs it
// opens): an outside client's session, else the conversation, else the run, else
// the caller and its origin.
func Owner(ctx context.Context, call *Call) string {
	switch s := sessionOf(ctx); {
	case s != "":
		return "session:" + s
	case call.ConversationID != "":
		return "conversation:" + call.ConversationID
	case call.RunID != "":
		return "run:" + call.RunID
	default:
		return "caller:" + call.Caller + "|" + call.Origin
	}
}

// admitted is a call the guard let through; done records its result.
type admitted struct {
	g     *guard
	key   activeKey
	scope string
	call  uint64
	write bool
}

// admit runs the loop and rate checks for a call about to be confirmed and run
// (write: the tool is of kind write). On success the call is marked running in its
// trace until done is called with its result.
func (g *guard) admit(ctx context.Context, call *Call, canonical []byte, write bool, p *Policy, now time.Time) (*admitted, *Failure) {
	if call.Depth > MaxDepth {
		return nil, Failf(CodeLoopDetected, "call chain is %d deep (trace %s); the most allowed is %d: a tool's effect keeps triggering more calls", call.Depth, call.TraceID, MaxDepth)
	}
	fp := g.fingerprint(call.Tool, canonical)
	key, what := countKey(ctx, call)

	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweep(now, p)
	// Re-entry: the same tool already running in this trace at a shallower depth
	// means its own effect called it again. Siblings at the same depth (parallel
	// calls of one turn) are not a loop.
	for d := 0; d < call.Depth; d++ {
		if g.active[activeKey{call.TraceID, call.Tool, d}] > 0 {
			return nil, Failf(CodeLoopDetected, "%s is already running in this call chain (trace %s, depth %d) and was called again at depth %d: a cycle", call.Tool, call.TraceID, d, call.Depth)
		}
	}
	sc := g.scope(key, now)
	if rp := sc.calls[fp]; p.RepeatLimit > 0 && rp != nil && rp.epoch == sc.epoch && rp.writes == sc.writes && rp.count >= p.RepeatLimit && now.Sub(rp.at) < p.RepeatWindow {
		return nil, Failf(CodeLoopDetected,
			"%s gave the same result %d times in a row in %s with nothing new in between: a loop; change the arguments or the approach instead of repeating "+
				"(the limit is the setting %s, `ferry config set %s N` raises it, 0 turns it off)",
			call.Tool, rp.count, what, SettingRepeatLimit, SettingRepeatLimit)
	}
	if ok, wait := g.global.take(now, p.RateGlobal); !ok {
		return nil, Failf(CodeRateLimited,
			"the host's rate limit of %d tool calls a minute, all callers together, is reached (setting %s); retry in %s, or raise it with `ferry config set %s N` (0: no limit)",
			p.RateGlobal, SettingRateGlobal, wait.Round(time.Millisecond), SettingRateGlobal)
	}
	if ok, wait := sc.rate.take(now, p.RateConversation); !ok {
		g.global.tokens++ // the call did not happen: give the global token back
		return nil, Failf(CodeRateLimited,
			"the rate limit of %d tool calls a minute for %s is reached (setting %s); retry in %s, or raise it with `ferry config set %s N` (0: no limit)",
			p.RateConversation, what, SettingRateConversation, wait.Round(time.Millisecond), SettingRateConversation)
	}
	ak := activeKey{call.TraceID, call.Tool, call.Depth}
	g.active[ak]++
	return &admitted{g: g, key: ak, scope: key, call: fp, write: write}, nil
}

// done ends the call's run in its trace and counts its result.
func (a *admitted) done(res Result, now time.Time) {
	g := a.g
	result := g.resultHash(res)

	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active[a.key]--; g.active[a.key] <= 0 {
		delete(g.active, a.key)
	}
	sc := g.scopes[a.scope]
	if sc == nil {
		return // swept while the call ran
	}
	sc.count(g.seed, a.call, result, a.write && res.Success, now)
}

// resultHash is what a result counts as: its code, reason and payload.
func (g *guard) resultHash(res Result) uint64 {
	var h maphash.Hash
	h.SetSeed(g.seed)
	h.WriteString(string(res.Code))
	h.WriteByte(0)
	h.WriteString(res.Reason)
	h.WriteByte(0)
	// A result that cannot be encoded hashes as what was written so far: the same
	// failure to encode, the same result.
	json.NewEncoder(&h).Encode([3]any{res.Result, res.Expect, res.Changed})
	return h.Sum64()
}

// fingerprint is what a call counts as: its tool and its arguments.
func (g *guard) fingerprint(tool string, canonical []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(g.seed)
	h.WriteString(tool)
	h.WriteByte(0)
	h.Write(canonical)
	return h.Sum64()
}

// count records that the call fp gave result in the scope; wrote says it was a
// write that ran. The caller holds g.mu.
func (sc *scope) count(seed maphash.Seed, fp, result uint64, wrote bool, now time.Time) {
	pair := maphash.Comparable(seed, [2]uint64{fp, result})
	if _, seen := sc.pairs[pair]; !seen {
		sc.epoch++ // something new: every count starts again
	}
	if wrote {
		sc.writes++
	}
	sc.pairs[pair] = now
	rp := sc.calls[fp]
	switch {
	case rp == nil:
		rp = &repeat{}
		sc.calls[fp] = rp
		fallthrough
	case rp.result != result || rp.epoch != sc.epoch:
		*rp = repeat{result: result, count: 1, epoch: sc.epoch, writes: sc.writes, at: now}
	default:
		rp.count++
		rp.writes, rp.at = sc.writes, now
	}
	if len(sc.calls) > scopeMemory {
		forgetOldest(sc.calls, func(r *repeat) time.Time { return r.at })
	}
	if len(sc.pairs) > scopeMemory {
		forgetOldest(sc.pairs, func(t time.Time) time.Time { return t })
	}
}

// refused counts a call the pipeline refused before the guard's step (no such
// tool, outside the caller's scope, invalid arguments, unavailable, not
// permitted), as done counts a call that ran: a model asking again and again for
// what the page keeps refusing is as much a loop as one re-reading an unchanged
// page, and without this it would never be stopped. Once the same refusal came
// back repeat_limit times in a row, the call is LOOP_DETECTED instead, which
// pauses the run like any loop.
func (g *guard) refused(ctx context.Context, call *Call, canonical []byte, res Result, p *Policy, now time.Time) Result {
	fp := g.fingerprint(call.Tool, canonical)
	result := g.resultHash(res)
	key, what := countKey(ctx, call)

	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweep(now, p)
	sc := g.scope(key, now)
	if rp := sc.calls[fp]; p.RepeatLimit > 0 && rp != nil && rp.result == result && rp.epoch == sc.epoch && rp.writes == sc.writes && rp.count >= p.RepeatLimit && now.Sub(rp.at) < p.RepeatWindow {
		return Result{Code: CodeLoopDetected, Reason: fmt.Sprintf(
			"%s was refused %d times in a row in %s with the same reason (%s: %s): a loop; do not ask for it again, change the arguments or the approach "+
				"(the limit is the setting %s, `ferry config set %s N` raises it, 0 turns it off)",
			call.Tool, rp.count, what, res.Code, res.Reason, SettingRepeatLimit, SettingRepeatLimit)}
	}
	sc.count(g.seed, fp, result, false, now)
	return res
}

// scope returns the scope named key, made when new. The caller holds g.mu.
func (g *guard) scope(key string, now time.Time) *scope {
	sc := g.scopes[key]
	if sc == nil {
		sc = &scope{calls: map[uint64]*repeat{}, pairs: map[uint64]time.Time{}}
		g.scopes[key] = sc
	}
	sc.last = now
	return sc
}

// forgetOldest drops the oldest quarter of m.
func forgetOldest[V any](m map[uint64]V, at func(V) time.Time) {
	var cut []time.Time
	for _, v := range m {
		cut = append(cut, at(v))
	}
	slices.SortFunc(cut, time.Time.Compare)
	limit := cut[len(cut)/4]
	for k, v := range m {
		if at(v).Before(limit) {
			delete(m, k)
		}
	}
}

// ForgetRepeats clears what the loop guard counted for a run, when the person has
// seen it stopped and chosen to let it go on.
func (r *Registry) ForgetRepeats(runID string) {
	g := r.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	if sc := g.scopes["run:"+runID]; sc != nil {
		sc.calls = map[uint64]*repeat{}
		sc.epoch++
	}
}

// sweep forgets idle scopes once a minute so the map stays small.
func (g *guard) sweep(now time.Time, p *Policy) {
	if now.Sub(g.swept) < time.Minute {
		return
	}
	g.swept = now
	idle := max(p.RepeatWindow, 2*time.Minute)
	for k, sc := range g.scopes {
		if now.Sub(sc.last) > idle {
			delete(g.scopes, k)
		}
	}
}
