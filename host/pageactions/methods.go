package pageactions

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/protocol"
)

// RegisterMethods adds the extension → host methods of page actions:
//
//	page.actions.update  UpdateParams → UpdateResult
//	page.actions.remove  {tab_id, frame_id?, order?} → {removed}
//	page.actions.execute {tab_id, frame_id, origin, name, arguments, trace_id?, depth?} → the tool result
//	page.actions.list    {tab_id, frame_id, origin} → {tools, unavailable}
//	page.ask             AskParams → AskResult (ferry.ask; ask.go)
//	page.origins         {} → {origins: [OriginInfo]} (the options page)
//	page.status          {origin} → {disabled, reason?}
//
// The service worker sends them for its content-script bridges and fills tab, frame
// and origin from the port's sender.
func RegisterMethods(mux *protocol.Mux, m *Manager) {
	protocol.Handle(mux, "page.actions.update", m.update)
	protocol.Handle(mux, "page.actions.remove", m.remove)
	protocol.Handle(mux, "page.actions.execute", m.execute)
	protocol.Handle(mux, "page.actions.list", m.list)
	protocol.Handle(mux, "page.ask", m.askMethod)
	protocol.Handle(mux, "page.origins", m.originsMethod)
	protocol.Handle(mux, "page.status", m.statusMethod)
}

func (m *Manager) update(ctx context.Context, p UpdateParams) (any, error) {
	res, err := m.Update(p)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %v", err)
	}
	return res, nil
}

type removeParams struct {
	TabID   int   `json:"tab_id"`
	FrameID *int  `json:"frame_id,omitempty"`
	Order   int64 `json:"order,omitempty"`
}

func (m *Manager) remove(ctx context.Context, p removeParams) (any, error) {
	frame := -1
	if p.FrameID != nil {
		frame = *p.FrameID
	}
	return map[string]int{"removed": m.RemoveOrdered(p.TabID, frame, p.Order)}, nil
}

type executeParams struct {
	TabID     int             `json:"tab_id"`
	FrameID   int             `json:"frame_id"`
	Origin    string          `json:"origin"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// TraceID and Depth are the cause the page passes on: an emit of one of its
	// actions (api.emit carries them) whose listener calls ferry.execute. The call
	// then counts one level deeper in that trace; without them it starts a new
	// trace at depth 0.
	TraceID string `json:"trace_id,omitempty"`
	Depth   int    `json:"depth,omitempty"`
}

// execute is ferry.execute: a page runs one of its tab's page actions through the
// whole pipeline. Its scope says what a page may reach, and the pipeline refuses
// (and audits) the rest: only its top frame and same-origin frames may call, each
// origin at its own rate, and only page actions its origin declared in its own tab,
// never the host's builtins.
func (m *Manager) execute(ctx context.Context, p executeParams) (any, error) {
	if p.TabID <= 0 || p.Name == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: page.actions.execute needs tab_id and name")
	}
	scope := PageScope(p.Origin, p.TabID)
	scope.Admit = func(ctx context.Context) *tools.Failure {
		if f := m.CheckFrame(ctx, p.TabID, p.FrameID, p.Origin, "ferry.execute"); f != nil {
			return f
		}
		if ok, wait := m.rates.take(p.Origin, PageCallsPerMinute); !ok {
			return tools.Failf(tools.CodeRateLimited, "too many ferry.execute calls from %s: at most %d a minute; retry in %s", p.Origin, PageCallsPerMinute, wait.Round(time.Millisecond))
		}
		return nil
	}
	call := &tools.Call{Tool: p.Name, Arguments: p.Arguments, TabID: p.TabID, Caller: tools.PrincipalPage, Origin: p.Origin, Scope: scope}
	if p.TraceID != "" {
		call.TraceID, call.Depth = p.TraceID, max(p.Depth, 0)
	}
	return m.reg.Call(context.WithoutCancel(ctx), call), nil
}

// PageScope is what a page may reach with ferry.execute: its own tab's actions of
// its own origin.
func PageScope(origin string, tab int) *tools.Scope {
	return &tools.Scope{Principal: tools.PrincipalPage, Origin: origin, PageTab: tab}
}

// listParams is page.actions.list: the frame asking for its tab's page actions.
type listParams struct {
	TabID   int    `json:"tab_id"`
	FrameID int    `json:"frame_id"`
	Origin  string `json:"origin"`
}

func (m *Manager) list(ctx context.Context, p listParams) (any, error) {
	if f := m.CheckFrame(ctx, p.TabID, p.FrameID, p.Origin, "ferry.tools"); f != nil {
		return nil, &protocol.Error{Code: protocol.CodeAskRefused, Message: f.Reason, Data: map[string]string{"code": string(f.Code)}}
	}
	avail, unavail := m.reg.List(ctx, p.TabID)
	page := map[string]bool{}
	for _, l := range m.reg.All(p.TabID) {
		if l.Source == tools.SourcePage {
			page[l.ModelName] = true
		}
	}
	outA := []tools.Listing{}
	for _, l := range avail {
		if l.Source == tools.SourcePage {
			outA = append(outA, l)
		}
	}
	outU := []tools.Unavailable{}
	for _, u := range unavail {
		if page[u.Name] {
			outU = append(outU, u)
		}
	}
	return map[string]any{"tools": outA, "unavailable": outU}, nil
}
