package tools

import (
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// MaxDepth is the deepest call chain allowed: a call at depth 4 (the model calls a
// tool whose effect triggers a call, and so on, four times) is LOOP_DETECTED.
const MaxDepth = 3

// repeatMemory is how many recent calls per conversation the identical-call check
// remembers. A loop repeats quickly, so the last 64 calls within the window are
// enough, and memory stays bounded whatever the call rate.
const repeatMemory = 64

// guard is step 5 of the pipeline: the loop guard and the rate limits.
type guard struct {
	mu     sync.Mutex
	seed   maphash.Seed
	active map[activeKey]int // calls now admitted and not finished
	recent map[string]*ring  // conversation scope → recent call fingerprints
	convs  map[string]*bucket
	global bucket
	swept  time.Time
}

func newGuard() *guard {
	return &guard{
		seed:   maphash.MakeSeed(),
		active: map[activeKey]int{},
		recent: map[string]*ring{},
		convs:  map[string]*bucket{},
	}
}

type activeKey struct {
	trace, tool string
	depth       int
}

type stamp struct {
	fp uint64
	at time.Time
}

type ring struct {
	items [repeatMemory]stamp
	next  int
	last  time.Time
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

// admit runs the loop and rate checks for a call about to be confirmed and run. On
// success the call is marked running in its trace until release is called.
func (g *guard) admit(call *Call, canonical []byte, p *Policy, now time.Time) (release func(), f *Failure) {
	if call.Depth > MaxDepth {
		return nil, Failf(CodeLoopDetected, "call chain is %d deep (trace %s); the most allowed is %d: a tool's effect keeps triggering more calls", call.Depth, call.TraceID, MaxDepth)
	}
	var h maphash.Hash
	h.SetSeed(g.seed)
	h.WriteString(call.Tool)
	h.WriteByte(0)
	h.Write(canonical)
	fp := h.Sum64()
	scope := call.ConversationID
	if scope == "" {
		scope = "caller:" + call.Caller + "|" + call.Origin
	}

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
	r := g.recent[scope]
	if p.RepeatLimit > 0 {
		if r == nil {
			r = &ring{}
			g.recent[scope] = r
		}
		n := 0
		for _, s := range r.items {
			if s.fp == fp && !s.at.IsZero() && now.Sub(s.at) < p.RepeatWindow {
				n++
			}
		}
		if n >= p.RepeatLimit {
			return nil, Failf(CodeLoopDetected, "%s was called with the same arguments %d times within %s; change the arguments or the approach instead of repeating", call.Tool, n, p.RepeatWindow)
		}
	}
	if ok, wait := g.global.take(now, p.RateGlobal); !ok {
		return nil, Failf(CodeRateLimited, "the host's rate limit of %d tool calls a minute is reached (setting %s); retry in %s", p.RateGlobal, SettingRateGlobal, wait.Round(time.Millisecond))
	}
	if call.ConversationID != "" || p.RateConversation > 0 {
		b := g.convs[scope]
		if b == nil {
			b = &bucket{}
			g.convs[scope] = b
		}
		if ok, wait := b.take(now, p.RateConversation); !ok {
			g.global.tokens++ // the call did not happen: give the global token back
			return nil, Failf(CodeRateLimited, "this conversation's rate limit of %d tool calls a minute is reached (setting %s); retry in %s", p.RateConversation, SettingRateConversation, wait.Round(time.Millisecond))
		}
	}
	if r != nil {
		r.items[r.next] = stamp{fp, now}
		r.next = (r.next + 1) % repeatMemory
		r.last = now
	}
	key := activeKey{call.TraceID, call.Tool, call.Depth}
	g.active[key]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.active[key]--; g.active[key] <= 0 {
			delete(g.active, key)
		}
	}, nil
}

// sweep forgets idle conversations once a minute so the maps stay small.
func (g *guard) sweep(now time.Time, p *Policy) {
	if now.Sub(g.swept) < time.Minute {
		return
	}
	g.swept = now
	idle := max(p.RepeatWindow, 2*time.Minute)
	for k, r := range g.recent {
		if now.Sub(r.last) > idle {
			delete(g.recent, k)
		}
	}
	for k, b := range g.convs {
		if now.Sub(b.at) > idle {
			delete(g.convs, k)
		}
	}
}
