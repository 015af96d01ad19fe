package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ferryhq/ferry/host/agent"
	"github.com/ferryhq/ferry/host/browser"
	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/pageactions"
	"github.com/ferryhq/ferry/host/search"
	"github.com/ferryhq/ferry/host/tasks"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/host/web"
	"github.com/ferryhq/ferry/host/workspace"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// Toolbox is the tool registry with the audit log behind it, and the agent that
// uses them.
type Toolbox struct {
	Registry *tools.Registry
	Audit    *storage.AuditLog
	Agent    *agent.Manager
	// Pages holds the actions pages declare, per tab and frame (page.actions.*).
	Pages *pageactions.Manager
}

// Close marks live runs interrupted (so they can be resumed) and writes every queued
// audit row. Call it before closing the database.
func (t *Toolbox) Close() error {
	t.Agent.Close()
	return t.Audit.Close()
}

// Extension is the browser side of the host while it is connected: the tab tools
// and the live task list go through its connection. The CLI passes nil.
type Extension interface {
	Conn() *protocol.Conn // nil while no extension is connected
}

// OpenToolbox builds the registry every caller uses: host mode and `ferry tools` /
// `ferry call` / `ferry run` all come through here, so the tools they offer can never
// differ.
func OpenToolbox(db *storage.DB, log zerolog.Logger, ext Extension) (*Toolbox, error) {
	conn := func() *protocol.Conn {
		if ext == nil {
			return nil
		}
		return ext.Conn()
	}
	audit := db.OpenAuditLog(storage.AuditOptions{
		Retention: func() time.Duration { return tools.AuditRetention(context.Background(), db) },
		OnError:   func(err error) { log.Error().Err(err).Msg("audit log") },
	})
	reg := tools.NewRegistry(tools.Options{Settings: db, Audit: audit, Log: log, Now: db.Now})
	onTasks := func(conversationID string, list []tasks.Task) {
		if c := conn(); c != nil {
			c.Notify("tasks.changed", map[string]any{"conversation_id": conversationID, "tasks": list})
		}
	}
	builtins := []tools.Tool{tools.AskUser(reg)}
	sum := summarizer{db}
	builtins = append(builtins, web.Tools(web.Deps{Settings: db, Summarizer: sum})...)
	builtins = append(builtins, search.Tools(search.Deps{Settings: db, Secrets: db})...)
	builtins = append(builtins, workspace.Tools(workspace.Deps{Store: db})...)
	builtins = append(builtins, tasks.Tools(tasks.Deps{Store: db, OnChange: onTasks})...)
	// The browser tools are registered even without a browser: they are listed as
	// unavailable with the reason, and the model learns why it cannot use them.
	builtins = append(builtins, browser.Tools(browser.Deps{Browser: browser.ConnBrowser(conn), Settings: db, Summarizer: sum})...)
	for _, t := range builtins {
		if err := reg.Register(t); err != nil {
			audit.Close()
			return nil, fmt.Errorf("registering builtin tool: %w", err)
		}
	}
	pages := pageactions.New(reg, browser.ConnBrowser(conn), log)
	// The manager registers the agent tool (sub-agents) into the registry itself.
	mgr, err := agent.NewManager(agent.Options{
		DB: db, Registry: reg, Log: log,
		Open: func(ctx context.Context, id string) (model.Provider, error) { return model.Open(ctx, db, id) },
		Notify: func(ev agent.Event) {
			if c := conn(); c != nil {
				c.Notify("chat.event", ev)
			}
		},
		Browser: func() bool { return conn() != nil },
		Page:    pages,
	})
	if err != nil {
		audit.Close()
		return nil, fmt.Errorf("starting the agent: %w", err)
	}
	// ferry.ask starts runs bound to the page's tab; the per-origin settings live in db.
	pages.SetAsk(pageactions.AskDeps{Settings: db, Agent: mgr})
	return &Toolbox{Registry: reg, Audit: audit, Agent: mgr, Pages: pages}, nil
}

// connUI asks the person through the extension over the native connection.
type connUI struct {
	conn   *protocol.Conn
	panels *panelCount // what the extension said of its open side panels
}

func (u connUI) Confirm(ctx context.Context, req tools.ConfirmRequest) (bool, error) {
	var out struct {
		Approved bool `json:"approved"`
	}
	if err := u.conn.Call(ctx, "ui.confirm", req, &out); err != nil {
		u.withdraw(ctx, req.CallID)
		return false, err
	}
	return out.Approved, nil
}

func (u connUI) Ask(ctx context.Context, req tools.AskRequest) (tools.AskAnswer, error) {
	var out tools.AskAnswer
	if err := u.conn.Call(ctx, "ui.ask", req, &out); err != nil {
		u.withdraw(ctx, req.CallID)
		return tools.AskAnswer{}, err
	}
	return out, nil
}

// withdraw tells the UI to take down a prompt nobody waits for any more.
func (u connUI) withdraw(ctx context.Context, callID string) {
	if ctx.Err() != nil {
		reason := "cancelled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = "timeout"
		}
		u.conn.Notify("ui.cancel", map[string]string{"call_id": callID, "reason": reason})
	}
}

type toolsListParams struct {
	TabID int `json:"tab_id,omitempty"`
	// Model asks for what the model is offered: without page actions outside the
	// page's active region.
	Model bool `json:"model,omitempty"`
}

func (h *Host) toolsList(ctx context.Context, raw json.RawMessage) (any, error) {
	var p toolsListParams
	if err := protocol.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	list := h.Tools.Registry.List
	if p.Model {
		list = h.Tools.Registry.ModelList
	}
	avail, unavail := list(ctx, p.TabID)
	return map[string]any{"tools": avail, "unavailable": unavail, "tokens": tools.TotalTokens(avail)}, nil
}

type toolsCallParams struct {
	Name           string          `json:"name"`
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	TabID          int             `json:"tab_id,omitempty"`
	Caller         string          `json:"caller,omitempty"`
	Origin         string          `json:"origin,omitempty"`
	TraceID        string          `json:"trace_id,omitempty"`
	ParentTrace    string          `json:"parent_trace,omitempty"`
	Depth          int             `json:"depth,omitempty"`
	ConversationID string          `json:"conversation_id,omitempty"`
	RunID          string          `json:"run_id,omitempty"`
}

// toolsCall runs one call through the pipeline. Failures of the call are results
// ({success: false, code, reason}), not JSON-RPC errors: only a malformed request is.
func (h *Host) toolsCall(ctx context.Context, raw json.RawMessage) (any, error) {
	var p toolsCallParams
	if err := protocol.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: tools.call needs the tool's name")
	}
	if p.Depth < 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: depth cannot be negative")
	}
	caller := p.Caller
	if caller == "" {
		caller = "extension"
	}
	res := h.Tools.Registry.Call(ctx, &tools.Call{
		Tool: p.Name, Arguments: p.Arguments, TabID: p.TabID, Caller: caller, Origin: p.Origin,
		TraceID: p.TraceID, ParentTrace: p.ParentTrace, Depth: p.Depth,
		ConversationID: p.ConversationID, RunID: p.RunID,
	})
	return res, nil
}

type auditParams struct {
	Since  string `json:"since,omitempty"`
	Until  string `json:"until,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Code   string `json:"code,omitempty"`
	Origin string `json:"origin,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

func (p auditParams) filter() (storage.AuditFilter, error) {
	f := storage.AuditFilter{Tool: p.Tool, Code: p.Code, Origin: p.Origin, Limit: p.Limit}
	for _, t := range []struct {
		name string
		v    string
		dst  *time.Time
	}{{"since", p.Since, &f.Since}, {"until", p.Until, &f.Until}} {
		if t.v == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339Nano, t.v)
		if err != nil {
			return f, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %s must be an RFC 3339 time like 2026-01-02T15:04:05Z", t.name)
		}
		*t.dst = v
	}
	if p.Limit < 0 {
		return f, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: limit cannot be negative")
	}
	return f, nil
}

// auditQuery answers the options page: rows newest first.
func (h *Host) auditQuery(ctx context.Context, raw json.RawMessage) (any, error) {
	var p auditParams
	if err := protocol.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	f, err := p.filter()
	if err != nil {
		return nil, err
	}
	// Rows still queued in this process would be missing from a fresh query.
	h.Tools.Audit.Flush(ctx)
	rows, err := h.DB.QueryAudit(ctx, f)
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []storage.AuditEntry{}
	}
	return map[string]any{"entries": rows}, nil
}

// auditExport returns the matching rows as JSON Lines, oldest first.
func (h *Host) auditExport(ctx context.Context, raw json.RawMessage) (any, error) {
	var p auditParams
	if err := protocol.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	f, err := p.filter()
	if err != nil {
		return nil, err
	}
	h.Tools.Audit.Flush(ctx)
	var b bytes.Buffer
	n, err := h.DB.ExportAuditJSONL(ctx, &b, f)
	if err != nil {
		return nil, err
	}
	return map[string]any{"count": n, "jsonl": b.String()}, nil
}
