package pageactions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/protocol"
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
	// AskConfirmTimeout is how long the person has to answer "may this page start a run".
	AskConfirmTimeout = 60 * time.Second
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
	mu    sync.Mutex // the read-modify-write of the origin lists, the rate windows
	deps  AskDeps
	calls map[string][]time.Time // origin → times of its recent asks
}

// SetAsk connects ferry.ask and the per-origin settings to the host's settings and
// agent. Without it page.ask is refused and no origin is disabled.
func (m *Manager) SetAsk(d AskDeps) {
	if d.Now == nil {
		d.Now = time.Now
	}
	m.askMu.Lock()
	m.ask = &askState{deps: d, calls: map[string][]time.Time{}}
	m.askMu.Unlock()
}

func (m *Manager) askDeps() *askState {
	m.askMu.Lock()
	defer m.askMu.Unlock()
	return m.ask
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

// allowCall counts one ask of origin against its rate.
func (a *askState) allowCall(origin string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.deps.Now()
	recent := a.calls[origin][:0:0]
	for _, t := range a.calls[origin] {
		if now.Sub(t) < time.Minute {
			recent = append(recent, t)
		}
	}
	if len(recent) >= AskPerMinute {
		a.calls[origin] = recent
		return false
	}
	a.calls[origin] = append(recent, now)
	return true
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

func refused(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeAskRefused, format, args...)
}

// noPanel reports whether ui says (directly or through Unwrap) that no side panel is open.
func noPanel(ui tools.UI) bool {
	for ui != nil {
		if p, ok := ui.(tools.Presence); ok {
			n, known := p.PanelsOpen()
			return known && n == 0
		}
		u, ok := ui.(interface{ Unwrap() tools.UI })
		if !ok {
			return false
		}
		ui = u.Unwrap()
	}
	return false
}

// Ask is ferry.ask: a page asks to start an agent run bound to its tab. An origin
// the user refused is refused; one not yet allowed is asked about through the UI
// (the answer is kept only when the person chose "always" or "never"); an allowed
// one starts the run.
func (m *Manager) Ask(ctx context.Context, p AskParams) (AskResult, error) {
	a := m.askDeps()
	if p.TabID <= 0 {
		return AskResult{}, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: page.ask needs tab_id")
	}
	origin, ok := origins.Of(p.Origin)
	if !ok {
		return AskResult{}, refused("ferry.ask is only for http(s) pages")
	}
	text := strings.TrimSpace(p.Text)
	if text == "" {
		return AskResult{}, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: ferry.ask needs the text of the request")
	}
	if n := utf8.RuneCountInString(text); n > MaxAskText {
		return AskResult{}, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: ferry.ask text is %d characters; at most %d", n, MaxAskText)
	}
	if a == nil || a.deps.Settings == nil || a.deps.Start == nil {
		return AskResult{}, refused("this Ferry host cannot start runs for pages")
	}
	if f := m.CheckFrame(ctx, p.TabID, p.FrameID, origin, "ferry.ask"); f != nil {
		return AskResult{}, refused("%s: %s", f.Code, f.Reason)
	}
	if has(a.origins(ctx, SettingDisabledOrigins), origin) {
		return AskResult{}, refused("%s", DisabledReason(origin))
	}
	if has(a.origins(ctx, SettingAskDenied), origin) {
		return AskResult{}, refused("the user does not allow %s to start Ferry runs (Ferry options → Page origins)", origin)
	}
	if !a.allowCall(origin) {
		return AskResult{}, refused("too many ferry.ask calls from %s: at most %d a minute", origin, AskPerMinute)
	}
	if !has(a.origins(ctx, SettingAskAllowed), origin) {
		ui := m.reg.UI()
		if ui == nil || noPanel(ui) {
			return AskResult{}, refused("%s has not been allowed to start Ferry runs and nobody can be asked: open Ferry's side panel (the Ferry toolbar button) and try again", origin)
		}
		args, _ := json.Marshal(map[string]string{"text": text})
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AskConfirmTimeout)
		// A plain answer is for this request only; "always" and "never" are controls
		// of their own on the card, so no keypress meant for something else grants
		// an origin for good.
		ans, err := tools.ConfirmWhole(cctx, ui, tools.ConfirmRequest{
			CallID: "ask_" + randomID(), Tool: "ferry.ask", Arguments: args, Origin: origin,
			Message:   origin + " wants to start a Ferry run: " + text,
			TimeoutMS: AskConfirmTimeout.Milliseconds(), TabID: p.TabID, FrameID: p.FrameID,
			Requester: &tools.Requester{Kind: "page", Origin: origin},
			Lasting:   &tools.Lasting{Scope: tools.LastingPageAsk, Origin: origin},
		})
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded)
		cancel()
		switch {
		case err == nil && ans.Approved:
			if ans.Lasting {
				if err := a.addOrigin(ctx, SettingAskAllowed, SettingAskDenied, origin); err != nil {
					return AskResult{}, err
				}
			}
		case err == nil:
			if ans.Lasting {
				if err := a.addOrigin(ctx, SettingAskDenied, SettingAskAllowed, origin); err != nil {
					return AskResult{}, err
				}
			}
			return AskResult{}, refused("the user did not allow %s to start Ferry runs", origin)
		case timedOut:
			return AskResult{}, refused("nobody answered whether %s may start a Ferry run within %s", origin, AskConfirmTimeout)
		default:
			return AskResult{}, refused("could not ask whether %s may start a Ferry run: %v (open Ferry's side panel)", origin, err)
		}
	}
	// The run is the page's request: its calls carry the page's origin (whose
	// settings apply to them), and the text is the page's, not the person's.
	req := RunRequest{Text: text, TabID: p.TabID, Origin: origin, TraceID: p.TraceID, Depth: p.Depth,
		Scope: &tools.Scope{Principal: tools.PrincipalPage, Origin: origin}}
	if req.TraceID != "" && req.Depth > tools.MaxDepth {
		// The run's first call would be deeper than the loop guard allows: the
		// event → run → action cycle stops here, before a model is asked.
		return AskResult{}, refused("%s: ferry.ask from an event %d calls deep (trace %s); the most allowed is %d: the page's events keep starting runs", tools.CodeLoopDetected, req.Depth, req.TraceID, tools.MaxDepth)
	}
	conv, run, err := a.deps.Start(context.WithoutCancel(ctx), req)
	if err != nil {
		return AskResult{}, refused("could not start the run: %v", err)
	}
	m.log.Info().Str("origin", origin).Int("tab_id", p.TabID).Str("run_id", run).Msg("ferry.ask started a run")
	return AskResult{ConversationID: conv, RunID: run}, nil
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

func (m *Manager) askMethod(ctx context.Context, p AskParams) (any, error) {
	return m.Ask(ctx, p)
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

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
