package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

// SubAgentType is one kind of sub-agent: what it is for and which tools it gets.
type SubAgentType struct {
	Name    string
	Purpose string
	// Tools are the tool names it may use; nil means every tool. Page actions are
	// allowed by Pages.
	Tools map[string]bool
	Pages bool
}

func names(ns ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range ns {
		m[n] = true
	}
	return m
}

// No sub-agent gets ask_user (a sub-agent works without stopping the person) or
// agent (no recursion).
var never = names("ask_user", "agent")

// The tool sets the types are made of. pageReading only reads: it is the researcher's
// view of the tabs.
var (
	taskTools   = []string{"create_task", "update_task", "list_tasks"}
	pageReading = []string{"list_tabs", "get_tab_content", "browser_snapshot", "browser_info", "browser_screenshot"}
	tabTools    = []string{"open_tab", "close_tab", "activate_tab"}
	pageActing  = []string{"browser_click", "browser_type", "browser_select", "browser_scroll", "browser_navigate",
		"browser_dialog", "browser_console", "browser_network", "execute_script"}
)

// SubAgentTypes are the types the agent tool accepts. A researcher reads and changes
// nothing: no tool of kind write, nothing that navigates or opens a tab, no workspace
// and no task list (a test holds every tool it gets to kind read). A page_operator
// manages tabs and works pages: the page's own declared actions too. Tools that are
// not registered (no browser) are simply absent from what a sub-agent is offered.
var SubAgentTypes = map[string]SubAgentType{
	"researcher": {Name: "researcher", Purpose: "searches and reads the web and the tabs; changes nothing",
		Tools: names(append([]string{"web_search", "web_fetch"}, pageReading...)...)},
	"page_operator": {Name: "page_operator", Purpose: "manages tabs, reads and works pages",
		Tools: names(append(append(append(append([]string(nil), pageReading...), tabTools...), pageActing...), taskTools...)...),
		Pages: true},
	"general": {Name: "general", Purpose: "every tool; the default"},
}

// SubAgentTypeNames lists the types in order, for messages and the schema.
func SubAgentTypeNames() []string {
	out := make([]string, 0, len(SubAgentTypes))
	for n := range SubAgentTypes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// rule is the type's tool list as a scope rule: the pipeline's permit step refuses
// what it leaves out, and the run offers only what it allows.
func (t SubAgentType) rule() tools.Allow {
	return tools.Allow{Who: "a " + t.Name + " sub-agent", Permits: t.allows}
}

func (t SubAgentType) allows(name, modelName string, source tools.Source) bool {
	if never[name] || never[modelName] {
		return false
	}
	if t.Tools == nil {
		return true
	}
	if source == tools.SourcePage {
		return t.Pages
	}
	return t.Tools[name] || t.Tools[modelName]
}

// errSubTimeout ends a sub-agent that ran past its time.
var errSubTimeout = errors.New("the sub-agent did not finish in time")

// scheduler bounds how many sub-agents run at once; the rest wait in a first come,
// first served queue. The limit is read on every acquire, so a changed setting takes
// effect for the next sub-agent.
type scheduler struct {
	limit  func() int
	mu     sync.Mutex
	active int
	queue  []chan struct{}
}

func newScheduler(limit func() int) *scheduler { return &scheduler{limit: limit} }

// acquire waits for a slot; the returned function gives it back.
func (s *scheduler) acquire(ctx context.Context) (release func(), err error) {
	s.mu.Lock()
	if s.active < max(s.limit(), 1) && len(s.queue) == 0 {
		s.active++
		s.mu.Unlock()
		return s.release, nil
	}
	ch := make(chan struct{})
	s.queue = append(s.queue, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return s.release, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, c := range s.queue {
			if c == ch {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				return nil, context.Cause(ctx)
			}
		}
		// The slot was handed over as ctx ended: pass it on.
		s.active--
		s.wakeLocked()
		return nil, context.Cause(ctx)
	}
}

func (s *scheduler) release() {
	s.mu.Lock()
	s.active--
	s.wakeLocked()
	s.mu.Unlock()
}

// wakeLocked hands free slots to the queue's head.
func (s *scheduler) wakeLocked() {
	for len(s.queue) > 0 && s.active < max(s.limit(), 1) {
		ch := s.queue[0]
		s.queue = s.queue[1:]
		s.active++
		close(ch)
	}
}

type agentArgs struct {
	Prompt      string `json:"prompt"`
	Description string `json:"description"`
	Type        string `json:"type"`
	TabID       int    `json:"tab_id"`
}

// Tool is the agent tool: it starts a sub-agent with its own context on a sub-task
// and returns its final answer. NewManager registers it; it is exported for a caller
// that builds a registry of its own.
func Tool(m *Manager) tools.Tool {
	types := SubAgentTypeNames()
	var desc strings.Builder
	desc.WriteString("Start a sub-agent on a self-contained sub-task, in its own context, and get its final answer; calls in one turn run at once. " +
		"It sees nothing of this conversation: put all it needs in prompt. It cannot ask the user or start sub-agents. type:")
	for i, n := range types {
		if i > 0 {
			desc.WriteString(",")
		}
		fmt.Fprintf(&desc, " %s (%s)", n, SubAgentTypes[n].Purpose)
	}
	desc.WriteString(".")
	enum, _ := json.Marshal(types)
	return tools.Tool{
		Name:        "agent",
		Description: desc.String(),
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "prompt": {"type": "string", "minLength": 1},
    "description": {"type": "string", "description": "a few words shown to the user"},
    "type": {"type": "string", "enum": ` + string(enum) + `},
    "tab_id": {"type": "integer", "description": "the tab it works on"}
  },
  "required": ["prompt"],
  "additionalProperties": false
}`),
		Source: tools.SourceBuiltin,
		// Read: its own calls go through the pipeline one by one, each with its
		// kind; marking the agent call itself a write would serialise sibling
		// sub-agents, which is the point of having them.
		Kind: tools.KindRead,
		// The pipeline's run timeout must not cut a sub-agent before its own.
		Timeout: m.opts.SubagentTimeout + time.Minute,
		// Its own calls are each judged; its answer is a model's words carrying what
		// the shared context holds, and no URL in it counts as content seen.
		Class:   tools.ClassLocal,
		Effects: func(context.Context, *tools.Call) (tools.Effect, error) { return tools.Effect{}, nil },
		Provenance: func(*tools.Call, tools.Effect, *tools.Result) tools.Provenance {
			return tools.Provenance{Reads: []tools.Read{{Context: true}}}
		},
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			var a agentArgs
			if err := call.Decode(&a); err != nil {
				return nil, tools.Failf(tools.CodeInvalidParams, "invalid params: %v", err)
			}
			if a.Type == "" {
				a.Type = "general"
			}
			t, ok := SubAgentTypes[a.Type]
			if !ok {
				return nil, tools.Failf(tools.CodeInvalidParams, "invalid params: unknown sub-agent type %q; the types are %s", a.Type, strings.Join(types, ", "))
			}
			return m.subAgent(ctx, call, a, t)
		},
	}
}

// subAgent runs one sub-agent to its end, within the concurrency limit and its time,
// forwarding its events to the parent run.
func (m *Manager) subAgent(ctx context.Context, call *tools.Call, a agentArgs, t SubAgentType) (any, error) {
	parent := runFromContext(ctx)
	if parent != nil && parent.parent != nil {
		return nil, tools.Failf(tools.CodePermissionDenied, "a sub-agent cannot start sub-agents of its own")
	}
	if parent != nil {
		if !parent.addChild() {
			return nil, fmt.Errorf("the run that asked for this sub-agent has ended")
		}
		defer parent.childDone()
	}
	release, err := m.sched.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("cancelled while waiting for a sub-agent slot: %w", err)
	}
	defer release()

	var prov model.Provider
	if parent != nil {
		prov = parent.prov
	} else if prov, err = m.opts.Open(ctx, ""); err != nil {
		return nil, tools.Failf(tools.CodeActionUnavailable, "no model for the sub-agent: %v", err)
	}
	sub := m.newRun(call.ConversationID, prov)
	sub.parent, sub.agentType = parent, t.Name
	// What the call that asked for it could reach, narrowed to the type's tools: an
	// outside agent's allowed tools and the parent run's data-flow gate travel on.
	sub.scope = call.Scope.Narrow(t.rule(), sub.ID, m.budget(ctx))
	sub.scope.ConversationID = call.ConversationID
	if sub.scope.Gate == nil && m.opts.Flow != nil {
		// Started outside any run (an outside agent or the person called the agent
		// tool): a state of its own, whose prompt is its caller's words.
		g := m.opts.Flow.Open(ctx, "")
		if call.Scope == nil || call.Scope.Principal != tools.PrincipalPage {
			g.Person(ctx, a.Prompt)
		}
		sub.scope.Gate = g
	}
	sub.traceID, sub.depth = call.TraceID, call.Depth+1
	sub.tabID = a.TabID
	if sub.tabID == 0 && parent != nil {
		sub.tabID = parent.tabID
	}
	sub.extra = fmt.Sprintf("# You are a sub-agent\n\nYou are a %s sub-agent (%s), started by another agent to carry out one sub-task. The user does not see your messages: your final answer is returned to the agent that started you, so make it complete and self-contained, and say plainly what you could not do.", t.Name, t.Purpose)
	if a.TabID != 0 {
		sub.extra += fmt.Sprintf(" Work on tab %d.", a.TabID)
	}
	sub.history = []model.Message{{Role: model.RoleUser, Content: a.Prompt}}
	sub.ordinals = []int64{0}

	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	// The sub-agent's run is recorded (with its model calls) under its parent's,
	// so the diagnostics view shows what it was given.
	if parent != nil && parent.stored {
		info := prov.Info()
		if _, err := m.db.CreateRun(ctx, storage.Run{ID: sub.ID, ConversationID: call.ConversationID, ParentRunID: parent.ID,
			AgentType: t.Name, ProviderID: info.ID, Model: info.Model}); err == nil {
			sub.stored = true
		} else {
			m.log.Warn().Err(err).Msg("recording a sub-agent's run")
		}
	}
	if parent != nil {
		sub.bus.subscribe(func(ev Event) {
			parent.publish(Event{Type: EventSubAgent, ParentCallID: call.ID, Description: a.Description, AgentType: t.Name, Event: &ev})
		})
	}

	// Cancelling the parent cancels ctx, which ends the sub-agent too.
	tctx, cancel := context.WithTimeoutCause(ctx, m.opts.SubagentTimeout, errSubTimeout)
	defer cancel()
	stop := context.AfterFunc(tctx, func() { sub.cancel(context.Cause(tctx)) })
	defer stop()

	m.mu.Lock()
	m.runs[sub.ID] = sub
	m.mu.Unlock()
	sub.onEnd = func() {
		m.mu.Lock()
		delete(m.runs, sub.ID)
		m.mu.Unlock()
	}

	sub.execute()
	out := sub.out
	switch {
	case out.Status == storage.RunCompleted:
		return out.Text, nil
	case errors.Is(context.Cause(tctx), errSubTimeout):
		return nil, tools.Failf(tools.CodeTimeout, "the %s sub-agent did not finish within %s; what it did may have had effects", t.Name, m.opts.SubagentTimeout)
	default:
		return nil, fmt.Errorf("the %s sub-agent ended %s: %s", t.Name, out.Status, out.Error)
	}
}
