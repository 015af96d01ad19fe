package toolbox

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
)

// RegisterMethods adds the registry's methods: tools.list, tools.call, audit.query
// and audit.export.
func RegisterMethods(mux *protocol.Mux, tb *Toolbox) {
	protocol.Handle(mux, "tools.list", tb.toolsList, protocol.Outside)
	protocol.Handle(mux, "tools.call", tb.ToolsCall, protocol.Outside)
	protocol.Handle(mux, "audit.query", tb.auditQuery, protocol.Outside)
	protocol.Handle(mux, "audit.export", tb.auditExport, protocol.Outside)
}

type toolsListParams struct {
	TabID int `json:"tab_id,omitempty"`
	// Model asks for what the model is offered: without page actions outside the
	// page's active region.
	Model bool `json:"model,omitempty"`
}

// toolsList is tools.list: what the caller may call (an outside client's scope,
// from its context, keeps only what mcp.allowed_tools lets it use).
func (tb *Toolbox) toolsList(ctx context.Context, p toolsListParams) (any, error) {
	list := tb.Registry.List
	if p.Model {
		list = tb.Registry.ModelList
	}
	avail, unavail := list(ctx, p.TabID)
	if s := tools.ScopeFromContext(ctx); s != nil {
		avail, unavail = tb.Registry.Offered(ctx, s, avail), tb.Registry.OfferedUnavailable(ctx, s, p.TabID, unavail)
	}
	return map[string]any{"tools": avail, "unavailable": unavail, "tokens": tools.TotalTokens(avail)}, nil
}

// CallParams are tools.call's params.
type CallParams struct {
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

// ToolsCall is tools.call: one call through the pipeline. Failures of the call are
// results ({success: false, code, reason}), not JSON-RPC errors: only a malformed
// request is.
func (tb *Toolbox) ToolsCall(ctx context.Context, p CallParams) (any, error) {
	if p.Name == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: tools.call needs the tool's name")
	}
	if p.Depth < 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: depth cannot be negative")
	}
	if s := tools.ScopeFromContext(ctx); s != nil {
		// An outside client (its scope set where it connected): of the params only the
		// tool, its arguments and the tab are its to say; caller, origin, trace and
		// conversation are the host's.
		return tb.Registry.Call(ctx, &tools.Call{Tool: p.Name, Arguments: p.Arguments, TabID: p.TabID, Caller: s.Principal, Scope: s}), nil
	}
	caller := p.Caller
	if caller == "" {
		caller = "extension"
	}
	res := tb.Registry.Call(ctx, &tools.Call{
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
	Caller string `json:"caller,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

func (p auditParams) filter() (storage.AuditFilter, error) {
	f := storage.AuditFilter{Tool: p.Tool, Code: p.Code, Origin: p.Origin, Caller: p.Caller, Limit: p.Limit}
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
func (tb *Toolbox) auditQuery(ctx context.Context, p auditParams) (any, error) {
	f, err := p.filter()
	if err != nil {
		return nil, err
	}
	// Rows still queued in this process would be missing from a fresh query.
	tb.Audit.Flush(ctx)
	rows, err := tb.db.QueryAudit(ctx, f)
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []storage.AuditEntry{}
	}
	return map[string]any{"entries": rows}, nil
}

// auditExport returns the matching rows as JSON Lines, oldest first.
func (tb *Toolbox) auditExport(ctx context.Context, p auditParams) (any, error) {
	f, err := p.filter()
	if err != nil {
		return nil, err
	}
	tb.Audit.Flush(ctx)
	var b bytes.Buffer
	n, err := tb.db.ExportAuditJSONL(ctx, &b, f)
	if err != nil {
		return nil, err
	}
	return map[string]any{"count": n, "jsonl": b.String()}, nil
}
