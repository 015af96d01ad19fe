package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Principals: who started a chain of calls. The host sets them where a call enters
// (the native connection, a page's port, the control socket, the command line);
// nobody who calls can choose one.
const (
	PrincipalExtension = "extension" // the person, through the side panel or the options page
	PrincipalPage      = "page"      // a page, through ferry.execute or ferry.ask
	PrincipalSocket    = "socket"    // a program on the control socket
	PrincipalMCP       = "mcp"       // `ferry mcp`, for an outside agent
	PrincipalCLI       = "cli"       // `ferry call`, `ferry run --local`
)

// SettingAllowedTools lists the tools outside agents (socket clients, `ferry mcp`)
// may use at all, directly or through the runs and sub-agents they start.
const SettingAllowedTools = "mcp.allowed_tools"

// DefaultAllowedTools is everything except the risky tools.
const DefaultAllowedTools = "*,-execute_script,-browser_navigate,-close_tab,-opfs_delete"

// Scope is who a chain of calls acts for and what it may reach. It is set where a
// call enters and travels with everything the call starts: a handler's own calls
// (through its context), the runs a chat.send or ferry.ask starts, their sub-agents
// and all their tool calls. The pipeline's permit step is the one place that reads
// it; a nil Scope is the person's own, unrestricted.
type Scope struct {
	Principal string // one of the Principal constants
	Origin    string // the page's origin, for a page's chain
	Client    string // an outside agent's own name, when it gave one

	// Outside applies mcp.allowed_tools to every call of the chain.
	Outside bool
	// PageTab, when not 0, limits the chain to the page actions of that tab declared
	// by Origin: what a page may run with ferry.execute.
	PageTab int
	// OwnTab is the tab of the page whose ferry.ask started the chain's run: the run
	// reads that tab and the tabs it opened, no other (the run's gate holds it).
	OwnTab int
	// Admit, when set, is the entry point's own rule for this caller (a page's
	// frame and its origin's rate): the pipeline runs it first, and audits a refusal.
	Admit func(ctx context.Context) *Failure

	// RunID and ConversationID name the run whose model makes the calls (for the
	// person's confirmation card).
	RunID, ConversationID string

	// Budget caps the calls of one run; nil is no cap.
	Budget *Budget
	// Gate is the run's data-flow policy; nil is none (a direct call: no context
	// accumulates that the host could track).
	Gate Gate

	allow []Allow // every rule must allow a tool (a sub-agent's type, …)
}

// Allow narrows what a scope may call: a rule with a name for the refusal.
type Allow struct {
	// Who is named in the refusal: "a researcher sub-agent".
	Who string
	// Permits reports whether a tool may be used.
	Permits func(name, modelName string, source Source) bool
}

// Narrow returns a copy of s with one more rule, its own run ids and budget, and the
// same gate: what a sub-agent runs under.
func (s *Scope) Narrow(rule Allow, runID string, budget *Budget) *Scope {
	n := &Scope{}
	if s != nil {
		*n = *s
		n.allow = append([]Allow(nil), s.allow...)
		n.Admit = nil // admitted once, where the chain came in
	}
	if rule.Permits != nil {
		n.allow = append(n.allow, rule)
	}
	n.RunID, n.Budget = runID, budget
	return n
}

// ForRun returns a copy of s for the calls of one run: the run's ids, its budget and
// its gate.
func (s *Scope) ForRun(runID, conversationID string, budget *Budget, gate Gate) *Scope {
	n := &Scope{}
	if s != nil {
		*n = *s
		n.allow = append([]Allow(nil), s.allow...)
		n.Admit = nil // admitted once, where the chain came in
	}
	n.RunID, n.ConversationID, n.Budget, n.Gate = runID, conversationID, budget, gate
	return n
}

// Judged reports whether the calls of the scope are under a run's data-flow rule:
// a tool that meets a destination while it runs (a redirect) asks it with CheckSend.
func (s *Scope) Judged() bool { return s.gate() != nil }

func (s *Scope) gate() Gate {
	if s == nil {
		return nil
	}
	return s.Gate
}

// requester is who asks for a call, for the person's card: what its entry path
// recorded (requesterOf), with what its scope adds — the run it belongs to, the page
// that started that run, the outside agent's own name.
func (s *Scope) requester(call *Call) *Requester {
	rq := requesterOf(call)
	if rq == nil || s == nil {
		return rq
	}
	if rq.RunID == "" {
		rq.RunID = s.RunID
	}
	if rq.ConversationID == "" {
		rq.ConversationID = s.ConversationID
	}
	if rq.Origin == "" {
		rq.Origin = s.Origin
	}
	rq.Client = s.Client
	return rq
}

type scopeKey struct{}

// WithScope is ctx carrying a scope: a call made under it without a scope of its
// own takes it.
func WithScope(ctx context.Context, s *Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeFromContext is the scope ctx carries: the running call's, or one set with
// WithScope.
func ScopeFromContext(ctx context.Context) *Scope {
	if c, ok := CallFromContext(ctx); ok && c.Scope != nil {
		return c.Scope
	}
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
}

// Budget is a run's cap on tool calls (agent.max_tool_calls). The permit step takes
// one for each call it lets through; when none is left the call is RATE_LIMITED.
type Budget struct {
	mu    sync.Mutex
	limit int // 0: no cap
	used  int
}

// NewBudget is a cap of limit calls; 0 or less is none.
func NewBudget(limit int) *Budget { return &Budget{limit: max(limit, 0)} }

func (b *Budget) take() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit > 0 && b.used >= b.limit {
		return false
	}
	b.used++
	return true
}

// Used is how many calls the permit step let through.
func (b *Budget) Used() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Left is how many calls remain, or -1 without a cap.
func (b *Budget) Left() int {
	if b == nil {
		return -1
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit == 0 {
		return -1
	}
	return max(b.limit-b.used, 0)
}

// Limit is the cap (0: none).
func (b *Budget) Limit() int {
	if b == nil {
		return 0
	}
	return b.limit
}

// OutsideRule parses a mcp.allowed_tools value: "*" every tool, names
// (model-visible or registered), "-name" to exclude one.
func OutsideRule(value string) func(names ...string) bool {
	all := false
	allow, deny := map[string]bool{}, map[string]bool{}
	for _, f := range strings.Split(value, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case f == "*":
			all = true
		case strings.HasPrefix(f, "-"):
			deny[strings.TrimSpace(f[1:])] = true
		default:
			allow[f] = true
		}
	}
	return func(names ...string) bool {
		ok := all
		for _, n := range names {
			if deny[n] {
				return false
			}
			if allow[n] {
				ok = true
			}
		}
		return ok
	}
}

// scopeFailure is the permit step's check of a call's scope (the budget aside):
// nil when the scope lets the call through.
func scopeFailure(e *entry, s *Scope, p *Policy) *Failure {
	if s == nil {
		return nil
	}
	if s.PageTab != 0 && (e.tool.Source != SourcePage || e.tool.TabID != s.PageTab || (s.Origin != "" && e.tool.Origin != s.Origin)) {
		// NOT_FOUND, as for any name the page does not declare: a page learns nothing
		// of the host's own tools.
		return Failf(CodeNotFound, "no action named %q is declared in this tab; a page can run only page actions (ferry.tools() lists them)", e.modelName)
	}
	if s.Outside && !p.OutsideAllowed(e.modelName, e.name) {
		how := "directly or through a run"
		if s.RunID != "" {
			how = "through a run it started either"
		}
		return Failf(CodePermissionDenied, "%s is not among the tools outside agents may use (setting %s), %s; `ferry config set %s ...` changes it", e.modelName, SettingAllowedTools, how, SettingAllowedTools)
	}
	for _, a := range s.allow {
		if !a.Permits(e.name, e.modelName, e.tool.Source) {
			return Failf(CodeNotFound, "%s is not among the tools of %s; use the tools you were offered", e.modelName, a.Who)
		}
	}
	return nil
}

// Offered keeps the listings a scope may call: what the model of a run, an outside
// agent or a page is shown. The permit step refuses the rest whatever is shown.
func (r *Registry) Offered(ctx context.Context, s *Scope, ls []Listing) []Listing {
	if s == nil {
		return ls
	}
	p := r.policy.get(ctx)
	out := ls[:0:0]
	for _, l := range ls {
		e := &entry{tool: Tool{Source: l.Source, TabID: l.TabID, Origin: l.Origin}, name: l.Name, modelName: l.ModelName}
		if scopeFailure(e, s, p) == nil {
			out = append(out, l)
		}
	}
	return out
}

// OfferedUnavailable keeps the unavailable tools a scope may call.
func (r *Registry) OfferedUnavailable(ctx context.Context, s *Scope, tab int, us []Unavailable) []Unavailable {
	if s == nil {
		return us
	}
	byModel := map[string]Listing{}
	for _, l := range r.All(tab) {
		byModel[l.ModelName] = l
	}
	out := us[:0:0]
	for _, u := range us {
		l, ok := byModel[u.Name]
		if !ok {
			l = Listing{Name: u.Name, ModelName: u.Name, Source: SourceBuiltin}
		}
		if len(r.Offered(ctx, s, []Listing{l})) == 1 {
			out = append(out, u)
		}
	}
	return out
}

// Gate is a run's data-flow policy (host/flow implements it). The confirm step asks
// it whether a call needs the person's approval, and every call made under it that
// ran is reported, so that it knows what entered the run's context. It sees what
// the tool declared (Effect, Provenance), never the tool's name alone.
type Gate interface {
	// Check judges a call about to be confirmed and run. An error is the call's
	// result (a *Failure chooses the code) and nothing runs.
	Check(ctx context.Context, call *Call, tool Listing, eff Effect) (FlowVerdict, error)
	// Observe hears what a call that ran brought into the context. It may fill
	// res.Sources.
	Observe(ctx context.Context, call *Call, tool Listing, p Provenance, res *Result)
	// Taint is what the context holds now, as a value written from it keeps it.
	Taint() Taint
}

// FlowVerdict is what a Gate decides for one call.
type FlowVerdict struct {
	Confirm bool   // a person must approve this exact call
	Reason  string // why, for the card's message
	Flow    *Flow  // what would go where, when data would flow
}

// effects is what the tool says the call would do (DefaultEffects when it says
// nothing). A panic is an effect nobody can name, which asks rather than failing open.
func (r *Registry) effects(ctx context.Context, e *entry, call *Call) (eff Effect, f *Failure) {
	if e.tool.Effects == nil {
		return DefaultEffects(&e.tool, call.Arguments), nil
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error().Str("tool", e.name).Interface("panic", p).Msg("a tool's Effects panicked")
			eff, f = Effect{Changes: []string{"what " + e.name + " changes"}, Sends: []Send{{To: DestUnknown}}}, nil
		}
	}()
	eff, err := e.tool.Effects(ctx, call)
	if err != nil {
		if f, ok := AsFailure(err); ok {
			return Effect{}, f
		}
		return Effect{}, Failf(CodeHandlerError, "%s: %v", e.name, err)
	}
	return eff, nil
}

// checkGate runs Gate.Check; a panic asks the person rather than failing open.
func (r *Registry) checkGate(ctx context.Context, g Gate, e *entry, call *Call, eff Effect) (v FlowVerdict, f *Failure) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error().Str("tool", e.name).Interface("panic", p).Msg("the data-flow check panicked")
			v, f = FlowVerdict{Confirm: true, Reason: fmt.Sprintf("Ferry could not check where this call's data goes (%v)", p)}, nil
		}
	}()
	v, err := g.Check(ctx, call, e.listing(), eff)
	if err != nil {
		if !errors.As(err, &f) {
			f = Failf(CodeHandlerError, "the data-flow check of %s failed: %v", e.name, err)
		}
	}
	return v, f
}

// observe tells the gate what a call that ran brought (the tool's Provenance, or
// DefaultProvenance).
func (r *Registry) observe(ctx context.Context, st *callState, res *Result) {
	g := st.call.Scope.gate()
	if g == nil || st.e == nil || !st.ran {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error().Str("tool", st.call.Tool).Interface("panic", p).Msg("observing a call's result panicked")
		}
	}()
	var p Provenance
	if st.e.tool.Provenance != nil {
		p = st.e.tool.Provenance(st.call, st.effect, res)
	} else {
		p = DefaultProvenance(&st.e.tool, res)
	}
	g.Observe(ctx, st.call, st.e.listing(), p, res)
}
