package tools

import (
	"context"
	"encoding/json"
	"sort"
)

// What a call does, as the data-flow rule sees it (README: Security). Each tool says
// it of itself where it is defined (Tool.Effects before the call, Tool.Provenance
// after it), so that the rule in the run's Gate applies to every tool, a page's, an
// MCP server's, a skill's, the same way, and never looks at a tool's name. A tool
// that declares nothing gets the cautious reading of its kind (DefaultEffects,
// DefaultProvenance).

// Effect is what one call would do.
type Effect struct {
	// Sends is the data the call would carry out of the host, and where.
	Sends []Send
	// Changes are the pages the call would change, each by its URL (or PageUnknown).
	Changes []string
	// Destroys is what the call would delete or overwrite. The rule lets a run destroy
	// only what its conversation made or the person named.
	Destroys []Artefact
	// Tab is the tab the call acts on (0: none); TabURL what that tab shows now.
	Tab    int
	TabURL string
	// OtherTabs says the call reads what other tabs show (the tab list): what a
	// page's run may not.
	OtherTabs bool
}

// Send is data a call carries to a destination.
type Send struct {
	// URL is what the call opens or sends to (a page to load, a fetch, a form's
	// action). Its origin is a destination, and so is every absolute URL inside it
	// (an open redirect's target). Opening it carries what the URL holds, unless the
	// URL occurs verbatim in content no model wrote.
	URL string
	// To names a destination without a URL: an origin, DestSearch, DestUnknown. It is
	// read when URL is empty.
	To string
	// Carries is what else goes there: argument values, typed text.
	Carries []string
}

// Destinations named without a URL.
const (
	// DestSearch is where web_search's queries go: the engine the person set.
	DestSearch = "web search"
	// DestUnknown is a destination that cannot be named (a page script's fetch can
	// reach any origin): never designated.
	DestUnknown = "an unknown destination"
	// PageUnknown is a page whose origin could not be looked up: never designated.
	PageUnknown = "an unknown page"
)

// Sources named without an origin.
const (
	SourceWorkspace = "workspace"
	SourceOtherTabs = "other tabs"
	SourceAnswers   = "your answers"
	SourceSearch    = "search results"
)

// Artefact is something a call makes or destroys that the rule keeps track of: what
// a conversation made, it may destroy again.
type Artefact struct {
	Kind string // ArtefactFile or ArtefactTab
	ID   string // the canonical workspace path, the tab id
	// What is the card's words for destroying it: "deletes /notes.md from the workspace".
	What string
}

// Kinds of artefact.
const (
	ArtefactFile = "file"
	ArtefactTab  = "tab"
)

// Provenance is what a finished call put into the context and what it made or
// removed.
type Provenance struct {
	Reads            []Read
	Creates, Removes []Artefact
	// Activated is the URL of the tab the call brought to the front: being in front
	// does not make it the page the person's next message is about.
	Activated string
}

// Read is content of one source that entered the context.
type Read struct {
	// URL is the page or document read: its origin is the source. Source names a
	// source without one (SourceWorkspace, …); it is read when URL is empty.
	URL    string
	Source string
	// Private: the person's own data (a signed-in page, their files, their tab list)
	// as opposed to what anyone could fetch. Untrusted: text the person did not
	// write, which may carry someone else's instructions.
	Private, Untrusted bool
	// Content is text of the source that no model wrote: the URLs in it count as
	// seen, so that following a link the page shows carries nothing new. Base
	// resolves its relative links. A model's words (a summary, a sub-agent's answer,
	// a file a run wrote) are never Content.
	Content, Base string
	// Said are the person's own words the result holds (an answer they typed);
	// Picked, values they chose among options someone else wrote, each theirs only as
	// a whole.
	Said, Picked []string
	// Carried is the provenance a stored artefact brings back with its content.
	Carried *Taint
	// Context says the result carries what the run's context holds (a sub-agent's
	// answer): its sources are the context's.
	Context bool
}

// Taint is the provenance a value keeps when it is stored: who wrote it, and what its
// writer's context held then. Reading the value brings it back, in any conversation.
type Taint struct {
	// Person: the person wrote it themselves (the options page, `ferry call`).
	Person bool `json:"person,omitempty"`
	// Run is the run that wrote it, when a model did.
	Run string `json:"run,omitempty"`
	// Untrusted: content the person did not write was in the writer's context.
	Untrusted bool `json:"untrusted,omitempty"`
	// Private are the private sources the writer's context held.
	Private []string `json:"private,omitempty"`
}

// JSON is the taint as stored beside the value.
func (t Taint) JSON() string {
	b, _ := json.Marshal(t)
	return string(b)
}

// ParseTaint reads a stored taint; what cannot be read (a value stored before taints
// were kept) is a writer nobody knows: untrusted.
func ParseTaint(s string) Taint {
	var t Taint
	if s == "" || json.Unmarshal([]byte(s), &t) != nil || (!t.Person && t.Run == "" && !t.Untrusted) {
		return Taint{Untrusted: true}
	}
	sort.Strings(t.Private)
	return t
}

// taint is what a call's output would carry if stored now: the person's own when a
// person makes the call directly, else its gate's (a run's context) or, with no gate
// (an outside agent's direct call), an unknown writer.
func taintOf(call *Call) Taint {
	s := call.Scope
	if g := s.gate(); g != nil {
		t := g.Taint()
		t.Run = call.RunID
		return t
	}
	if s == nil || s.Principal == PrincipalExtension || s.Principal == PrincipalCLI {
		return Taint{Person: true}
	}
	return Taint{Untrusted: true}
}

// DefaultEffects is what a call of a tool that declares nothing would do: a write
// changes something nobody can name (so it asks once the context is untrusted), a
// page's action sends its arguments to its page and a write changes it.
func DefaultEffects(t *Tool, args json.RawMessage) Effect {
	switch {
	case t.Source == SourcePage:
		e := Effect{Sends: []Send{{To: t.Origin, Carries: ArgumentValues(args)}}, Tab: t.TabID}
		if t.Kind == KindWrite {
			e.Changes = []string{t.Origin}
		}
		return e
	case t.Kind == KindWrite:
		return Effect{Changes: []string{"what " + t.Name + " changes"}, Sends: []Send{{To: DestUnknown, Carries: ArgumentValues(args)}}}
	}
	return Effect{}
}

// DefaultProvenance is what the result of a tool that declares nothing brings: its
// own content, private and untrusted (a page action's is its page's).
func DefaultProvenance(t *Tool, res *Result) Provenance {
	src := "tool " + t.Name
	if t.Source == SourcePage {
		src = t.Origin
	}
	text := res.Reason
	if res.Success {
		if b, err := json.Marshal(res.Result); err == nil {
			text = string(b)
		}
	} else if t.Source != SourcePage {
		return Provenance{}
	}
	return Provenance{Reads: []Read{{Source: src, Private: true, Untrusted: true, Content: text}}}
}

// ArgumentValues is every value of a call's arguments as text: what they carry.
func ArgumentValues(args json.RawMessage) []string {
	v, err := decodeArguments(args)
	if err != nil {
		return []string{string(args)}
	}
	return leaves(v, nil)
}

func leaves(v any, out []string) []string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = leaves(x[k], out)
		}
	case []any:
		for _, e := range x {
			out = leaves(e, out)
		}
	case string:
		out = append(out, x)
	case json.Number:
		out = append(out, x.String())
	}
	return out
}

// CheckSend is the rule for data a running call is about to carry somewhere it did not
// declare beforehand (a redirect's next hop): nil when the run's gate lets it go, else
// the refusal that says where and why. A call without a gate (a person's own) may.
func CheckSend(ctx context.Context, call *Call, s Send) error {
	g := call.Scope.gate()
	if g == nil {
		return nil
	}
	v, err := g.Check(ctx, call, Listing{Name: call.Tool, ModelName: ModelName(call.Tool)}, Effect{Sends: []Send{s}})
	if err != nil {
		return err
	}
	if v.Confirm {
		return Failf(CodePermissionDenied, "%s Nothing was sent there; to go there anyway, call the tool with that URL itself, and the person is asked", v.Reason)
	}
	return nil
}

// Class is how the README's table names a tool's place in the data-flow rule; the
// tool's Effects and Provenance are what the rule applies, the class only says it.
type Class string

const (
	ClassRead      Class = "read"       // reads; its result is labelled
	ClassWayOut    Class = "way out"    // carries data to the destination it names
	ClassPageWrite Class = "page write" // changes a page, and carries its arguments to it
	ClassDestroy   Class = "destroy"    // deletes or overwrites what the run did not create
	ClassLocal     Class = "local"      // stays in the host (tasks, a sub-agent whose own calls are checked)
	ClassAsk       Class = "ask"        // asks the person
)
