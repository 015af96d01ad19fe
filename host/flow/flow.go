// Package flow is the data-flow policy of the agent's runs: for each conversation
// the host keeps, outside the model, the origins the person designated and labels
// of everything that entered the context (whose content, private or public, written
// by the person or not), and asks the person before a call that would carry
// private data to another origin, change a page the person did not name, or destroy
// what the run did not create, once content the person did not write is in the
// context. A model that obeys every instruction it reads gets nothing of that done
// without the person's approval of the exact call.
//
// The rule in full, its reasons and its limits are in the README's Security
// section; Builtins classifies every builtin tool.
package flow

import (
	"context"
	"encoding/json"
	"sort"
	"sync"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// Browser looks up tabs (the host's browser connection).
type Browser interface {
	// TabURL is the URL of a tab's document now; tab 0 is the active tab.
	TabURL(ctx context.Context, tab int) (string, error)
}

// Workspace looks at workspace files (storage.DB satisfies it).
type Workspace interface {
	Stat(ctx context.Context, path string) (storage.FileInfo, error)
	List(ctx context.Context, dir string) ([]storage.Entry, error)
}

// Store keeps each conversation's state (storage.DB satisfies it).
type Store interface {
	ConversationFlow(ctx context.Context, conversationID string) ([]byte, error)
	SetConversationFlow(ctx context.Context, conversationID string, state []byte) error
}

// Deps is what the policy looks at. Any may be nil: without a browser a tab's origin
// is unknown (and the rule asks), without a store the state lives as long as the run.
type Deps struct {
	Browser   Browser
	Workspace Workspace
	Store     Store
	Log       zerolog.Logger
}

// Tracker hands out the state of conversations.
type Tracker struct{ deps Deps }

// New makes a tracker.
func New(d Deps) *Tracker { return &Tracker{deps: d} }

// TabOrigin is the origin of a tab's document as the browser says now; "" when it
// cannot be looked up.
func (t *Tracker) TabOrigin(ctx context.Context, tab int) string {
	if t == nil || t.deps.Browser == nil || tab <= 0 {
		return ""
	}
	u, err := t.deps.Browser.TabURL(ctx, tab)
	if err != nil {
		return ""
	}
	return OriginOf(u)
}

// Open is a conversation's gate, with its state as stored ("" : a conversation of
// its own that is never stored, for a sub-agent started outside any run).
func (t *Tracker) Open(ctx context.Context, conversationID string) *Conv {
	c := &Conv{t: t, id: conversationID, pending: map[string]string{}}
	var raw []byte
	if conversationID != "" && t.deps.Store != nil {
		var err error
		if raw, err = t.deps.Store.ConversationFlow(ctx, conversationID); err != nil {
			t.deps.Log.Warn().Err(err).Str("conversation", conversationID).Msg("reading the data-flow state; starting from the conversation's history alone")
		}
	}
	c.st = decodeState(raw)
	return c
}

// Conv is one conversation's data-flow state and the gate of its runs (tools.Gate).
// Its runs and their sub-agents share it, so what one read, the others are held to.
type Conv struct {
	t  *Tracker
	id string

	mu      sync.Mutex
	st      *State
	pending map[string]string // call id → origin of the tab it acts on, from Check to Observe
}

// Person records a message the person wrote: its URLs and sites are designated, its
// workspace paths named, and its words may go wherever the person sends them.
func (c *Conv) Person(ctx context.Context, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.say(text)
	c.st.designate(text)
	c.save(ctx)
}

// Bind designates the origin of the tab the conversation is bound to (the side
// panel's tab, ferry run's, the page that asked with ferry.ask).
func (c *Conv) Bind(ctx context.Context, origin string) {
	if origin == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.st.Designated[origin] {
		c.st.Designated[origin] = true
		c.save(ctx)
	}
}

// PageRequest records a request a page made with ferry.ask: the page's words, not
// the person's, so they are untrusted content of its origin.
func (c *Conv) PageRequest(ctx context.Context, origin, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.label(origin, Label{Private: true, Untrusted: true})
	for _, u := range urlsIn(text, "") {
		c.st.see(u)
	}
	c.save(ctx)
}

// Page records the bound tab's page context, told to the model on a turn.
func (c *Conv) Page(ctx context.Context, url string, context any) {
	origin := orUnknown(OriginOf(url))
	b, _ := json.Marshal(context)
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := c.st.label(origin, Label{Private: true, Untrusted: true})
	for _, u := range urlsIn(string(b), url) {
		changed = c.st.see(u) || changed
	}
	if changed {
		c.save(ctx)
	}
}

// Check is the rule for one call (tools.Gate).
func (c *Conv) Check(ctx context.Context, call *tools.Call, t tools.Listing) (tools.FlowVerdict, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, err := c.effect(ctx, call, t)
	if err != nil {
		return tools.FlowVerdict{}, err
	}
	if e.Tab != "" {
		c.pending[call.ID] = e.Tab
	}
	return c.st.verdict(e, t.ModelName), nil
}

// tabTools read or change the page of a tab, and their results carry that page's
// content (activate_tab and browser_scroll answer only ids and positions).
var tabTools = map[string]bool{
	"get_tab_content": true, "browser_snapshot": true, "browser_console": true, "browser_network": true,
	"browser_info": true, "browser_screenshot": true,
	"browser_type": true, "browser_select": true, "browser_click": true, "execute_script": true, "browser_dialog": true,
	"open_tab": true, "browser_navigate": true,
}

// Observe labels what a call put into the context (tools.Gate), and keeps the run's
// write set: files it created, tabs it opened.
func (c *Conv) Observe(ctx context.Context, call *tools.Call, t *tools.Listing, res *tools.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tabOrigin := c.pending[call.ID]
	delete(c.pending, call.ID)
	if t == nil {
		return
	}
	a := decode(call.Arguments)
	var result map[string]any
	if res.Success {
		if b, err := json.Marshal(res.Result); err == nil {
			result = decode(b)
		}
	}
	str := func(k string) string { s, _ := result[k].(string); return s }
	changed := false
	var sources []string
	add := func(src string, l Label) {
		changed = c.st.label(src, l) || changed
		if l.Untrusted {
			sources = append(sources, src)
		}
	}
	base := ""
	name := t.Name
	switch {
	case t.Source == tools.SourcePage:
		// Whatever the page answers, its reason too, is the page's text.
		add(t.Origin, Label{Private: true, Untrusted: true})
	case tabTools[name]:
		if name == "execute_script" && a.str("target") != "page" {
			break // a sandbox computes on what the model gave it
		}
		if !res.Success && name != "execute_script" {
			break
		}
		u := str("url")
		origin := OriginOf(u)
		if origin == "" {
			origin = tabOrigin
		}
		if origin == "" && c.t.deps.Browser != nil {
			if tu, err := c.t.deps.Browser.TabURL(ctx, tabOf(a, call)); err == nil {
				origin = OriginOf(tu)
			}
		}
		add(orUnknown(origin), Label{Private: true, Untrusted: true})
		base = u
		if name == "open_tab" && res.Success {
			if _, navigated := a.num("tab_id"); !navigated {
				if id, ok := args(result).num("tab_id"); ok {
					bounded(c.st.Tabs, id)
					changed = true
				}
			}
		}
	case name == "list_tabs" && res.Success:
		add(SourceOtherTabs, Label{Private: true, Untrusted: true})
	case name == "web_fetch" && res.Success:
		u := str("final_url")
		if u == "" {
			u = str("url")
		}
		add(orUnknown(OriginOf(u)), Label{Private: privateHost(u), Untrusted: true})
		base = u
	case name == "web_search" && res.Success:
		add(SourceSearch, Label{Untrusted: true})
	case (name == "opfs_read" || name == "opfs_list") && res.Success:
		add(SourceWorkspace, Label{Private: true, Untrusted: true})
	case name == "ask_user" && res.Success:
		add(SourceAnswers, Label{Private: true})
		for _, s := range leaves(result["answer"], nil) {
			c.st.say(s)
		}
		changed = true
	case name == "opfs_write" && res.Success:
		if created, _ := result["created"].(bool); created {
			if p, err := storage.CleanPath(str("path")); err == nil {
				bounded(c.st.Created, p)
				changed = true
			}
		}
	case name == "opfs_delete" && res.Success:
		for _, p := range leaves(result["removed"], nil) {
			delete(c.st.Created, p)
		}
		changed = true
	case name == "close_tab" && res.Success:
		if id, ok := a.num("tab_id"); ok {
			delete(c.st.Tabs, id)
			changed = true
		}
	case name == "agent":
		// The sub-agent's answer carries what its context held: this state's.
		for s, l := range c.st.Sources {
			if l.Untrusted {
				sources = append(sources, s)
			}
		}
		sort.Strings(sources)
	default:
		if _, known := Builtins[name]; !known && res.Success {
			// A capability or a builtin the table does not know: its answer is
			// taken for content of its own, private and untrusted.
			add("tool "+name, Label{Private: true, Untrusted: true})
		}
	}
	if len(sources) > 0 {
		text := res.Reason
		if res.Success {
			text = string(mustJSON(res.Result))
		}
		for _, u := range urlsIn(text, base) {
			changed = c.st.see(u) || changed
		}
	}
	res.Sources = sources
	if changed {
		c.save(ctx)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// save writes the state (the caller holds c.mu). A failure is logged: the state in
// memory still holds for this run.
func (c *Conv) save(ctx context.Context) {
	if c.id == "" || c.t.deps.Store == nil {
		return
	}
	b, err := json.Marshal(c.st)
	if err != nil {
		return
	}
	if err := c.t.deps.Store.SetConversationFlow(context.WithoutCancel(ctx), c.id, b); err != nil {
		c.t.deps.Log.Warn().Err(err).Str("conversation", c.id).Msg("storing the data-flow state")
	}
}

// Snapshot is a copy of the state, for tests and diagnostics.
func (c *Conv) Snapshot() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := json.Marshal(c.st)
	return *decodeState(b)
}
