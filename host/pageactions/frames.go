package pageactions

import (
	"context"
	"sync"
	"time"

	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
)

// A page is trusted for its own origin and only in its top frame: what a frame of
// another origin (an ad, a widget) asks for in the tab's name is refused, here in the
// host as in the service worker. The host does not take the extension's word that a
// frame is the top frame's origin: it compares the frame's origin with the top
// frame's as the host knows it (from the top frame's own declarations, else from the
// browser's tab list) and with what the frame itself declared earlier.

// CheckFrame says whether a call made by the page in (tab, frame) of origin may act
// in the tab's name: nil, or a PERMISSION_DENIED failure naming the frame's origin.
func (m *Manager) CheckFrame(ctx context.Context, tab, fr int, origin, what string) *tools.Failure {
	o, ok := origins.Of(origin)
	if !ok {
		return tools.Failf(tools.CodePermissionDenied, "%s is only for http(s) pages, not %q", what, origin)
	}
	m.mu.Lock()
	var top, recorded string
	if f := m.frame(tab, 0); f != nil {
		top = f.origin
	}
	if f := m.frame(tab, fr); f != nil {
		recorded = f.origin
	}
	m.mu.Unlock()
	if recorded != "" && recorded != o {
		return tools.Failf(tools.CodePermissionDenied, "%s from a frame of %s is refused: that frame's document is of %s", what, o, recorded)
	}
	if top == "" {
		top = m.tabOrigin(ctx, tab)
	}
	switch {
	case top == "":
		return tools.Failf(tools.CodePermissionDenied, "%s from %s is refused: the host cannot tell the origin of tab %d's page", what, o, tab)
	case o != top:
		return tools.Failf(tools.CodePermissionDenied, "%s from a frame of %s is refused: only the tab's top page (%s) and its same-origin frames may use Ferry's page API", what, o, top)
	}
	return nil
}

// tabOrigin is the origin of the page a tab shows, from the browser's tab list.
func (m *Manager) tabOrigin(ctx context.Context, tab int) string {
	if m.br == nil {
		return ""
	}
	var out struct {
		Tabs []struct {
			TabID int    `json:"tab_id"`
			URL   string `json:"url"`
		} `json:"tabs"`
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := m.br.Call(cctx, "browser.tabs.list", map[string]any{}, &out); err != nil {
		m.log.Debug().Err(err).Int("tab_id", tab).Msg("tab origin")
		return ""
	}
	for _, t := range out.Tabs {
		if t.TabID == tab {
			o, _ := origins.Of(t.URL)
			return o
		}
	}
	return ""
}

// PageCallsPerMinute is how many ferry.execute calls one origin may make in a
// minute, across its tabs: a page's own loop cannot drive the host at the rate of
// the page's script.
const PageCallsPerMinute = 60

// originRates are the token buckets of page-initiated calls, per origin.
type originRates struct {
	mu  sync.Mutex
	now func() time.Time
	by  map[string]*rate
}

type rate struct {
	tokens float64
	at     time.Time
}

func newOriginRates(now func() time.Time) *originRates {
	return &originRates{now: now, by: map[string]*rate{}}
}

// take spends one call of origin; false with the wait when its rate is spent.
func (o *originRates) take(origin string, perMinute int) (bool, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	r := o.by[origin]
	if r == nil {
		r = &rate{tokens: float64(perMinute), at: now}
		o.by[origin] = r
		if len(o.by) > 1000 { // forget idle origins rather than grow for ever
			for k, v := range o.by {
				if now.Sub(v.at) > time.Minute {
					delete(o.by, k)
				}
			}
		}
	}
	per := float64(perMinute) / 60
	r.tokens = min(float64(perMinute), r.tokens+now.Sub(r.at).Seconds()*per)
	r.at = now
	if r.tokens >= 1 {
		r.tokens--
		return true, 0
	}
	return false, time.Duration((1 - r.tokens) / per * float64(time.Second))
}

// SettingWriteStore is the host's policy for pages' writeStore: a page action may
// write the page's store when its page turned writeStore on (ferry.init) and the
// action opted in, unless this setting is false.
const SettingWriteStore = "pages.allow_write_store"

// pageFlags are the global flags of a page action's page: the page's own
// ferry.init permissions (readStore and emitEvents on unless the page turned them
// off, writeStore off unless it turned it on), writeStore withheld when the host's
// policy says so.
func (m *Manager) pageFlags(tab, fr int) map[string]bool {
	flags := map[string]bool{tools.PermReadStore: true, tools.PermEmitEvents: true, tools.PermWriteStore: false}
	m.mu.Lock()
	if f := m.frame(tab, fr); f != nil {
		for _, k := range []string{tools.PermReadStore, tools.PermWriteStore, tools.PermEmitEvents} {
			if v, ok := f.flags[k]; ok {
				flags[k] = v
			}
		}
	}
	m.mu.Unlock()
	if flags[tools.PermWriteStore] && m.setting(SettingWriteStore) == "false" {
		flags[tools.PermWriteStore] = false
	}
	return flags
}

func (m *Manager) setting(key string) string {
	a := m.askDeps()
	if a == nil || a.deps.Settings == nil {
		return ""
	}
	return a.deps.Settings.Snapshot(context.Background()).String(key)
}

// deniedCodes are the host's refusals a page hears about as denied (the shorthand dialect's
// ai:action:denied): the call was refused before the page was asked to run it.
var deniedCodes = map[tools.Code]bool{
	tools.CodeInvalidParams: true, tools.CodeActionUnavailable: true, tools.CodePermissionDenied: true,
	tools.CodeLoopDetected: true, tools.CodeRateLimited: true, tools.CodeUserRejected: true, tools.CodeConfirmTimeout: true,
}

// DeniedParams is page.action.denied (host → extension): a call of the frame's
// action that the host refused before it ran.
type DeniedParams struct {
	TabID   int    `json:"tab_id"`
	FrameID int    `json:"frame_id"`
	ID      string `json:"id"`
	CallID  string `json:"call_id"`
	Code    string `json:"code"`
	Reason  string `json:"reason"`
	TraceID string `json:"trace_id,omitempty"`
	Depth   int    `json:"depth"`
}

// finished tells the page about a call of its action the host refused before the
// page ran it; the page's own refusals (its precondition, a target it cannot use)
// it already knows.
func (m *Manager) finished(tab, fr int, id string, call *tools.Call, res tools.Result, ran bool) {
	if res.Success || ran || !deniedCodes[res.Code] || m.br == nil {
		return
	}
	p := DeniedParams{TabID: tab, FrameID: fr, ID: id, CallID: call.ID, Code: string(res.Code),
		Reason: boundText(res.Reason, 2*MaxReason), TraceID: call.TraceID, Depth: call.Depth}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.br.Call(ctx, "page.action.denied", p, nil); err != nil {
			m.log.Debug().Err(err).Str("call_id", p.CallID).Msg("page.action.denied")
		}
	}()
}
