// Package flow is the data-flow policy of the agent's runs: for each conversation
// the host keeps, outside the model, the origins the person designated and labels
// of everything that entered the context (whose content, private or public, written
// by the person or not), and asks the person before a call that would carry
// private data somewhere, change a page the person did not name, or destroy what
// the run did not create, once content the person did not write is in the context.
// A model that obeys every instruction it reads gets nothing of that done without
// the person's approval of the exact call.
//
// The rule knows no tool: each tool declares what a call of it does (tools.Effect)
// and what its result brought (tools.Provenance) where it is defined, and the rule
// applies to those alone. The rule in full, its reasons and its limits are in the
// README's Security section.
package flow

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"sync"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/rs/zerolog"
)

// Browser looks up tabs (the host's browser connection).
type Browser interface {
	// TabURL is the URL of a tab's document now; tab 0 is the active tab.
	TabURL(ctx context.Context, tab int) (string, error)
}

// Store keeps each conversation's state (storage.DB satisfies it).
type Store interface {
	ConversationFlow(ctx context.Context, conversationID string) ([]byte, error)
	SetConversationFlow(ctx context.Context, conversationID string, state []byte) error
}

// Deps is what the policy looks at. Any may be nil: without a browser a bound tab's
// origin is unknown, without a store the state lives as long as the run.
type Deps struct {
	Browser Browser
	Store   Store
	Log     zerolog.Logger
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
	c := &Conv{t: t, id: conversationID}
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

	mu sync.Mutex
	st *State
}

var _ tools.Gate = (*Conv)(nil)

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
// panel's tab, ferry run's, the page that asked with ferry.ask), unless a run of
// this conversation brought that tab to the front: then the person's message is
// not about it for being there.
func (c *Conv) Bind(ctx context.Context, origin string) {
	if origin == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.Designated[origin] || c.st.Activated[origin] {
		return
	}
	c.st.Designated[origin] = true
	c.save(ctx)
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
func (c *Conv) Check(ctx context.Context, call *tools.Call, t tools.Listing, e tools.Effect) (tools.FlowVerdict, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.st.pageScope(call.Scope, e); f != nil {
		return tools.FlowVerdict{}, f
	}
	return c.st.verdict(e, t.ModelName, starter(call.Scope)), nil
}

// starter is the origin that started the run, when a page did (ferry.ask): its own
// data may go back to it.
func starter(s *tools.Scope) string {
	if s != nil && s.Principal == tools.PrincipalPage {
		return s.Origin
	}
	return ""
}

// Taint is what the context holds now, as a value written from it keeps it
// (tools.Gate).
func (c *Conv) Taint() tools.Taint {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Never the person's: a model wrote it, so the URLs in it are not content seen.
	t := tools.Taint{Untrusted: c.st.untrusted()}
	for s, l := range c.st.Sources {
		if l.Private {
			t.Private = append(t.Private, s)
		}
	}
	sort.Strings(t.Private)
	return t
}

// Observe labels what a call put into the context (tools.Gate), and keeps the run's
// write set: files it created, tabs it opened.
func (c *Conv) Observe(ctx context.Context, call *tools.Call, t tools.Listing, p tools.Provenance, res *tools.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := false
	var sources []string
	for _, r := range p.Reads {
		if r.Context {
			for s, l := range c.st.Sources {
				if l.Untrusted {
					sources = append(sources, s)
				}
			}
			continue
		}
		src := r.Source
		if r.URL != "" {
			src = orUnknown(OriginOf(r.URL))
		}
		l := Label{Private: r.Private, Untrusted: r.Untrusted}
		if r.Carried != nil {
			// What a stored value's writer held comes back with it.
			l.Untrusted = l.Untrusted || r.Carried.Untrusted
			for _, s := range r.Carried.Private {
				changed = c.st.label(s, Label{Private: true, Untrusted: r.Carried.Untrusted}) || changed
			}
		}
		changed = c.st.label(src, l) || changed
		if l.Untrusted {
			sources = append(sources, src)
		}
		base := r.Base
		if base == "" {
			base = r.URL
		}
		for _, u := range urlsIn(r.Content, base) {
			changed = c.st.see(u) || changed
		}
		for _, s := range r.Said {
			c.st.say(s)
			changed = true
		}
		for _, s := range r.Picked {
			changed = c.st.pick(s) || changed
		}
	}
	for _, a := range p.Creates {
		changed = c.st.made(a, true) || changed
	}
	for _, a := range p.Removes {
		changed = c.st.made(a, false) || changed
	}
	if o := OriginOf(p.Activated); o != "" && !c.st.Designated[o] && !c.st.Activated[o] {
		bounded(c.st.Activated, o)
		changed = true
	}
	sort.Strings(sources)
	res.Sources = dedupe(sources)
	if changed {
		c.save(ctx)
	}
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// made adds an artefact to the conversation's write set, or takes it out.
func (st *State) made(a tools.Artefact, add bool) bool {
	switch a.Kind {
	case tools.ArtefactFile:
		if add {
			bounded(st.Created, a.ID)
		} else {
			delete(st.Created, a.ID)
		}
		return true
	case tools.ArtefactTab:
		id, err := strconv.Atoi(a.ID)
		if err != nil {
			return false
		}
		if add {
			bounded(st.Tabs, id)
		} else {
			delete(st.Tabs, id)
		}
		return true
	}
	return false
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
