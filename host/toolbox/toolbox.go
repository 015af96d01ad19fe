// Package toolbox assembles the tool registry every caller uses: the builtin tools,
// the browser tools, the agent and its sub-agents, the pages' declared actions and the
// audit log behind them. Host mode and `ferry tools` / `ferry call` / `ferry run` /
// `ferry mcp` all open it here, so the tools they offer can never differ; its
// methods (tools.*, audit.*) expose it on the wire.
package toolbox

import (
	"context"
	"fmt"
	"time"

	"github.com/ferryhq/ferry/host/agent"
	"github.com/ferryhq/ferry/host/browser"
	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/flow"
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
	// Settings is the one view of the settings every room reads; settings.set
	// refreshes it.
	Settings *config.Live

	db *storage.DB // the audit log's rows, for audit.*
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

// Open builds the registry over db. ext is the browser side (nil: none, ever).
func Open(db *storage.DB, log zerolog.Logger, ext Extension) (*Toolbox, error) {
	conn := func() *protocol.Conn {
		if ext == nil {
			return nil
		}
		return ext.Conn()
	}
	// One view of the settings for every room, read afresh at most once a second.
	settings := config.NewLive(db, db.Now)
	audit := db.OpenAuditLog(storage.AuditOptions{
		Retention: func() time.Duration { return tools.AuditRetention(context.Background(), settings) },
		OnError:   func(err error) { log.Error().Err(err).Msg("audit log") },
	})
	reg := tools.NewRegistry(tools.Options{Settings: settings, Audit: audit, Log: log, Now: db.Now})
	onTasks := func(conversationID string, list []tasks.Task) {
		if c := conn(); c != nil {
			c.Notify("tasks.changed", map[string]any{"conversation_id": conversationID, "tasks": list})
		}
	}
	builtins := []tools.Tool{tools.AskUser(reg)}
	sum := summarizer{db}
	builtins = append(builtins, web.Tools(web.Deps{Settings: settings, Summarizer: sum})...)
	builtins = append(builtins, search.Tools(search.Deps{Settings: settings, Secrets: db})...)
	builtins = append(builtins, workspace.Tools(workspace.Deps{Store: db})...)
	builtins = append(builtins, tasks.Tools(tasks.Deps{Store: db, OnChange: onTasks})...)
	// The browser tools are registered even without a browser: they are listed as
	// unavailable with the reason, and the model learns why it cannot use them.
	builtins = append(builtins, browser.Tools(browser.Deps{Browser: browser.ConnBrowser(conn), Settings: settings, Store: settings, Summarizer: sum})...)
	for _, t := range builtins {
		if err := reg.Register(t); err != nil {
			audit.Close()
			return nil, fmt.Errorf("registering builtin tool: %w", err)
		}
	}
	pages := pageactions.New(reg, browser.ConnBrowser(conn), log)
	// Each conversation's data-flow state, looked up in the browser and the workspace.
	flows := flow.New(flow.Deps{Browser: browser.TabLookup(browser.ConnBrowser(conn)), Store: db, Log: log})
	// The manager registers the agent tool (sub-agents) into the registry itself.
	mgr, err := agent.NewManager(agent.Options{
		DB: db, Settings: settings, Registry: reg, Log: log,
		Open: func(ctx context.Context, id string) (model.Provider, error) { return model.Open(ctx, db, id) },
		Notify: func(ev agent.Event) {
			if c := conn(); c != nil {
				c.Notify("chat.event", ev)
			}
		},
		Browser: func() bool { return conn() != nil },
		Page:    pages,
		Flow:    flows,
	})
	if err != nil {
		audit.Close()
		return nil, fmt.Errorf("starting the agent: %w", err)
	}
	// ferry.ask starts runs bound to the page's tab; the per-origin settings live in db.
	pages.SetAsk(pageactions.AskDeps{Settings: settings, Start: func(ctx context.Context, req pageactions.RunRequest) (string, string, error) {
		r, err := mgr.Send(ctx, agent.SendRequest{Text: req.Text, TabID: req.TabID, Origin: req.Origin, TraceID: req.TraceID, Depth: req.Depth, Scope: req.Scope})
		if err != nil {
			return "", "", err
		}
		return r.ConversationID, r.ID, nil
	}})
	return &Toolbox{Registry: reg, Audit: audit, Agent: mgr, Pages: pages, Settings: settings, db: db}, nil
}
