package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// UI is the surface where a person answers: the side panel, through the extension.
// The host implements it over the native connection (ui.confirm, ui.ask requests);
// tests use fakes. Both calls end when ctx does.
type UI interface {
	Confirm(ctx context.Context, req ConfirmRequest) (approved bool, err error)
	Ask(ctx context.Context, req AskRequest) (AskAnswer, error)
}

// Presence is what a UI may also tell: how many side panels are open to answer right
// now. known is false until the extension has said (an older extension never does),
// and then the UI is asked as before.
type Presence interface {
	PanelsOpen() (open int, known bool)
}

// NoPanelReason is why nobody can be asked while the extension is connected but no
// side panel is open.
const NoPanelReason = "no side panel is open: open Ferry's side panel (the Ferry toolbar button) so the user can answer"

// noPanel reports whether ui says, directly or through wrappers (an Unwrap() UI
// method, as the agent's event wrapper has), that no side panel is open.
func noPanel(ui UI) bool {
	for ui != nil {
		if p, ok := ui.(Presence); ok {
			n, known := p.PanelsOpen()
			return known && n == 0
		}
		u, ok := ui.(interface{ Unwrap() UI })
		if !ok {
			return false
		}
		ui = u.Unwrap()
	}
	return false
}

// ConfirmRequest asks a person whether one call may run. Arguments are redacted as in
// the audit log.
type ConfirmRequest struct {
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Origin    string          `json:"origin,omitempty"`
	Message   string          `json:"message"`
	Dangerous bool            `json:"dangerous,omitempty"`
	TimeoutMS int64           `json:"timeout_ms"`
	// Source, TabID and FrameID say which tool asks: for a page action, the page that
	// declared it may answer too (host/pageactions wraps the UI for that).
	Source  Source `json:"source,omitempty"`
	TabID   int    `json:"tab_id,omitempty"`
	FrameID int    `json:"frame_id,omitempty"`
	// ByPolicy says a person must answer: the person's policy (tools.confirm,
	// tools.confirm_writes) or the host's own judgement asks, not only the action's
	// declaration. A page's own confirmation may then refuse, never approve.
	ByPolicy bool `json:"by_policy,omitempty"`
	// Requester says who asks for the call, so the person knows whose request they
	// answer; Flow, when the call would carry a run's data somewhere, says from where
	// to where. The side panel shows both.
	Requester *Requester `json:"requester,omitempty"`
	Flow      *Flow      `json:"flow,omitempty"`
	// Page is the document the call acts on, when it acts on a tab: the approval
	// holds for that document only (Call.Document).
	Page *Document `json:"page,omitempty"`
	// Lasting, when set, offers a lasting answer besides this one-time one (ferry.ask:
	// always or never for the page's origin). Only a control of its own gives it: a
	// plain approval, and every keypress, answers this request alone.
	Lasting *Lasting `json:"lasting,omitempty"`
}

// Lasting is the lasting answer a confirmation offers: Scope names what is granted
// or refused for good ("page_ask": the origin may start runs), Origin for whom.
type Lasting struct {
	Scope  string `json:"scope"`
	Origin string `json:"origin"`
}

// The scopes of lasting answers: ferry.ask's (always or never for the page's
// origin), and execute_script's (always run scripts in that origin's pages without
// asking; never is what not granting already is).
const (
	LastingPageAsk     = "page_ask"
	LastingPageScripts = "page_scripts"
)

// ConfirmAnswer is a person's whole answer to a confirmation: approved or not, and,
// when the request offered a lasting answer, whether this one lasts.
type ConfirmAnswer struct {
	Approved bool `json:"approved"`
	Lasting  bool `json:"lasting,omitempty"`
}

// LastingUI is a UI that can tell a lasting answer from a one-time one.
type LastingUI interface {
	ConfirmLasting(ctx context.Context, req ConfirmRequest) (ConfirmAnswer, error)
}

// ConfirmWhole asks ui for the whole answer. A UI that cannot tell a lasting answer
// (a wrapper that does not pass it on, a test fake) answers this request only.
func ConfirmWhole(ctx context.Context, ui UI, req ConfirmRequest) (ConfirmAnswer, error) {
	if l, ok := ui.(LastingUI); ok {
		return l.ConfirmLasting(ctx, req)
	}
	ok, err := ui.Confirm(ctx, req)
	return ConfirmAnswer{Approved: ok}, err
}

// Requester is who asks for a confirmed call.
type Requester struct {
	Kind           string `json:"kind"` // model, page, mcp, socket, cli or extension
	Origin         string `json:"origin,omitempty"`
	RunID          string `json:"run_id,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	Client         string `json:"client,omitempty"` // an outside agent's own name, when it gave one
}

// Flow is where a call would carry a run's data: its sources (origins, or
// "workspace", "other tabs", "your message") and the destination origin.
type Flow struct {
	Sources     []string `json:"sources"`
	Destination string   `json:"destination"`
}

// AskRequest is ask_user's question: free text, or a choice among options.
type AskRequest struct {
	CallID    string   `json:"call_id"`
	Question  string   `json:"question"`
	Options   []string `json:"options,omitempty"`
	Multiple  bool     `json:"multiple,omitempty"`
	TimeoutMS int64    `json:"timeout_ms"`
}

// AskAnswer is the person's answer: a string, a list of strings (multiple), or null
// with a reason.
type AskAnswer struct {
	Answer any    `json:"answer"`
	Reason string `json:"reason,omitempty"`
}

// answered: the answer is the person's private data. A choice among the options is
// the person's as that exact value, unless it holds a URL: the model wrote the
// option, and picking it does not make its address one the person gave (it may carry
// another tab's secret). Typed text is the person's words only when nothing untrusted
// was in the context that asked; after that, whoever wrote the content may have
// solicited it (a password, a code).
func answered(call *Call, e Effect, res *Result) Provenance {
	if !res.Success {
		return Provenance{}
	}
	var p struct {
		Options []string `json:"options"`
	}
	_ = call.Decode(&p)
	option := map[string]bool{}
	for _, o := range p.Options {
		option[o] = true
	}
	r := Read{Source: SourceAnswers, Private: true}
	var values []string
	if a, ok := res.Result.(AskAnswer); ok {
		values = leaves(a.Answer, nil)
	}
	for _, v := range values {
		switch {
		case option[v] && !urlIn.MatchString(v):
			r.Picked = append(r.Picked, v)
		case option[v] || call.Taint.Untrusted:
		default:
			r.Said = append(r.Said, v)
		}
	}
	return Provenance{Reads: []Read{r}}
}

// urlIn finds an address in an option.
var urlIn = regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://|www\.`)

// askUserParams is ask_user's: a question, optional choices, and whether several may
// be picked. multiple without options makes no sense: the description says so and
// the tool's Check refuses it (a dependentRequired keyword would say it too, but not
// every model vendor takes one).
const askUserParams = `{
  "type": "object",
  "properties": {
    "question": {"type": "string", "minLength": 1},
    "options": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
    "multiple": {"type": "boolean"}
  },
  "required": ["question"],
  "additionalProperties": false
}`

// AskUserName is the ask_user builtin's name.
const AskUserName = "ask_user"

// AskUser is the ask_user builtin: it sends the question to the connected UI and
// waits up to the setting tools.ask_timeout_seconds (5 minutes), then answers
// {answer: null, reason: "timeout"}. With no UI connected it is unavailable, so the
// caller learns at once instead of waiting.
func AskUser(r *Registry) Tool {
	return Tool{
		Name:        AskUserName,
		Description: "Ask the user and wait for the answer: free text, or a choice among options (several with multiple). For a decision or detail only the user can give that blocks the task.",
		Parameters:  json.RawMessage(askUserParams),
		Source:      SourceBuiltin,
		Kind:        KindRead,
		// The person has up to the ask timeout (at most an hour, by the setting's
		// range); the pipeline's run timeout must not cut them off first.
		Timeout:    time.Hour + time.Minute,
		Class:      ClassAsk,
		Effects:    func(context.Context, *Call) (Effect, error) { return Effect{}, nil },
		Provenance: answered,
		Check: func(call *Call) error {
			var p struct {
				Options  []string `json:"options"`
				Multiple *bool    `json:"multiple"`
			}
			if err := call.Decode(&p); err != nil {
				return err
			}
			if p.Multiple != nil && p.Options == nil {
				return fmt.Errorf("/options: is required with multiple, which says how many of the options may be chosen")
			}
			return nil
		},
		Available: func(ctx context.Context, call *Call) (bool, string) {
			if r.UI() == nil {
				return false, "no UI is connected to ask the user: open Ferry's side panel in the browser (from `ferry call` nobody can answer)"
			}
			if noPanel(r.UI()) {
				return false, NoPanelReason
			}
			return true, ""
		},
		Run: func(ctx context.Context, call *Call) (any, error) {
			var p struct {
				Question string   `json:"question"`
				Options  []string `json:"options"`
				Multiple bool     `json:"multiple"`
			}
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			ui := r.UI()
			if ui == nil {
				return nil, Failf(CodeActionUnavailable, "the UI disconnected before the question could be asked")
			}
			if noPanel(ui) {
				return nil, Failf(CodeActionUnavailable, "%s", NoPanelReason)
			}
			wait := r.policy.get(ctx).AskTimeout
			actx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			ans, err := ui.Ask(actx, AskRequest{CallID: call.ID, Question: p.Question, Options: p.Options, Multiple: p.Multiple, TimeoutMS: wait.Milliseconds()})
			if err != nil {
				if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
					return AskAnswer{Answer: nil, Reason: "timeout"}, nil
				}
				return nil, err
			}
			return ans, nil
		},
	}
}
