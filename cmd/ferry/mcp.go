package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/agent"
	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/control"
	"github.com/ferryhq/ferry/host/toolbox"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// mcpPoll is how often `ferry mcp` looks at the host's tool list (the bound tab's
// page actions, what the allowed-tools setting offers) and at whether a browser host came or
// went. Changes reach the client as notifications/tools/list_changed.
const mcpPoll = time.Second

// mcpCallTimeout bounds one forwarded call: long enough for a confirmation in the
// side panel and the tool's own timeout.
const mcpCallTimeout = 10 * time.Minute

const mcpInstructions = `Ferry is an AI browser agent. Its tools here are the host's builtin tools, the browser tools (when a browser with the Ferry extension runs), and the verified business actions of the page in the bound tab. Use ferry_list_tabs, then ferry_bind_tab {tab_id} to expose a tab's page actions; prefer them to clicking. Results are {success, result} or {success: false, code, reason}; a tool call the person must confirm waits for an answer in Ferry's side panel.`

func cmdMCP(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hostPID := fs.Int("host", 0, "the pid of the running browser host to use (default: the most recently active)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ferry mcp [--host PID]\n\nAn MCP server on stdin/stdout for other agents (Claude Code: `claude mcp add ferry -- ferry mcp`).\nIt serves the running browser host's tools through its control socket, or the\nhost-only tools when no browser runs. Setting "+control.SettingAllowedTools+" lists the tools it offers.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	dataDir, err := storage.DefaultDataDir()
	if err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true}).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	s := &mcpServer{dataDir: dataDir, pid: *hostPID, db: db, settings: config.NewLive(db, nil), log: log, stderr: stderr, current: map[string]string{}}
	defer s.closeBackend()
	s.server = mcp.NewServer(&mcp.Implementation{Name: "ferry", Title: "Ferry", Version: buildinfo.Version},
		// The tools' shared words (tab_id, refs and selectors, approvals) are said once,
		// as the agent's system prompt says them, not in every tool's description.
		&mcp.ServerOptions{Instructions: mcpInstructions + "\n\n" + agent.ToolGuide,
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	s.addMetaTools()
	s.server.AddReceivingMiddleware(s.unlisted)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.connect(ctx)
	s.refresh(ctx)
	go s.poll(ctx)
	if err := s.server.Run(ctx, &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		fmt.Fprintln(stderr, "ferry mcp:", err)
		return 1
	}
	return 0
}

type mcpServer struct {
	server   *mcp.Server
	dataDir  string
	pid      int
	db       *storage.DB
	settings *config.Live // mcp.allowed_tools
	log      zerolog.Logger
	stderr   io.Writer

	mu      sync.Mutex
	client  *control.Client  // the live host, or nil
	tb      *toolbox.Toolbox // the local registry when no host runs (opened lazily)
	tab     int              // the bound tab
	current map[string]string
}

// connect binds to a live host when one runs; otherwise calls run locally.
func (s *mcpServer) connect(ctx context.Context) {
	c, err := control.DialAs(ctx, s.dataDir, s.pid, control.ClientMCP)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.client = c
		fmt.Fprintf(s.stderr, "ferry mcp: serving the browser host pid %d (%s)\n", c.Info.PID, c.Info.Origin)
		return
	}
	if s.tb == nil {
		fmt.Fprintf(s.stderr, "ferry mcp: %v; serving the host-only tools (browser tools say no browser is connected)\n", err)
	}
}

func (s *mcpServer) closeBackend() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
	if s.tb != nil {
		s.tb.Close()
		s.tb = nil
	}
}

// local is the registry of this process, built on first use.
func (s *mcpServer) local() (*toolbox.Toolbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tb == nil {
		tb, err := toolbox.Open(s.db, s.log, nil)
		if err != nil {
			return nil, err
		}
		s.tb = tb
	}
	return s.tb, nil
}

func (s *mcpServer) live() *control.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		select {
		case <-s.client.Done():
			fmt.Fprintln(s.stderr, "ferry mcp: the browser host went away")
			s.client = nil
		default:
		}
	}
	return s.client
}

func (s *mcpServer) poll(ctx context.Context) {
	t := time.NewTicker(mcpPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.live() == nil {
			s.connect(ctx)
		}
		s.refresh(ctx)
	}
}

// list is the tools to offer: a live host's available tools for the bound tab, or
// every local tool (the browser ones say why they cannot run).
func (s *mcpServer) list(ctx context.Context) ([]tools.Listing, error) {
	s.mu.Lock()
	tab := s.tab
	s.mu.Unlock()
	if c := s.live(); c != nil {
		var out struct {
			Tools []tools.Listing `json:"tools"`
		}
		// The host offers only what an outside agent's scope may call.
		err := c.Call(ctx, "tools.list", map[string]int{"tab_id": tab}, &out)
		return out.Tools, err
	}
	tb, err := s.local()
	if err != nil {
		return nil, err
	}
	// Here nobody can ever answer ask_user: without a browser host there is no side
	// panel, so it is not offered (browser tools are, and say no browser runs).
	var out []tools.Listing
	for _, l := range tb.Registry.Offered(ctx, mcpScope(), tb.Registry.All(0)) {
		if l.Name != tools.AskUserName {
			out = append(out, l)
		}
	}
	return out, nil
}

// mcpScope is an outside agent's scope, for the calls this process runs itself.
func mcpScope() *tools.Scope {
	return &tools.Scope{Principal: tools.PrincipalMCP, Outside: true}
}

func (s *mcpServer) call(ctx context.Context, name string, args json.RawMessage, tab int) (tools.Result, error) {
	if c := s.live(); c != nil {
		ctx, cancel := context.WithTimeout(ctx, mcpCallTimeout)
		defer cancel()
		var res tools.Result
		err := c.Call(ctx, "tools.call", map[string]any{"name": name, "arguments": args, "tab_id": tab}, &res)
		return res, err
	}
	tb, err := s.local()
	if err != nil {
		return tools.Result{}, err
	}
	// This process is the session: its repeats and rate are its own.
	ctx = tools.WithSession(ctx, "mcp-"+strconv.Itoa(os.Getpid()))
	return tb.Registry.Call(ctx, &tools.Call{Tool: name, Arguments: args, Caller: tools.PrincipalMCP, Scope: mcpScope()}), nil
}

// refresh brings the MCP tool list in line with the host's; the SDK tells the client
// (tools/list_changed) when it changes.
func (s *mcpServer) refresh(ctx context.Context) {
	ls, err := s.list(ctx)
	if err != nil {
		s.log.Warn().Err(err).Msg("listing the host's tools")
		return
	}
	want := map[string]tools.Listing{}
	for _, l := range ls {
		want[mcpName(l)] = l
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for name := range s.current {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(s.current, name)
		}
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		s.server.RemoveTools(gone...)
	}
	for name, l := range want {
		sig, _ := json.Marshal(l)
		if s.current[name] == string(sig) {
			continue
		}
		s.current[name] = string(sig)
		s.server.AddTool(mcpTool(l), s.forward(l.ModelName))
	}
}

// mcpNamePattern is what MCP allows in a tool name: dots included, which the model
// vendors' own function names do not take (ModelName maps those).
var mcpNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// mcpName is the name a client sees: the registered name where MCP allows it
// ("cart.add" stays "cart.add"), else the model-visible one ("cart:add" is "cart__add").
func mcpName(l tools.Listing) string {
	if mcpNamePattern.MatchString(l.Name) {
		return l.Name
	}
	return l.ModelName
}

func mcpTool(l tools.Listing) *mcp.Tool {
	// The schema every client takes (tools.Portable); the host still validates the
	// arguments against the whole of it.
	var schema map[string]any
	if json.Unmarshal(tools.Portable(l.Parameters), &schema) != nil {
		schema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	desc := l.Description
	if l.Source == tools.SourcePage {
		desc += fmt.Sprintf(" (page action of %s in tab %d)", l.Origin, l.TabID)
	}
	if l.Confirm {
		desc += " A person confirms it in Ferry's side panel before it runs."
	}
	return &mcp.Tool{Name: mcpName(l), Title: l.Title, Description: desc, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: l.Kind == tools.KindRead}}
}

// forward calls a host tool for the client. Every unsuccessful result is isError,
// with Ferry's result (code, reason) as structured content and as JSON text.
// What an outside agent may call is the host's pipeline to decide (and audit).
func (s *mcpServer) forward(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.mu.Lock()
		tab := s.tab
		s.mu.Unlock()
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		res, err := s.call(ctx, name, args, tab)
		if err != nil {
			return toolResult(tools.Result{Code: tools.CodeHandlerError, Reason: "the browser host did not answer: " + err.Error()}), nil
		}
		return toolResult(res), nil
	}
}

// metaTools are the tools `ferry mcp` answers itself (addMetaTools).
var metaTools = map[string]bool{"ferry_list_tabs": true, "ferry_bind_tab": true}

// unlisted hands a call of a tool the client was not offered (one mcp.allowed_tools
// excludes, one the bound tab no longer declares, a name that never existed) to the
// host's pipeline instead of the SDK's "unknown tool" error: the pipeline refuses it
// with its code, and its refusal is an audit row like every other call an outside
// agent makes, with or without a browser host.
func (s *mcpServer) unlisted(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || r.Params == nil || metaTools[r.Params.Name] {
			return next(ctx, method, req)
		}
		s.mu.Lock()
		_, listed := s.current[r.Params.Name]
		s.mu.Unlock()
		if listed {
			return next(ctx, method, req)
		}
		return s.forward(r.Params.Name)(ctx, r)
	}
}

func toolResult(res tools.Result) *mcp.CallToolResult {
	b, err := json.Marshal(res)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"success":false,"code":"HANDLER_ERROR","reason":%q}`, err.Error()))
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
		IsError:           !res.Success,
	}
}

// addMetaTools adds the tools that choose the tab whose page actions are offered.
func (s *mcpServer) addMetaTools() {
	s.server.AddTool(&mcp.Tool{Name: "ferry_list_tabs",
		Description: "List the browser's open tabs (tab_id, URL, title) and the tab this session is bound to. Bind one with ferry_bind_tab to use its page actions.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if s.live() == nil {
				return toolResult(noBrowser()), nil
			}
			res, err := s.call(ctx, "list_tabs", json.RawMessage(`{}`), 0)
			if err != nil {
				return toolResult(tools.Result{Code: tools.CodeHandlerError, Reason: err.Error()}), nil
			}
			if res.Success {
				// list_tabs answers {tabs: [...]}; hand out the list itself, not {tabs: {tabs: [...]}}.
				tabs := res.Result
				if m, ok := tabs.(map[string]any); ok && m["tabs"] != nil {
					tabs = m["tabs"]
				}
				s.mu.Lock()
				res.Result = map[string]any{"tabs": tabs, "bound_tab_id": s.tab}
				s.mu.Unlock()
			}
			return toolResult(res), nil
		})
	s.server.AddTool(&mcp.Tool{Name: "ferry_bind_tab",
		Description: "Bind this session to a tab: its page's declared actions become tools here (and stay current as the page changes). tab_id 0 unbinds.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"tab_id": map[string]any{"type": "integer", "minimum": 0, "description": "the tab, from ferry_list_tabs"}},
			"required": []string{"tab_id"}, "additionalProperties": false},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var p struct {
				TabID *int `json:"tab_id"`
			}
			if req.Params == nil || json.Unmarshal(req.Params.Arguments, &p) != nil || p.TabID == nil || *p.TabID < 0 {
				return toolResult(tools.Result{Code: tools.CodeInvalidParams, Reason: "ferry_bind_tab needs tab_id, a tab from ferry_list_tabs (0 unbinds)"}), nil
			}
			if s.live() == nil {
				return toolResult(noBrowser()), nil
			}
			if *p.TabID != 0 {
				if res := s.tabExists(ctx, *p.TabID); !res.Success {
					return toolResult(res), nil
				}
			}
			s.mu.Lock()
			s.tab = *p.TabID
			s.mu.Unlock()
			s.refresh(ctx)
			ls, err := s.list(ctx)
			if err != nil {
				return toolResult(tools.Result{Code: tools.CodeHandlerError, Reason: err.Error()}), nil
			}
			actions := []string{}
			for _, l := range ls {
				if l.Source == tools.SourcePage {
					actions = append(actions, l.ModelName)
				}
			}
			return toolResult(tools.Result{Success: true, Result: map[string]any{"bound_tab_id": *p.TabID, "page_actions": actions}}), nil
		})
}

// tabExists is a success when the browser has the tab open, else the failure that
// says so: binding a tab that is not there would offer nothing and say nothing.
func (s *mcpServer) tabExists(ctx context.Context, tab int) tools.Result {
	res, err := s.call(ctx, "list_tabs", json.RawMessage(`{}`), 0)
	if err != nil {
		return tools.Result{Code: tools.CodeHandlerError, Reason: "the browser host did not answer: " + err.Error()}
	}
	if !res.Success {
		return res
	}
	b, _ := json.Marshal(res.Result)
	var out struct {
		Tabs []struct {
			TabID int `json:"tab_id"`
		} `json:"tabs"`
	}
	json.Unmarshal(b, &out)
	for _, t := range out.Tabs {
		if t.TabID == tab {
			return tools.Result{Success: true}
		}
	}
	return tools.Result{Code: tools.CodeInvalidParams, Reason: fmt.Sprintf("no open tab has the id %d: ferry_list_tabs lists the tabs", tab)}
}

func noBrowser() tools.Result {
	return tools.Result{Code: tools.CodeActionUnavailable,
		Reason: "no browser is connected: ferry mcp found no running browser host; open Chrome with the Ferry extension (it is picked up within a second)"}
}
