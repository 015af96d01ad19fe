// Package uiconn is the host's line to the person through the extension: while the
// extension is connected, confirmations and ask_user questions travel over its
// native connection (ui.confirm, ui.ask, ui.cancel), and the extension says how many
// side panels are open (ui.presence) so that a question nobody can see is not asked.
package uiconn

import (
	"context"
	"errors"
	"sync"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/protocol"
	"github.com/rs/zerolog"
)

// Link holds the extension's connection while the host serves it. The zero value is
// ready and unconnected.
type Link struct {
	mu     sync.Mutex
	conn   *protocol.Conn
	panels *panelCount // its side panels, as it last reported them
}

// Attach makes conn the extension's connection and returns the UI that asks through
// it; detach forgets it again (the host calls it when the connection ends).
func (l *Link) Attach(conn *protocol.Conn) (ui UI, detach func()) {
	panels := &panelCount{}
	l.mu.Lock()
	l.conn, l.panels = conn, panels
	l.mu.Unlock()
	return UI{conn, panels}, func() {
		l.mu.Lock()
		l.conn, l.panels = nil, nil
		l.mu.Unlock()
	}
}

// Conn is the extension's connection while it is attached, nil otherwise.
func (l *Link) Conn() *protocol.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn
}

func (l *Link) currentPanels() *panelCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.panels
}

// panelCount is how many side panels the extension connected now last said were
// open. Until it says, the count is unknown and its UI is asked as before.
type panelCount struct {
	mu    sync.Mutex
	n     int
	known bool
}

func (c *panelCount) set(n int) {
	c.mu.Lock()
	c.n, c.known = n, true
	c.mu.Unlock()
}

// UI asks the person through the extension over the native connection: it is the
// registry's tools.UI while the extension is connected.
type UI struct {
	conn   *protocol.Conn
	panels *panelCount // what the extension said of its open side panels
}

// Confirm is ui.confirm; when the caller stops waiting the prompt is withdrawn.
func (u UI) Confirm(ctx context.Context, req tools.ConfirmRequest) (bool, error) {
	a, err := u.ConfirmLasting(ctx, req)
	return a.Approved, err
}

// ConfirmLasting is ui.confirm's whole answer; a lasting one counts only where the
// request offered it.
func (u UI) ConfirmLasting(ctx context.Context, req tools.ConfirmRequest) (tools.ConfirmAnswer, error) {
	var out tools.ConfirmAnswer
	if err := u.conn.Call(ctx, "ui.confirm", req, &out); err != nil {
		u.withdraw(ctx, req.CallID)
		return tools.ConfirmAnswer{}, err
	}
	out.Lasting = out.Lasting && req.Lasting != nil
	return out, nil
}

// Ask is ui.ask (ask_user); when the caller stops waiting the question is withdrawn.
func (u UI) Ask(ctx context.Context, req tools.AskRequest) (tools.AskAnswer, error) {
	var out tools.AskAnswer
	if err := u.conn.Call(ctx, "ui.ask", req, &out); err != nil {
		u.withdraw(ctx, req.CallID)
		return tools.AskAnswer{}, err
	}
	return out, nil
}

// withdraw tells the UI to take down a prompt nobody waits for any more.
func (u UI) withdraw(ctx context.Context, callID string) {
	if ctx.Err() != nil {
		reason := "cancelled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = "timeout"
		}
		u.conn.Notify("ui.cancel", map[string]string{"call_id": callID, "reason": reason})
	}
}

// PanelsOpen makes UI a tools.Presence: the registry denies confirmations and
// hides ask_user at once when the extension says no side panel is open, instead of
// a round trip that can only fail.
func (u UI) PanelsOpen() (int, bool) {
	if u.panels == nil {
		return 0, false
	}
	u.panels.mu.Lock()
	defer u.panels.mu.Unlock()
	return u.panels.n, u.panels.known
}

type presenceParams struct {
	Panels *int `json:"panels"`
}

// RegisterMethods adds ui.presence {panels: n}, the notification the extension sends
// whenever the number of open side panels changes and on every (re)connect.
func RegisterMethods(mux *protocol.Mux, l *Link, log zerolog.Logger) {
	protocol.Handle(mux, "ui.presence", func(ctx context.Context, p presenceParams) (any, error) {
		if p.Panels == nil || *p.Panels < 0 {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: ui.presence needs panels, the number of open side panels (0 or more)")
		}
		panels := l.currentPanels()
		if panels == nil {
			return nil, nil // not served over a connection (a direct call): nothing to track
		}
		panels.set(*p.Panels)
		log.Debug().Int("panels", *p.Panels).Msg("side panels")
		return map[string]int{"panels": *p.Panels}, nil
	})
}
