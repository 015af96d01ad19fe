package tools

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/storage"
)

// ids are a random per-process prefix and a counter: unique across the host
// processes sharing a database, and cheaper than a random read per call.
var (
	idPrefix  = func() string { b := make([]byte, 6); rand.Read(b); return hex.EncodeToString(b) }()
	idCounter atomic.Uint64
)

// NewID returns a fresh call or trace id.
func NewID() string { return idPrefix + "-" + strconv.FormatUint(idCounter.Add(1), 36) }

type callKey struct{}

// CallFromContext is the call whose handler is running, if any. A handler that calls
// another tool passes its ctx, and the pipeline chains the new call to it.
func CallFromContext(ctx context.Context) (*Call, bool) {
	c, ok := ctx.Value(callKey{}).(*Call)
	return c, ok
}

// Call runs one call through the pipeline and returns its result; it never panics
// and never returns a Go error: every outcome is a Result with its code. Steps, in
// order: lookup, the caller's scope, validate, availability, permissions (the run's
// cap last), loop and rate guard, confirmation (the data-flow gate among its
// reasons), run, expectation; the gate hears the outcome, and the audit row is
// queued last, for every outcome.
func (r *Registry) Call(ctx context.Context, call *Call) Result {
	start := r.now()
	if call.ID == "" {
		call.ID = NewID()
	}
	if call.TraceID == "" {
		if parent, ok := CallFromContext(ctx); ok {
			call.TraceID, call.ParentTrace, call.Depth = parent.TraceID, parent.ParentTrace, parent.Depth+1
			if call.ConversationID == "" {
				call.ConversationID, call.RunID = parent.ConversationID, parent.RunID
			}
		} else {
			call.TraceID = NewID()
		}
	}
	if call.Scope == nil {
		// What a chain may reach travels with it: a handler's own calls, a run's.
		call.Scope = ScopeFromContext(ctx)
	}
	st := &callState{call: call, start: start}
	res := r.pipeline(ctx, st)
	res.Confirmation = st.confirmation
	if !st.admitted && !res.Success && res.Code != CodeLoopDetected {
		// Refused before the loop guard's step: counted all the same (guard.refused).
		p := st.policy
		if p == nil {
			p = r.policy.get(ctx)
		}
		res = r.guard.refused(ctx, call, refusedArguments(st), res, p, r.now())
	}
	r.observe(ctx, st, &res)
	r.record(st, res)
	if st.e != nil && st.e.tool.Finished != nil {
		r.finished(st, res)
	}
	return res
}

// callState carries what the audit row needs from the steps that ran.
type callState struct {
	call      *Call
	start     time.Time
	e         *entry
	args      any    // decoded arguments, once they parsed
	canonical []byte // their canonical JSON, once they validated
	dangerous bool
	ran       bool    // Run was started
	admitted  bool    // the loop guard let the call through (step 5)
	policy    *Policy // the policy the steps read, once looked up
	// confirmation is the card a person was asked, once answered (or not).
	confirmation *Confirmation
	// effect is what the tool said the call would do, for its gate.
	effect Effect
	// lasting and grant: the lasting answer the card offers, and what it does
	// (Assessment.Lasting, Assessment.Grant).
	lasting *Lasting
	grant   func(ctx context.Context) error
	refuse  func(ctx context.Context) error
}

// finished tells the tool how its call ended; a panic there is logged, never the
// caller's problem.
func (r *Registry) finished(st *callState, res Result) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error().Str("tool", st.e.name).Interface("panic", p).Msg("a tool's Finished hook panicked")
		}
	}()
	st.e.tool.Finished(st.call, res, st.ran)
}

func fail(code Code, format string, a ...any) Result {
	return Result{Code: code, Reason: fmt.Sprintf(format, a...)}
}

func (r *Registry) pipeline(ctx context.Context, st *callState) (res Result) {
	call := st.call
	// 0. the entry point's admission of its caller (a page's frame and rate)
	if call.Scope != nil && call.Scope.Admit != nil {
		if f := call.Scope.Admit(ctx); f != nil {
			return Result{Code: f.Code, Reason: f.Reason}
		}
	}
	// 1. lookup
	e := r.lookup(call.Tool, call.TabID)
	if e == nil {
		hint := "`ferry tools` and tools.list show the registered tools"
		if call.TabID != 0 {
			hint = fmt.Sprintf("no builtin, capability or page action of tab %d has that name; %s", call.TabID, hint)
		}
		return fail(CodeNotFound, "no tool named %q: %s", call.Tool, hint)
	}
	if len(e.tool.Callers) > 0 && !slices.Contains(e.tool.Callers, call.Caller) {
		// Another caller's entry point: as if there were no such tool.
		return fail(CodeNotFound, "no tool named %q: `ferry tools` and tools.list show the registered tools", call.Tool)
	}
	st.e = e
	st.dangerous = e.tool.Dangerous
	call.Tool = e.name
	p := r.policy.get(ctx)
	st.policy = p
	// 1b. the caller's scope: a tool outside it is refused before its arguments
	// are even looked at (a page learns nothing of the host's tools, an outside
	// agent nothing of a tool it may not use).
	if f := scopeFailure(e, call.Scope, p); f != nil {
		return Result{Code: f.Code, Reason: f.Reason}
	}

	// 2. validate
	args, err := decodeArguments(call.Arguments)
	if err != nil {
		return fail(CodeInvalidParams, "invalid params: %v", err)
	}
	st.args = args
	if vs := e.schema.Validate(args); len(vs) > 0 {
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = v.String()
		}
		return fail(CodeInvalidParams, "invalid params: %s", strings.Join(parts, "; "))
	}
	canonical, _ := marshalNoEscape(args)
	call.Arguments, st.canonical = canonical, canonical
	if e.tool.Check != nil {
		if err := e.tool.Check(call); err != nil {
			return fail(CodeInvalidParams, "invalid params: %s", strings.TrimPrefix(err.Error(), "invalid params: "))
		}
	}

	// 3. availability
	if ok, reason := r.available(ctx, e, call); !ok {
		return Result{Code: CodeActionUnavailable, Reason: reason}
	}

	// 4. permissions
	if f := permit(e, call, p); f != nil {
		return Result{Code: f.Code, Reason: f.Reason}
	}

	// 5. loop and rate guard; the result is counted once known
	adm, f := r.guard.admit(ctx, call, canonical, e.tool.Kind == KindWrite, p, r.now())
	if f != nil {
		return Result{Code: f.Code, Reason: f.Reason}
	}
	st.admitted = true
	defer func() { adm.done(res, r.now()) }()

	// 6. confirmation: the tool's and the person's policy, the tool's own
	// assessment, and the run's data-flow gate.
	policyAsks := policyConfirms(e, p)
	ask, msg := e.tool.Confirm || policyAsks, e.tool.ConfirmMessage
	if e.tool.Assess != nil {
		a, f := r.assess(ctx, e, call)
		if f != nil {
			return Result{Code: f.Code, Reason: f.Reason}
		}
		if a.Confirm && a.Lasting != nil && a.Grant != nil && !ask && !(a.Write && p.ConfirmWrites) {
			st.lasting, st.grant, st.refuse = a.Lasting, a.Grant, a.Refuse
		}
		ask = ask || a.Confirm || (a.Write && p.ConfirmWrites)
		policyAsks = policyAsks || a.Confirm || (a.Write && p.ConfirmWrites)
		st.dangerous = st.dangerous || a.Dangerous
		if a.Message != "" {
			msg = a.Message
		}
		call.Document = a.Document
	}
	var flow *Flow
	if g := call.Scope.gate(); g != nil {
		eff, f := r.effects(ctx, e, call)
		if f != nil {
			return Result{Code: f.Code, Reason: f.Reason}
		}
		st.effect = eff
		v, f := r.checkGate(ctx, g, e, call, eff)
		if f != nil {
			return Result{Code: f.Code, Reason: f.Reason}
		}
		if v.Confirm {
			ask, flow = true, v.Flow
			st.lasting, st.grant, st.refuse = nil, nil, nil
			if v.Reason != "" {
				msg = v.Reason
			}
		}
	}
	if ask {
		if call.Document == nil && e.tool.Locate != nil {
			doc, f := r.locate(ctx, e, call)
			if f != nil {
				return Result{Code: f.Code, Reason: f.Reason}
			}
			call.Document = doc
		}
		if res, ok := r.confirm(ctx, st, p, msg, policyAsks, flow); !ok {
			return res
		}
		call.Confirmed = true
	}

	if st.dangerous {
		r.log.Warn().Str("tool", e.name).Str("call_id", call.ID).Str("caller", call.Caller).
			Str("origin", call.Origin).RawJSON("arguments", logArguments(st)).Msg("running a dangerous tool")
	}

	// 7. run, 8. expectation
	timeout := e.tool.Timeout
	if timeout <= 0 {
		timeout = p.RunTimeout
	}
	call.Taint = taintOf(call)
	st.ran = true
	return r.run(ctx, e, call, timeout)
}

// refusedArguments are the arguments a refused call is counted under: their
// canonical form when they got that far, else as sent, so that the same request
// refused again counts as the same call.
func refusedArguments(st *callState) []byte {
	if st.canonical != nil {
		return st.canonical
	}
	if args, err := decodeArguments(st.call.Arguments); err == nil {
		if b, err := marshalNoEscape(args); err == nil {
			return b
		}
	}
	return bytes.TrimSpace(st.call.Arguments)
}

// decodeArguments parses the arguments, keeping numbers exact.
func decodeArguments(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("arguments have data after the JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, not %s", jsonKind(v))
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// permit is step 4: the policy's switches, the permission flags, and last the run's
// cap on calls. Reads and events need the global flag; writes need the global flag
// and the tool's opt-in. With step 1b (the call's scope: an outside agent's allowed
// tools, a page's own actions, a sub-agent's type) and the data-flow gate of step 6,
// it is where caller policy lives.
func permit(e *entry, call *Call, p *Policy) *Failure {
	if p.Disabled[e.name] || p.Disabled[e.modelName] {
		return Failf(CodePermissionDenied, "%s is disabled by the setting %s", e.name, SettingDisabled)
	}
	scopeOrigin := ""
	if call.Scope != nil {
		scopeOrigin = call.Scope.Origin
	}
	for _, o := range []string{e.tool.Origin, call.Origin, scopeOrigin} {
		if o != "" && p.DeniedOrigins[origins.Normalize([]string{o})[0]] {
			return Failf(CodePermissionDenied, "calls involving %s are refused by the setting %s", o, SettingDeniedOrigins)
		}
	}
	flags := map[string]bool{PermReadStore: p.ReadStore, PermWriteStore: p.WriteStore, PermEmitEvents: p.EmitEvents}
	keys := map[string]string{PermReadStore: SettingReadStore, PermWriteStore: SettingWriteStore, PermEmitEvents: SettingEmitEvents}
	own := e.tool.Flags != nil
	if own {
		flags = map[string]bool{}
		for k, v := range e.tool.Flags() {
			flags[k] = v
		}
	}
	call.Granted = call.Granted[:0]
	for _, perm := range e.tool.Permissions {
		if !flags[perm] {
			if own {
				return Failf(CodePermissionDenied, "%s needs the %s permission, which its page has not turned on (ferry.init({permissions: {%s: true}})) or the host's policy for pages withholds", e.name, perm, perm)
			}
			return Failf(CodePermissionDenied, "%s needs the %s permission, which is off globally; `ferry config set %s true` allows it", e.name, perm, keys[perm])
		}
		call.Granted = append(call.Granted, perm)
	}
	// Reads and events are granted by the global flag alone (the page's sandbox API);
	// writeStore only through the opt-in above.
	for _, perm := range []string{PermReadStore, PermEmitEvents} {
		if flags[perm] && !call.Has(perm) {
			call.Granted = append(call.Granted, perm)
		}
	}
	if call.Scope != nil && !call.Scope.Budget.take() {
		return Failf(CodeRateLimited, "this run has made the most tool calls it may (%d, setting %s): answer now with what you have", call.Scope.Budget.Limit(), SettingMaxToolCalls)
	}
	return nil
}

// SettingMaxToolCalls caps the tool calls of one run (the agent registers it).
const SettingMaxToolCalls = "agent.max_tool_calls"

// policyConfirms says whether the person's own policy (tools.confirm,
// tools.confirm_writes) asks for a person before this tool runs, whatever the tool
// itself declares.
func policyConfirms(e *entry, p *Policy) bool {
	return p.Confirm[e.name] || p.Confirm[e.modelName] || (p.ConfirmWrites && e.tool.Kind == KindWrite)
}

// confirm is step 6. Any outcome but a yes is a denial.
// byPolicy says the person's policy (or the tool's own assessment) asks: then only a
// person's answer counts, never the page's. A flow (the data-flow gate asks) is the
// person's alone too: the page is not even offered it.
func (r *Registry) confirm(ctx context.Context, st *callState, p *Policy, msg string, byPolicy bool, flow *Flow) (Result, bool) {
	e, call := st.e, st.call
	ui := r.UI()
	if ui == nil {
		return fail(CodeUserRejected, "%s needs a person's confirmation, but no UI is connected to ask (open Ferry's side panel in the browser; `ferry call` cannot confirm)", e.name), false
	}
	// A page action's own page may answer the confirmation its action declared
	// (host/pageactions), so a missing side panel does not settle it here; the
	// person's policy and a data flow are answered by a person only.
	if noPanel(ui) && (e.tool.Source != SourcePage || byPolicy || flow != nil) {
		return fail(CodeUserRejected, "%s needs a person's confirmation, but %s; treated as a denial", e.name, NoPanelReason), false
	}
	if msg == "" {
		// The UI titles the card with the tool's name; the message says what it does.
		msg = e.tool.Description
	}
	origin := cmp.Or(call.Origin, e.tool.Origin)
	if call.Document != nil && call.Document.Origin != "" {
		// The card names the page the call acts on: the approval holds for it.
		origin = call.Document.Origin
	}
	cctx, cancel := context.WithTimeout(ctx, p.ConfirmTimeout)
	defer cancel()
	asked := r.now()
	ans, err := ConfirmWhole(cctx, ui, ConfirmRequest{
		CallID: call.ID, Tool: e.name, Arguments: cardArguments(st), Origin: origin,
		Message: msg, Dangerous: st.dangerous, TimeoutMS: p.ConfirmTimeout.Milliseconds(),
		Source: e.tool.Source, TabID: e.tool.TabID, FrameID: e.tool.FrameID, ByPolicy: byPolicy,
		Requester: call.Scope.requester(call), Page: call.Document, Flow: flow, Lasting: st.lasting,
	})
	ok := ans.Approved
	rec := &Confirmation{Message: recordedMessage(st, msg), Origin: origin, TimeoutMS: p.ConfirmTimeout.Milliseconds(), WaitedMS: r.now().Sub(asked).Milliseconds()}
	st.confirmation = rec
	switch {
	case err == nil && ok:
		rec.Answer = AnswerApproved
		if ans.Lasting && st.grant != nil {
			// The call is approved either way; a grant that could not be stored
			// only means the next one asks again.
			if gerr := st.grant(ctx); gerr != nil {
				r.log.Error().Err(gerr).Str("tool", e.name).Msg("storing a lasting approval")
			}
		}
		return Result{}, true
	case err == nil:
		rec.Answer = AnswerDenied
		if ans.Lasting && st.refuse != nil {
			if rerr := st.refuse(ctx); rerr != nil {
				r.log.Error().Err(rerr).Str("tool", e.name).Msg("storing a lasting refusal")
			}
		}
		return fail(CodeUserRejected, "the person declined to run %s", e.name), false
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		rec.Answer = AnswerTimeout
		return fail(CodeConfirmTimeout, "no answer to the confirmation of %s within %s; treated as a denial (setting %s)", e.name, p.ConfirmTimeout, SettingConfirmTimeout), false
	default:
		rec.Answer = AnswerFailed
		return fail(CodeUserRejected, "the confirmation of %s could not be asked: %v; treated as a denial", e.name, err), false
	}
}

// requesterOf says who asks for call, from what its entry path recorded: the model of
// a run, a page of an origin, an outside agent (ferry mcp, the control socket), the
// terminal, or the extension itself (a debugger or a test through ferryHost).
func requesterOf(call *Call) *Requester {
	switch call.Caller {
	case "":
		return nil
	case "model":
		return &Requester{Kind: "model", RunID: call.RunID, ConversationID: call.ConversationID}
	case "page":
		return &Requester{Kind: "page", Origin: call.Origin}
	}
	return &Requester{Kind: call.Caller, RunID: call.RunID, ConversationID: call.ConversationID}
}

// locate runs Tool.Locate; like assess, a panic or an error stops the call.
func (r *Registry) locate(ctx context.Context, e *entry, call *Call) (doc *Document, f *Failure) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error().Str("tool", e.name).Interface("panic", p).Msg("locating a call's document panicked")
			doc, f = nil, Failf(CodeHandlerError, "%s could not say which page it would act on: internal error", e.name)
		}
	}()
	doc, err := e.tool.Locate(ctx, call)
	if err != nil {
		if !errors.As(err, &f) {
			f = Failf(CodeHandlerError, "%s could not say which page it would act on: %v", e.name, err)
		}
		return nil, f
	}
	return doc, nil
}

// assess runs Tool.Assess. A panic asks for confirmation rather than failing the
// call open: the tool could not say the call is safe.
func (r *Registry) assess(ctx context.Context, e *entry, call *Call) (a Assessment, f *Failure) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error().Str("tool", e.name).Interface("panic", p).Msg("assessing a call panicked")
			a, f = Assessment{Confirm: true, Dangerous: true}, nil
		}
	}()
	a, err := e.tool.Assess(ctx, call)
	if err != nil {
		if !errors.As(err, &f) {
			f = Failf(CodeHandlerError, "%s could not be assessed: %v", e.name, err)
		}
		return a, f
	}
	return a, nil
}

type runOutcome struct {
	result any
	err    error
	panic  any
	stack  []byte
}

// run is steps 7 and 8 under one timeout. A handler that ignores its context keeps
// running after a TIMEOUT (Go cannot stop it), but its result is dropped.
func (r *Registry) run(ctx context.Context, e *entry, call *Call, timeout time.Duration) Result {
	rctx, cancel := context.WithTimeout(context.WithValue(ctx, callKey{}, call), timeout)
	defer cancel()
	done := make(chan runOutcome, 1)
	go func() {
		var out runOutcome
		defer func() {
			if p := recover(); p != nil {
				out.panic, out.stack = p, debug.Stack()
			}
			done <- out
		}()
		out.result, out.err = e.tool.Run(rctx, call)
	}()
	var out runOutcome
	select {
	case out = <-done:
	case <-rctx.Done():
		return r.runTimeout(ctx, e, timeout)
	}
	switch {
	case out.panic != nil:
		r.log.Error().Str("tool", e.name).Str("call_id", call.ID).Interface("panic", out.panic).
			Bytes("stack", out.stack).Msg("tool handler panicked")
		return fail(CodeHandlerError, "%s failed: internal error: %v", e.name, out.panic)
	case out.err != nil:
		if f, ok := AsFailure(out.err); ok {
			return Result{Code: f.Code, Reason: f.Reason}
		}
		if errors.Is(out.err, context.DeadlineExceeded) && rctx.Err() != nil {
			return r.runTimeout(ctx, e, timeout)
		}
		return fail(CodeHandlerError, "%s failed: %v", e.name, out.err)
	}
	if o, ok := out.result.(Outcome); ok {
		return Result{Success: true, Result: o.Result, Expect: o.Expect, Changed: o.Changed}
	}
	return Result{Success: true, Result: out.result}
}

func (r *Registry) runTimeout(ctx context.Context, e *entry, timeout time.Duration) Result {
	if ctx.Err() != nil {
		return fail(CodeHandlerError, "%s was cancelled before it finished (%v); it may have had effects", e.name, ctx.Err())
	}
	return fail(CodeTimeout, "%s did not finish within %s; it may have had effects", e.name, timeout)
}

// truncate cuts s to at most n bytes on a character boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func (r *Registry) record(st *callState, res Result) {
	if r.audit == nil {
		return
	}
	call := st.call
	entry := storage.AuditEntry{
		Time: st.start, CallID: call.ID, Tool: call.Tool, Origin: call.Origin, Caller: call.Caller,
		Code: string(res.Code), Success: res.Success, Dangerous: st.dangerous,
		TraceID: call.TraceID, ParentTrace: call.ParentTrace, Depth: call.Depth,
		ConversationID: call.ConversationID, RunID: call.RunID,
		Duration: r.now().Sub(st.start),
	}
	if st.e != nil {
		entry.Source = string(st.e.tool.Source)
		if entry.Origin == "" {
			entry.Origin = st.e.tool.Origin
		}
	}
	entry.Arguments, entry.Result = auditOf(st, res)
	r.audit.Record(entry)
}
