// Package pageactions turns the actions web pages declare (window.ferry, WebMCP) into
// tools of the registry, per tab and frame, and runs them by calling back into the
// page through the extension. The extension's content-script bridge reports each
// frame's declarations and snapshot (page.actions.update); the host registers them as
// Source page tools, keeps the latest snapshot for availability and for the agent's
// page context, and computes a call's `changed` evidence from the snapshots the page
// took before and after the run.
package pageactions

import (
	"encoding/json"
	"time"
)

// Decl is one action as the page declared it, normalised by the page API to one wire
// shape whichever dialect the page wrote (the list dialect's desc/params list/run/
// expect, the shorthand dialect's description/parameters/handler, WebMCP's
// inputSchema/execute).
type Decl struct {
	ID          string          `json:"id"`
	Title       string          `json:"title,omitempty"` // for people (WebMCP's title)
	Description string          `json:"description,omitempty"`
	Kind        string          `json:"kind,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Record names the collection of an action declared once per record: offered as
	// one tool with a record parameter, seen in snapshots as id@recordId.
	Record      string   `json:"record,omitempty"`
	Confirm     bool     `json:"confirm,omitempty"`
	Dangerous   bool     `json:"dangerous,omitempty"`
	Permissions []string `json:"permissions,omitempty"`
	HasExpect   bool     `json:"has_expect,omitempty"`
	ExpectDesc  string   `json:"expect_desc,omitempty"`
	ExpectMS    int      `json:"expect_timeout_ms,omitempty"`
	HasTarget   bool     `json:"has_target,omitempty"`
	// HasHandler says the page gave a function to run (run, handler, execute); an
	// action with neither a handler nor a target has nothing Ferry could run.
	HasHandler bool `json:"has_handler,omitempty"`
	TimeoutMS  int  `json:"timeout_ms,omitempty"`
	// Untrusted marks results as content the page does not vouch for (WebMCP's
	// untrustedContentHint): the model is told so.
	Untrusted bool   `json:"untrusted,omitempty"`
	Source    string `json:"source,omitempty"` // "ferry", "webmcp" (imperative or a declarative form) or "wu"
}

// Snapshot is one frame's state: which actions are available now (with reasons for
// those that are not), the records the page exposes, and the active region.
type Snapshot struct {
	Actions []ActionState         `json:"actions"`
	Records map[string]Collection `json:"records,omitempty"`
	Region  string                `json:"region,omitempty"`
}

// ActionState is an action's availability in a snapshot.
type ActionState struct {
	ID        string          `json:"id"`
	Available bool            `json:"available"`
	Reason    string          `json:"reason,omitempty"`
	Target    string          `json:"target,omitempty"` // the target's state: ok, disabled, hidden, covered, offscreen
	Instances []InstanceState `json:"instances,omitempty"`
	Region    string          `json:"region,omitempty"`
}

// InstanceState is a per-record action's availability for one record.
type InstanceState struct {
	Record    string `json:"record"`
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
}

// Collection is the records of one collection, bounded: Rows holds at most the page
// API's limit, Total counts them all.
type Collection struct {
	Total int   `json:"total"`
	Rows  []Row `json:"rows"`
}

// Row is one record: a stable id and its fields.
type Row struct {
	ID     string          `json:"id"`
	Fields json.RawMessage `json:"fields,omitempty"`
}

// UpdateParams is page.actions.update (extension → host): the full declaration and
// snapshot of one frame. The service worker fills tab, frame and origin from the
// port's sender, never from what the page says.
type UpdateParams struct {
	TabID   int    `json:"tab_id"`
	FrameID int    `json:"frame_id"`
	Origin  string `json:"origin"`
	URL     string `json:"url,omitempty"`
	Title   string `json:"title,omitempty"`
	// Doc identifies the frame's document (random, made by the bridge at each load);
	// Seq numbers its updates from 1. The host applies an update only when it is
	// newer than the last one applied for the same document, so that every
	// registration arrives, in order, however the requests interleave.
	Doc string `json:"doc,omitempty"`
	Seq int64  `json:"seq,omitempty"`
	// Order is the service worker's own count of what it sent for frames (updates
	// and removals), increasing across its restarts: the host, which handles
	// requests concurrently, drops an update or a removal older than one it already
	// applied for the same frame, whichever document it is of.
	Order int64 `json:"order,omitempty"`
	// Permissions are the page's own global flags (ferry.init({permissions})).
	Permissions map[string]bool `json:"permissions,omitempty"`
	Actions     []Decl          `json:"actions"`
	Snapshot    Snapshot        `json:"snapshot"`
}

// Refusal is an action the host would not register, with the reason (shadowing a
// builtin, a schema that does not compile, …); the page API reports it to the page.
type Refusal struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// RunParams is page.action.run (host → extension → bridge → page, the same fields
// on every hop). Arguments are the call's as the pipeline validated them: a
// per-record action's record is among them.
type RunParams struct {
	TabID     int             `json:"tab_id"`
	FrameID   int             `json:"frame_id"`
	ID        string          `json:"id"`
	Arguments json.RawMessage `json:"arguments"`
	CallID    string          `json:"call_id"`
	TraceID   string          `json:"trace_id"`
	Depth     int             `json:"depth"`
	Caller    string          `json:"caller,omitempty"`
	Granted   []string        `json:"granted,omitempty"`
	TimeoutMS int             `json:"timeout_ms"`
}

// RunResult is what the page's bridge answers: either the handler's result with the
// expectation and both snapshots, or a failure with its code. Ran says whether the
// handler started (it may have had effects).
type RunResult struct {
	OK        bool            `json:"ok"`
	Code      string          `json:"code,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Ran       bool            `json:"ran,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Expect    *ExpectOutcome  `json:"expect,omitempty"`
	Before    *Snapshot       `json:"snapshot_before,omitempty"`
	After     *Snapshot       `json:"snapshot_after,omitempty"`
	Untrusted bool            `json:"untrusted,omitempty"`
	// Stamps is the page's: epoch milliseconds (with fractions) when the handler
	// started and when it (and its expectation) ended.
	Stamps *PageStamps `json:"timing,omitempty"`

	sent, answered time.Time // the host's, around page.action.run
}

// PageStamps are the page's timestamps of one run.
type PageStamps struct {
	HandlerStart float64 `json:"handler_start"`
	HandlerEnd   float64 `json:"handler_end"`
	Done         float64 `json:"done"`
}

func (r *RunResult) timing() *Timing {
	if r.Stamps == nil || r.Stamps.HandlerStart == 0 || r.sent.IsZero() {
		return nil
	}
	ms := func(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }
	round := func(v float64) float64 { return float64(int64(v*100)) / 100 }
	return &Timing{
		CallToHandlerMS:   round(r.Stamps.HandlerStart - ms(r.sent)),
		HandlerMS:         round(r.Stamps.HandlerEnd - r.Stamps.HandlerStart),
		HandlerToResultMS: round(ms(r.answered) - r.Stamps.HandlerEnd),
	}
}

// ExpectOutcome is the declared expectation and whether it was observed.
type ExpectOutcome struct {
	Desc      string `json:"desc,omitempty"`
	Met       bool   `json:"met"`
	WaitedMS  int    `json:"waited_ms,omitempty"`
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}
