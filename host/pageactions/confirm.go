package pageactions

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ferryhq/ferry/host/tools"
)

// ConfirmParams is page.action.confirm (host → extension): the confirmation of one
// call of a page action, offered to the page that declared it (its ferry.on('confirm')
// listeners). The page answers only with ferry.confirmTool / ferry.rejectTool of this
// call id; a page without a confirm listener answers {answered: false} at once.
type ConfirmParams struct {
	TabID     int             `json:"tab_id"`
	FrameID   int             `json:"frame_id"`
	CallID    string          `json:"call_id"`
	ID        string          `json:"id"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Message   string          `json:"message"`
	TimeoutMS int64           `json:"timeout_ms"`
}

// ConfirmAnswer is the page's answer to page.action.confirm.
type ConfirmAnswer struct {
	Answered bool `json:"answered"`
	Approved bool `json:"approved"`
}

// ConfirmDone is page.action.confirm.done (host → extension): how the confirmation
// ended, whoever decided (page, panel, timeout), so that the page takes down its
// prompt and hears denied when the call will not run.
type ConfirmDone struct {
	TabID    int    `json:"tab_id"`
	FrameID  int    `json:"frame_id"`
	CallID   string `json:"call_id"`
	Approved bool   `json:"approved"`
	By       string `json:"by"` // page, panel, timeout, error
}

// WrapUI returns a UI that also offers the confirmation of a page action to the page
// that declared it. When only the action's own declaration asks (confirm: true), the
// first answer, the page's or the side panel's, decides, and the panel's prompt is
// withdrawn when the page answers first. When the person's policy asks
// (ConfirmRequest.ByPolicy: tools.confirm, tools.confirm_writes), the page may
// refuse its own action but never approve it: only the person's answer in the side
// panel lets it run. Confirmations of anything else (builtins, other pages' actions)
// go to ui alone: a page is never sent, and so can never answer, a call id that is
// not its own.
func (m *Manager) WrapUI(ui tools.UI) tools.UI {
	if ui == nil {
		return nil
	}
	return pageUI{m: m, ui: ui}
}

type pageUI struct {
	m  *Manager
	ui tools.UI
}

// Unwrap is the UI asked through (what it tells beyond tools.UI stays reachable).
func (u pageUI) Unwrap() tools.UI { return u.ui }

func (u pageUI) Ask(ctx context.Context, req tools.AskRequest) (tools.AskAnswer, error) {
	return u.ui.Ask(ctx, req)
}

// ConfirmLasting passes a lasting answer on (tools.LastingUI) for what only the side
// panel answers; a page's own confirmation is never a lasting one.
func (u pageUI) ConfirmLasting(ctx context.Context, req tools.ConfirmRequest) (tools.ConfirmAnswer, error) {
	if !u.pageMayAnswer(req) {
		return tools.ConfirmWhole(ctx, u.ui, req)
	}
	ok, err := u.Confirm(ctx, req)
	return tools.ConfirmAnswer{Approved: ok}, err
}

// pageMayAnswer: a page answers only for its own action, and never for a call that
// would carry a run's data elsewhere (that is the person's to approve).
func (u pageUI) pageMayAnswer(req tools.ConfirmRequest) bool {
	return req.Source == tools.SourcePage && req.Flow == nil && req.TabID > 0 && u.m.br != nil && u.m.declares(req.TabID, req.FrameID, req.Tool)
}

func (u pageUI) Confirm(ctx context.Context, req tools.ConfirmRequest) (bool, error) {
	if !u.pageMayAnswer(req) {
		return u.ui.Confirm(ctx, req)
	}
	rctx, cancel := context.WithCancel(ctx)
	type answer struct {
		page     bool
		decided  bool
		approved bool
		err      error
	}
	ch := make(chan answer, 2)
	go func() {
		ok, err := u.ui.Confirm(rctx, req)
		ch <- answer{decided: err == nil, approved: ok, err: err}
	}()
	go func() {
		var out ConfirmAnswer
		err := u.m.br.Call(rctx, "page.action.confirm", ConfirmParams{
			TabID: req.TabID, FrameID: req.FrameID, CallID: req.CallID, ID: req.Tool,
			Arguments: req.Arguments, Message: req.Message, TimeoutMS: req.TimeoutMS,
		}, &out)
		// A page's yes does not stand in for the person the policy asks for.
		decided := err == nil && out.Answered && (!out.Approved || !req.ByPolicy)
		ch <- answer{page: true, decided: decided, approved: out.Approved, err: err}
	}()
	var (
		got      *answer
		panelErr error
	)
	for range 2 {
		a := <-ch
		if a.decided {
			got = &a
			break
		}
		if !a.page {
			panelErr = a.err
		}
	}
	cancel() // withdraws the panel's prompt or the page's, whichever still waits
	done := ConfirmDone{TabID: req.TabID, FrameID: req.FrameID, CallID: req.CallID}
	switch {
	case got != nil && got.page:
		done.Approved, done.By = got.approved, "page"
	case got != nil:
		done.Approved, done.By = got.approved, "panel"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		done.By = "timeout"
	default:
		done.By = "error"
	}
	go func() {
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer dcancel()
		if err := u.m.br.Call(dctx, "page.action.confirm.done", done, nil); err != nil {
			u.m.log.Debug().Err(err).Str("call_id", req.CallID).Msg("page.action.confirm.done")
		}
	}()
	if got != nil {
		return got.approved, nil
	}
	if panelErr == nil {
		panelErr = ctx.Err()
	}
	if panelErr == nil {
		panelErr = errors.New("nobody answered")
	}
	return false, panelErr
}

// declares reports whether the frame declares the action now.
func (m *Manager) declares(tab, fr int, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.frame(tab, fr)
	if f == nil {
		return false
	}
	_, ok := f.decls[id]
	return ok
}
