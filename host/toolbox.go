package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ferryhq/ferry/host/search"
	"github.com/ferryhq/ferry/host/tasks"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/host/web"
	"github.com/ferryhq/ferry/host/workspace"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// Toolbox is the tool registry with the audit log behind it.
type Toolbox struct {
	Registry *tools.Registry
	Audit    *storage.AuditLog
}

// Close writes every queued audit row. Call it before closing the database.
func (t *Toolbox) Close() error { return t.Audit.Close() }

// OpenToolbox builds the registry every caller uses: host mode and `ferry tools` /
// `ferry call` both come through here, so the tools they offer can never differ.
//
// notify, when set, sends a notification to the connected UI (the task list's live
// updates); the CLI passes nil.
func OpenToolbox(db *storage.DB, log zerolog.Logger, notify func(method string, params any)) (*Toolbox, error) {
	audit := db.OpenAuditLog(storage.AuditOptions{
		Retention: func() time.Duration { return tools.AuditRetention(context.Background(), db) },
		OnError:   func(err error) { log.Error().Err(err).Msg("audit log") },
	})
	reg := tools.NewRegistry(tools.Options{Settings: db, Audit: audit, Log: log, Now: db.Now})
	onTasks := func(conversationID string, list []tasks.Task) {
		if notify != nil {
			notify("tasks.changed", map[string]any{"conversation_id": conversationID, "tasks": list})
		}
	}
	builtins := []tools.Tool{tools.AskUser(reg)}
	// No Summarizer yet: web_fetch's prompt says a model must be configured first.
	builtins = append(builtins, web.Tools(web.Deps{Settings: db})...)
	builtins = append(builtins, search.Tools(search.Deps{Settings: db, Secrets: db})...)
	builtins = append(builtins, workspace.Tools(workspace.Deps{Store: db})...)
	builtins = append(builtins, tasks.Tools(tasks.Deps{Store: db, OnChange: onTasks})...)
	for _, t := range builtins {
		if err := reg.Register(t); err != nil {
			audit.Close()
			return nil, fmt.Errorf("registering builtin tool: %w", err)
		}
	}
	return &Toolbox{Registry: reg, Audit: audit}, nil
}

// connUI asks the person through the extension over the native connection.
type connUI struct{ conn *protocol.Conn }

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
}

func (h *Host) toolsList(ctx context.Context, raw json.RawMessage) (any, error) {
	var p toolsListParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	avail, unavail := h.Tools.Registry.List(ctx, p.TabID)
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
	if err := decodeParams(raw, &p); err != nil {
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
	if err := decodeParams(raw, &p); err != nil {
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
	if err := decodeParams(raw, &p); err != nil {
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
