package pageactions

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
)

// Settings of the page API, per origin. Each is a comma-separated list of origins.
const (
	SettingAskAllowed      = "pages.ask_allowed_origins"
	SettingAskDenied       = "pages.ask_denied_origins"
	SettingDisabledOrigins = "pages.disabled_origins"

	// MaxAskText bounds the text of one ferry.ask, in characters.
	MaxAskText = 2000
	// AskPerMinute is how many ferry.ask calls one origin may make in a minute.
	AskPerMinute = 5
)

func init() {
	validate := func(v string) error { _, err := origins.ParseList(v); return err }
	config.Register(config.Setting{
		Key:         SettingAskAllowed,
		Description: "comma-separated origins (https://example.com) whose pages may start an agent run with ferry.ask without asking",
		Validate:    validate,
	})
	config.Register(config.Setting{
		Key:         SettingAskDenied,
		Description: "comma-separated origins whose ferry.ask the user refused: refused without asking again",
		Validate:    validate,
	})
	config.Register(config.Setting{
		Key: SettingDisabledOrigins,
		Description: "comma-separated origins where Ferry's page API is off: their declared actions are ignored, " +
			"ferry.ready() rejects and ferry.ask is refused",
		Validate: validate,
	})
	config.Register(config.Setting{
		Key: SettingWriteStore, Default: "true", Validate: config.OneOf("true", "false"),
		Description: "page actions may write their page's store (the shorthand dialect's setState) when their page turned writeStore on with " +
			"ferry.init({permissions: {writeStore: true}}) and the action lists writeStore in its permissions; false withholds it from every page",
	})
}

// SettingsStore reads settings and writes the per-origin lists (*config.Live
// satisfies it).
type SettingsStore interface {
	config.Settings
	Set(ctx context.Context, key, value string) error
}

// RunRequest is a run a page asks for: its text, bound to the page's tab.
type RunRequest struct {
	Text   string
	TabID  int
	Origin string
	// TraceID and Depth continue the causal chain of the page's event that asked
	// (empty: a new trace at depth 0), so that the run's calls count deeper.
	TraceID string
	Depth   int
	Scope   *tools.Scope // the page's: every call of the run carries it
}

// AskDeps is what ferry.ask and the per-origin settings need.
type AskDeps struct {
	Settings SettingsStore
	// Start starts an agent run and says its ids. The run outlives the page's
	// request: Start gets a context that is never cancelled.
	Start func(ctx context.Context, req RunRequest) (conversationID, runID string, err error)
	Now   func() time.Time
}

type askState struct {
	mu    sync.Mutex // the read-modify-write of the origin lists
	deps  AskDeps
	rates *originRates // asks, per origin
}

// SetAsk connects ferry.ask and the per-origin settings to the host's settings and
// agent. Without it page.ask is refused and no origin is disabled.
func (m *Manager) SetAsk(d AskDeps) {
	if d.Now == nil {
		d.Now = time.Now
	}
	m.askMu.Lock()
	m.askSt = &askState{deps: d, rates: newOriginRates(d.Now)}
	m.askMu.Unlock()
	if err := m.reg.Register(m.askTool()); err != nil {
		m.log.Error().Err(err).Msg("registering ferry.ask")
	}
}

func (m *Manager) askDeps() *askState {
	m.askMu.Lock()
	defer m.askMu.Unlock()
	return m.askSt
}

func (a *askState) origins(ctx context.Context, key string) []string {
	if a == nil || a.deps.Settings == nil {
		return nil
	}
	// Every list read as stored: one entry that no longer passes the check must not
	// drop the rest (an origin the person refused or turned off stays so).
	return origins.Normalize(a.deps.Settings.Snapshot(ctx).ListAsStored(key))
}

func has(list []string, o string) bool {
	for _, x := range list {
		if x == o {
			return true
		}
	}
	return false
}

// Disabled reports whether the user turned Ferry's page API off for origin.
func (m *Manager) Disabled(ctx context.Context, origin string) bool {
	o, ok := origins.Of(origin)
	if !ok {
		return false
	}
	return has(m.askDeps().origins(ctx, SettingDisabledOrigins), o)
}

// DisabledReason is what a page of a disabled origin hears.
func DisabledReason(origin string) string {
	return "Ferry's page API is turned off for " + origin + " (Ferry options → Page origins, setting " + SettingDisabledOrigins + ")"
}

// addOrigin moves origin into the list key and out of the list other.
func (a *askState) addOrigin(ctx context.Context, key, other, origin string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.origins(ctx, key)
	if !has(list, origin) {
		list = append(list, origin)
		if err := a.deps.Settings.Set(ctx, key, strings.Join(list, ",")); err != nil {
			return err
		}
	}
	if o := a.origins(ctx, other); has(o, origin) {
		kept := o[:0:0]
		for _, x := range o {
			if x != origin {
				kept = append(kept, x)
			}
		}
		return a.deps.Settings.Set(ctx, other, strings.Join(kept, ","))
	}
	return nil
}

// AskParams is page.ask: a page's ferry.ask(text). Tab, frame and origin come from
// the port's sender in the service worker, never from the page.
type AskParams struct {
	TabID   int    `json:"tab_id"`
	FrameID int    `json:"frame_id"`
	Origin  string `json:"origin"`
	Text    string `json:"text"`
	// TraceID and Depth: the cause the page passes on (see executeParams).
	TraceID string `json:"trace_id,omitempty"`
	Depth   int    `json:"depth,omitempty"`
}

// AskResult is the run ferry.ask started.
type AskResult struct {
	ConversationID string `json:"conversation_id"`
	RunID          string `json:"run_id"`
}

// AskTool is ferry.ask's entry point in the registry: a tool only a page calls
// (tools.Tool.Callers), so that every ask goes through the one pipeline (the page's
// admission and rate, the person's card with its lasting answers, the audit row of
// every outcome) like any other call.
const AskTool = "ferry_ask"

// askTool is ferry.ask. An origin the user refused is refused; one not yet allowed
// is asked about (the answer is kept only when the person chose "always" or
// "never"); an allowed one starts the run, bound to the page's tab.
func (m *Manager) askTool() tools.Tool {
	return tools.Tool{
		Name:        AskTool,
		Description: "A page asks to start a Ferry run bound to its tab (ferry.ask).",
		Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{
  "text":{"type":"string","minLength":1,"maxLength":%d,"pattern":"\\S"}
},"required":["text"],"additionalProperties":false}`, MaxAskText)),
		Source:  tools.SourceBuiltin,
		Kind:    tools.KindWrite,
		Callers: []string{tools.PrincipalPage},
		// Starting the run reaches nothing by itself: each call of the run is judged
		// under the page's scope (its own tab only, the same data-flow rule).
		Class:      tools.ClassLocal,
		Effects:    func(context.Context, *tools.Call) (tools.Effect, error) { return tools.Effect{}, nil },
		Provenance: func(*tools.Call, tools.Effect, *tools.Result) tools.Provenance { return tools.Provenance{} },
		Available: func(ctx context.Context, call *tools.Call) (bool, string) {
			if a := m.askDeps(); a == nil || a.deps.Settings == nil || a.deps.Start == nil {
				return false, "this Ferry host cannot start runs for pages"
			}
			return true, ""
		},
		Assess: m.assessAsk,
		Run:    m.runAsk,
	}
}

// assessAsk is the person's say over an origin's asks: refused for good, allowed for
// good, or asked about now.
func (m *Manager) assessAsk(ctx context.Context, call *tools.Call) (tools.Assessment, error) {
	a := m.askDeps()
	origin := call.Origin
	if has(a.origins(ctx, SettingDisabledOrigins), origin) {
		return tools.Assessment{}, tools.Failf(tools.CodePermissionDenied, "%s", DisabledReason(origin))
	}
	if has(a.origins(ctx, SettingAskDenied), origin) {
		return tools.Assessment{}, tools.Failf(tools.CodePermissionDenied, "the user does not allow %s to start Ferry runs (Ferry options → Page origins)", origin)
	}
	if has(a.origins(ctx, SettingAskAllowed), origin) {
		return tools.Assessment{}, nil
	}
	var p struct {
		Text string `json:"text"`
	}
	_ = call.Decode(&p)
	// A plain answer is for this request only; "always" and "never" are controls of
	// their own on the card, so no keypress meant for something else grants an
	// origin for good.
	return tools.Assessment{
		Confirm: true,
		Message: origin + " wants to start a Ferry run: " + strings.TrimSpace(p.Text),
		Lasting: &tools.Lasting{Scope: tools.LastingPageAsk, Origin: origin},
		Grant:   func(ctx context.Context) error { return a.addOrigin(ctx, SettingAskAllowed, SettingAskDenied, origin) },
		Refuse:  func(ctx context.Context) error { return a.addOrigin(ctx, SettingAskDenied, SettingAskAllowed, origin) },
	}, nil
}

func (m *Manager) runAsk(ctx context.Context, call *tools.Call) (any, error) {
	var p struct {
		Text string `json:"text"`
	}
	if err := call.Decode(&p); err != nil {
		return nil, err
	}
	origin := call.Origin
	// The run is the page's request: its calls carry the page's origin (whose
	// settings apply to them), the text is the page's, not the person's, and the run
	// reads only the page's own tab.
	req := RunRequest{Text: strings.TrimSpace(p.Text), TabID: call.TabID, Origin: origin, TraceID: call.TraceID, Depth: call.Depth,
		Scope: &tools.Scope{Principal: tools.PrincipalPage, Origin: origin, OwnTab: call.TabID}}
	conv, run, err := m.askDeps().deps.Start(context.WithoutCancel(ctx), req)
	if err != nil {
		return nil, tools.Failf(tools.CodeHandlerError, "could not start the run: %v", err)
	}
	m.log.Info().Str("origin", origin).Int("tab_id", call.TabID).Str("run_id", run).Msg("ferry.ask started a run")
	return AskResult{ConversationID: conv, RunID: run}, nil
}

// Ask is ferry.ask: one call of AskTool through the pipeline, as the page's. Tab,
// frame and origin come from the port's sender in the service worker, never from the
// page. A refusal is the pipeline's result, returned as a *tools.Failure.
func (m *Manager) Ask(ctx context.Context, p AskParams) (AskResult, error) {
	res := m.ask(ctx, p)
	if !res.Success {
		return AskResult{}, &tools.Failure{Code: res.Code, Reason: res.Reason}
	}
	r, _ := res.Result.(AskResult)
	return r, nil
}

func (m *Manager) ask(ctx context.Context, p AskParams) tools.Result {
	origin, ok := origins.Of(p.Origin)
	if !ok {
		origin = p.Origin
	}
	scope := &tools.Scope{Principal: tools.PrincipalPage, Origin: origin}
	scope.Admit = func(ctx context.Context) *tools.Failure {
		if p.TabID <= 0 {
			return tools.Failf(tools.CodeInvalidParams, "invalid params: page.ask needs tab_id")
		}
		if !ok {
			return tools.Failf(tools.CodePermissionDenied, "ferry.ask is only for http(s) pages")
		}
		if f := m.CheckFrame(ctx, p.TabID, p.FrameID, origin, "ferry.ask"); f != nil {
			return f
		}
		if a := m.askDeps(); a == nil {
			return nil // no such tool: the lookup says so
		} else if ok, wait := a.rates.take(origin, AskPerMinute); !ok {
			return tools.Failf(tools.CodeRateLimited, "too many ferry.ask calls from %s: at most %d a minute; retry in %s", origin, AskPerMinute, wait.Round(time.Millisecond))
		}
		return nil
	}
	args, _ := json.Marshal(map[string]string{"text": p.Text})
	call := &tools.Call{Tool: AskTool, Arguments: args, TabID: p.TabID, Caller: tools.PrincipalPage, Origin: origin, Scope: scope}
	if p.TraceID != "" {
		// The event → run → action cycle stops at the loop guard's depth, before a
		// model is asked.
		call.TraceID, call.Depth = p.TraceID, max(p.Depth, 0)
	}
	return m.reg.Call(context.WithoutCancel(ctx), call)
}

// OriginInfo is one origin of page.origins.
type OriginInfo struct {
	Origin   string `json:"origin"`
	Tabs     int    `json:"tabs"`
	Actions  int    `json:"actions"`
	Disabled bool   `json:"disabled"`
	Ask      string `json:"ask"` // allowed, denied, ask
}

// Origins lists the origins that declare actions now, and those the settings name.
func (m *Manager) Origins(ctx context.Context) []OriginInfo {
	type acc struct {
		tabs    map[int]bool
		actions int
	}
	by := map[string]*acc{}
	get := func(o string) *acc {
		if by[o] == nil {
			by[o] = &acc{tabs: map[int]bool{}}
		}
		return by[o]
	}
	m.mu.Lock()
	for tab, frames := range m.tabs {
		for _, f := range frames {
			x := get(f.origin)
			x.tabs[tab] = true
			x.actions += len(f.decls)
		}
	}
	m.mu.Unlock()
	a := m.askDeps()
	disabled, allowed, denied := a.origins(ctx, SettingDisabledOrigins), a.origins(ctx, SettingAskAllowed), a.origins(ctx, SettingAskDenied)
	for _, l := range [][]string{disabled, allowed, denied} {
		for _, o := range l {
			get(o)
		}
	}
	out := make([]OriginInfo, 0, len(by))
	for o, x := range by {
		info := OriginInfo{Origin: o, Tabs: len(x.tabs), Actions: x.actions, Disabled: has(disabled, o), Ask: "ask"}
		switch {
		case has(denied, o):
			info.Ask = "denied"
		case has(allowed, o):
			info.Ask = "allowed"
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Origin < out[j].Origin })
	return out
}

// askMethod answers page.ask with the pipeline's result: {success, result} or
// {success: false, code, reason}, the vocabulary of every call.
func (m *Manager) askMethod(ctx context.Context, p AskParams) (any, error) {
	return m.ask(ctx, p), nil
}

func (m *Manager) originsMethod(ctx context.Context, _ struct{}) (any, error) {
	return map[string]any{"origins": m.Origins(ctx)}, nil
}

type statusParams struct {
	Origin string `json:"origin"`
}

// statusMethod is page.status {origin}: whether the page API is on for origin.
func (m *Manager) statusMethod(ctx context.Context, p statusParams) (any, error) {
	if m.Disabled(ctx, p.Origin) {
		return map[string]any{"disabled": true, "reason": DisabledReason(p.Origin)}, nil
	}
	return map[string]any{"disabled": false}, nil
}
