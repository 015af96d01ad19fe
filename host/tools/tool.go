// Package tools is the one registry of every tool Ferry offers, whoever declared it
// (the host, a page, an app capability), and the one pipeline every call goes
// through, whoever makes it (the model, a page, `ferry call`, an outside agent):
// lookup, the caller's scope, validation, availability, permissions, loop and rate
// guard, confirmation, run, expectation, result, audit. Caller policy (Scope) lives
// in it and nowhere else.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ferryhq/ferry/storage"
)

// Source says who declared a tool.
type Source string

const (
	SourceBuiltin    Source = "builtin"    // the host's own tools
	SourcePage       Source = "page"       // actions a page declared (per tab and frame)
	SourceCapability Source = "capability" // app:name capabilities, removed together by app
)

// Kind says whether a tool only reads or may change something.
type Kind string

const (
	KindRead  Kind = "read"
	KindWrite Kind = "write"
)

// Tool is one registered tool. Parameters may be written in any of the three dialects
// (raw JSON Schema, the shorthand object, the list; see Dialect); the registry
// normalises them to one JSON Schema object at registration.
type Tool struct {
	Name string
	// Title is a human-readable name for user interfaces (WebMCP's and MCP's title);
	// the model is given Name.
	Title       string
	Description string
	Parameters  json.RawMessage
	// Schema, when set, is Parameters already normalised and compiled (a page
	// action's schema with its record parameter added): Register uses it as it is
	// instead of normalising Parameters again.
	Schema *Schema
	Source Source
	Kind   Kind

	// Confirm asks a person before every run. Dangerous logs a warning with the
	// arguments on every run and marks the audit row.
	Confirm   bool
	Dangerous bool
	// Permissions are the flags (readStore, writeStore, emitEvents, …) this tool opts
	// into; a write needs both the global flag and this opt-in.
	Permissions []string
	// Timeout bounds Run; zero means the setting tools.run_timeout_seconds (30 s).
	// A tool that waits on a person (ask_user) sets its own, longer one.
	Timeout time.Duration

	// Check, when set, checks the arguments for what the schema leaves out so that
	// every model vendor and client takes the schema (exactly one of two properties,
	// say): it runs right after the schema's validation, and an error is
	// INVALID_PARAMS with its message; nothing is confirmed or run.
	Check func(call *Call) error
	// Available is the precondition: ok, or a reason the tool cannot run now. Nil
	// means always available.
	Available func(ctx context.Context, call *Call) (ok bool, reason string)
	// Run does the work. Returning a *Failure chooses the result code; any other
	// error is HANDLER_ERROR with its message. A panic is HANDLER_ERROR too. A Run
	// that knows more than its result (a page action: the declared expectation and
	// what changed) returns an Outcome, and the pipeline puts each part in its place.
	Run func(ctx context.Context, call *Call) (any, error)
	// Effects, when set, says what one call would do as the data-flow rule sees it
	// (what it sends where, which pages it changes, what it destroys, which tab it
	// acts on), from its arguments and whatever the tool looks up; Provenance, what
	// its result brought into the context (eff is what Effects said). A tool that
	// declares neither gets DefaultEffects and DefaultProvenance. Class is how the
	// README's table names the tool's place in the rule (ClassRead, …).
	Effects    func(ctx context.Context, call *Call) (Effect, error)
	Provenance func(call *Call, eff Effect, res *Result) Provenance
	Class      Class
	// AuditShape names the top-level arguments and result fields that are bulk
	// data (a file's body): the audit log and the log file keep their size and
	// SHA-256, never their text. Secret, when set, names the arguments of one call
	// that they never keep at all, decided once it has run (text typed into what the
	// page says is a password field); result is nil when the call did not succeed.
	// Arguments whose schema or name says secret are redacted without either.
	AuditShape []string
	Secret     func(call *Call, result any) []string
	// ConfirmMessage is what the person is asked; empty means the description (the
	// UI names the tool itself).
	ConfirmMessage string
	// Assess, when set, judges one call whose risk depends on its arguments or its
	// target (execute_script in a page the user has or has not trusted): whether a
	// person must confirm it although neither Confirm nor the policy asks, whether it
	// is dangerous, and what the person is asked. It runs after the permission and
	// loop checks, just before the confirmation; an error is the call's result (a
	// *Failure chooses the code, anything else is HANDLER_ERROR) and nothing runs.
	Assess func(ctx context.Context, call *Call) (Assessment, error)
	// Locate, when set, says which document the call would act on (a browser tool's
	// tab). The pipeline asks it just before a person is asked, unless Assess named
	// the document already, so that the card names the page and the approval holds
	// for that document alone (Call.Document). An error is the call's result.
	Locate func(ctx context.Context, call *Call) (*Document, error)
	// Flags, when set, are the declarer's own global permission flags (a page's
	// ferry.init({permissions})), already narrowed by the host's policy for such
	// declarers: they stand in for the settings tools.read_store, tools.write_store
	// and tools.emit_events when this tool's permissions are checked. The double
	// gate stays: writeStore still needs the tool's own opt-in.
	Flags func() map[string]bool
	// Finished, when set, hears how every call of this tool ended, once the result
	// is known; ran says whether Run was started. A page action tells its page about
	// the host's denials with it.
	Finished func(call *Call, res Result, ran bool)
	// Exposed, when set, says whether the model is offered the tool now (a page
	// action outside the page's active region is not): ModelList leaves it out. An
	// exposure rule, not a permission: a call by name still goes through the pipeline.
	Exposed func() bool

	// Callers, when set, are the only callers (Call.Caller) the tool is for: an entry
	// point of theirs that goes through the pipeline like any call (ferry.ask is a
	// page's). It is in no listing, and anyone else is told no such tool exists.
	Callers []string

	// Origin is the page origin of a page action or capability ("" for builtins);
	// TabID and FrameID say where a page action lives.
	Origin  string
	TabID   int
	FrameID int
	App     string // for capabilities
}

// Assessment is what Tool.Assess decides for one call. It can only add caution:
// a call the tool or the policy confirms is confirmed whatever it says.
type Assessment struct {
	Confirm   bool
	Dangerous bool
	Message   string // what the person is asked; empty keeps ConfirmMessage
	// Write says that this call changes something although the tool is of kind read
	// (open_tab navigating an existing tab): tools.confirm_writes applies to it.
	Write bool
	// Document is the document the assessment judged (the page whose origin a page
	// script was allowed for): the call runs there only (Call.Document).
	Document *Document
	// Lasting offers a lasting answer beside the one-time one, and Grant is what an
	// approval that lasts does (execute_script: that origin's scripts stop asking).
	// The card offers it only when this assessment is the one reason it asks: a
	// lasting grant could not lift the person's policy or a data flow.
	Lasting *Lasting
	Grant   func(ctx context.Context) error
	// Refuse is what a lasting "never" does (ferry.ask: the origin is refused from
	// then on without asking).
	Refuse func(ctx context.Context) error
}

// Document is the page a call acts on, as it was when the call was judged: the tab,
// the browser's id of the document shown in it, its URL and origin. A call bound to
// a Document runs only while the tab still shows that document; otherwise it fails
// ACTION_UNAVAILABLE and nothing runs.
type Document struct {
	TabID  int    `json:"tab_id"`
	ID     string `json:"document_id,omitempty"` // empty where the browser gives none (a restricted page)
	URL    string `json:"url"`
	Title  string `json:"title,omitempty"`
	Origin string `json:"origin,omitempty"` // http(s) pages only
}

// Outcome is what a Run may return instead of a bare result: the result, and the
// evidence that lands beside it in the Result (a page action's expectation and
// changes travel this way, from Run to the Result, and nowhere else).
type Outcome struct {
	Result  any
	Expect  any
	Changed any
}

// Permission flags a tool may declare in Permissions (readStore, writeStore,
// emitEvents, each also a global setting tools.<flag>). Reads and
// events need only the global flag; writes need the global flag and the tool's
// opt-in, so turning writeStore on never lets every existing tool write.
const (
	PermReadStore  = "readStore"
	PermWriteStore = "writeStore"
	PermEmitEvents = "emitEvents"
)

// Call is one invocation as it travels through the pipeline.
type Call struct {
	ID        string          // unique per call (used for confirmations and the audit row)
	Tool      string          // the name as registered
	Arguments json.RawMessage // validated before Run sees them
	Caller    string          // "model", "page", "cli", "socket", "mcp", …
	Origin    string          // the origin that asked for the call, when a page did
	TabID     int             // the tab the call is bound to, when there is one

	TraceID     string // a chain of causally linked calls shares one trace
	ParentTrace string
	Depth       int

	ConversationID string
	RunID          string

	// Scope is who the chain of calls acts for and what it may reach; a call
	// without one takes its parent call's (a handler calling a tool) or its
	// context's (a run). Nil is the person's own, unrestricted.
	Scope *Scope

	// Confirmed is set by the pipeline when a person approved this call.
	Confirmed bool

	// Granted is filled by the pipeline: the permission flags the handler may use
	// (global flag on, and for writeStore the tool's opt-in too).
	Granted []string
	// Taint is filled by the pipeline just before Run: the provenance of what the
	// call writes (a workspace file keeps it with its content).
	Taint Taint
	// Document is filled by the pipeline when the call was judged for one document
	// (Assessment.Document, or Tool.Locate before a confirmation): the handler must
	// act on that document only.
	Document *Document
}

// Has reports whether the pipeline granted the call a permission flag.
func (c *Call) Has(perm string) bool {
	for _, p := range c.Granted {
		if p == perm {
			return true
		}
	}
	return false
}

// Decode unmarshals the call's arguments into v; absent arguments are an empty
// object. The pipeline has validated them against the schema already, so a failure
// here means the schema and v disagree: INVALID_PARAMS with the reason.
func (c *Call) Decode(v any) error {
	args := c.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return Failf(CodeInvalidParams, "arguments: %v", err)
	}
	return nil
}

// Code is a result code of PROTOCOL.md's table ("Tool results").
type Code string

const (
	CodeNotFound          Code = "NOT_FOUND"
	CodeInvalidParams     Code = "INVALID_PARAMS"
	CodeActionUnavailable Code = "ACTION_UNAVAILABLE"
	CodePermissionDenied  Code = "PERMISSION_DENIED"
	CodeLoopDetected      Code = "LOOP_DETECTED"
	CodeRateLimited       Code = "RATE_LIMITED"
	CodeUserRejected      Code = "USER_REJECTED"
	CodeConfirmTimeout    Code = "CONFIRM_TIMEOUT"
	CodeHandlerError      Code = "HANDLER_ERROR"
	CodeTimeout           Code = "TIMEOUT"
	CodeExpectationFailed Code = "EXPECTATION_FAILED"
)

// Codes lists every result code, in the order of PROTOCOL.md's table.
var Codes = []Code{
	CodeNotFound, CodeInvalidParams, CodeActionUnavailable, CodePermissionDenied, CodeLoopDetected,
	CodeRateLimited, CodeUserRejected, CodeConfirmTimeout, CodeHandlerError, CodeTimeout, CodeExpectationFailed,
}

// Failure is a domain failure with its code. Tools return it from Run to say which
// code applies (a web_fetch refused by the SSRF guard is PERMISSION_DENIED, say).
type Failure struct {
	Code   Code
	Reason string
}

func (f *Failure) Error() string { return string(f.Code) + ": " + f.Reason }

// Failf builds a Failure with a formatted reason.
func Failf(code Code, format string, args ...any) *Failure {
	return &Failure{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// AsFailure is the failure a tool's error stands for: a *Failure as it is, and
// storage's refusals by their kind (the one place a kind becomes a result code):
// malformed input is the caller's to fix (INVALID_PARAMS); a thing not there, a
// stored state that refuses, or a full quota stopped the call before anything
// changed (ACTION_UNAVAILABLE). A tool returns storage's errors as they are (wrapped
// or not) and the pipeline maps them here. ok is false for any other error.
func AsFailure(err error) (f *Failure, ok bool) {
	if errors.As(err, &f) {
		return f, true
	}
	switch storage.KindOf(err) {
	case storage.Invalid:
		return &Failure{Code: CodeInvalidParams, Reason: err.Error()}, true
	case storage.NotFound, storage.Conflict, storage.Quota:
		return &Failure{Code: CodeActionUnavailable, Reason: err.Error()}, true
	}
	return nil, false
}

// Result is what every caller receives: {"success": true, "result": …} or
// {"success": false, "code": "…", "reason": "…"}.
type Result struct {
	Success bool   `json:"success"`
	Result  any    `json:"result,omitempty"`
	Code    Code   `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Expect and Changed are filled for page actions that declared a result to
	// observe (the page-actions work).
	Expect  any `json:"expect,omitempty"`
	Changed any `json:"changed,omitempty"`
	// Sources names where the result's content came from (origins, "workspace",
	// "other tabs", …), as the run's data-flow gate labelled it: the agent tells the
	// model so. Never sent on the wire.
	Sources []string `json:"-"`
	// Confirmation is the card a person was shown before the call could run, and
	// how it was answered, so that the conversation keeps what was asked and the
	// outcome (a reload, a later view, the model on resume).
	Confirmation *Confirmation `json:"confirmation,omitempty"`
}

// Confirmation is one card asked of a person: what it said and its outcome.
type Confirmation struct {
	Message   string `json:"message,omitempty"`
	Origin    string `json:"origin,omitempty"`
	Answer    string `json:"answer"` // one of the Answer* values
	TimeoutMS int64  `json:"timeout_ms"`
	WaitedMS  int64  `json:"waited_ms"`
}

// Values of Confirmation.Answer.
const (
	AnswerApproved = "approved"
	AnswerDenied   = "denied"
	AnswerTimeout  = "timeout"
	// AnswerFailed: the card could not be asked (the panel went away).
	AnswerFailed = "failed"
)
