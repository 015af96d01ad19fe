package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
)

// What each browser tool does as the data-flow rule sees it (tools.Effect,
// tools.Provenance), said beside the tool in Tools.

// tabArgs are the arguments every browser tool's effect reads: the tab, the
// element, and what the call carries.
type tabArgs struct {
	TabID  *int     `json:"tab_id"`
	URL    string   `json:"url"`
	Ref    string   `json:"ref"`
	Sel    string   `json:"selector"`
	Text   *string  `json:"text"`
	Values []string `json:"values"`
	Submit bool     `json:"submit"`
	Code   string   `json:"code"`
	Target string   `json:"target"`
}

// tab is the tab a call acts on: its tab_id, else the conversation's tab, else (0)
// the active tab, as the tools themselves default.
func (a tabArgs) tab(call *tools.Call) int {
	if a.TabID != nil {
		return *a.TabID
	}
	return call.TabID
}

// tabURL is what the tab shows now; "" when nobody can say (the rule then treats
// the page as unknown).
func (d Deps) tabURL(ctx context.Context, call *tools.Call, tab int) string {
	if doc := call.Document; doc != nil && tab > 0 && doc.TabID == tab {
		return doc.URL // the assessment has just looked it up
	}
	u, err := TabLookup(d.Browser).TabURL(ctx, tab)
	if err != nil {
		return ""
	}
	return u
}

// orPage is a page's URL for Effect.Changes, or the unknown page.
func orPage(u string) string {
	if u == "" {
		return tools.PageUnknown
	}
	return u
}

// effects declares a browser tool's effects from its arguments: what it reads is
// always the tab's page; what it changes and sends, from how.
func (d Deps) effects(how func(ctx context.Context, call *tools.Call, a tabArgs, e *tools.Effect) error) func(ctx context.Context, call *tools.Call) (tools.Effect, error) {
	return func(ctx context.Context, call *tools.Call) (tools.Effect, error) {
		var a tabArgs
		if err := call.Decode(&a); err != nil {
			return tools.Effect{}, err
		}
		e := tools.Effect{Tab: a.tab(call)}
		e.TabURL = d.tabURL(ctx, call, e.Tab)
		if how != nil {
			if err := how(ctx, call, a, &e); err != nil {
				return e, err
			}
		}
		return e, nil
	}
}

// readsPage: the result is the page's content, private to its origin and
// untrusted, its links seen.
func readsPage(withContent bool) func(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
	return func(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
		if !res.Success {
			return tools.Provenance{}
		}
		r := tools.Read{URL: orPage(resultURL(res, e.TabURL)), Private: true, Untrusted: true}
		if withContent {
			r.Content = resultText(res)
			r.Base = resultURL(res, e.TabURL)
		}
		return tools.Provenance{Reads: []tools.Read{r}}
	}
}

// resultURL is the URL a result says it read, else the tab's.
func resultURL(res *tools.Result, fallback string) string {
	var r struct {
		URL string `json:"url"`
	}
	if b, err := json.Marshal(res.Result); err == nil && json.Unmarshal(b, &r) == nil && r.URL != "" {
		return r.URL
	}
	return fallback
}

func resultText(res *tools.Result) string {
	if !res.Success {
		return res.Reason
	}
	b, err := json.Marshal(res.Result)
	if err != nil {
		return ""
	}
	return string(b)
}

// changesPage: the call changes the tab's page and hands it what it carries.
func changesPage(carries func(a tabArgs) []string) func(ctx context.Context, call *tools.Call, a tabArgs, e *tools.Effect) error {
	return func(ctx context.Context, call *tools.Call, a tabArgs, e *tools.Effect) error {
		e.Changes = []string{orPage(e.TabURL)}
		var c []string
		if carries != nil {
			c = carries(a)
		}
		// To, not URL: the page's own address is not what is sent, what the call
		// hands the page is.
		e.Sends = []tools.Send{{To: orPage(e.TabURL), Carries: c}}
		return nil
	}
}

// formSends adds the destination of the form the element belongs to: what is typed
// or chosen in a form goes wherever the form posts itself (its action, another
// origin perhaps), not only to the page. A click on its submit control then carries
// nothing new: every value in the form was judged for that destination as it went in.
func (d Deps) formSends(base func(ctx context.Context, call *tools.Call, a tabArgs, e *tools.Effect) error, submits func(a tabArgs, submitter bool) bool) func(ctx context.Context, call *tools.Call, a tabArgs, e *tools.Effect) error {
	return func(ctx context.Context, call *tools.Call, a tabArgs, e *tools.Effect) error {
		if err := base(ctx, call, a, e); err != nil {
			return err
		}
		if a.Ref == "" && a.Sel == "" {
			return nil
		}
		params := map[string]any{}
		if e.Tab > 0 {
			params["tab_id"] = e.Tab
		}
		if a.Ref != "" {
			params["ref"] = a.Ref
		} else {
			params["selector"] = a.Sel
		}
		var f struct {
			Form      bool   `json:"form"`
			Action    string `json:"action"`
			Submitter bool   `json:"submitter"`
		}
		if err := d.call(ctx, "browser.page.form", params, &f, assessWait); err != nil {
			// Where it would go is unknown, so the destination is too.
			e.Sends = append(e.Sends, tools.Send{To: tools.DestUnknown, Carries: e.Sends[0].Carries})
			return nil
		}
		if f.Form && submits(a, f.Submitter) {
			carries := e.Sends[0].Carries
			// Submitting now (a submit control, or Enter through the form's default
			// button) sends what the page put in the form too.
			if (f.Submitter || a.Submit) && originOf(f.Action) != originOf(e.TabURL) {
				// A form sent to another origin carries what the page put in it too.
				carries = append(append([]string(nil), carries...), formFields)
			}
			e.Sends = append(e.Sends, tools.Send{To: formDestination(f.Action), Carries: carries})
		}
		return nil
	}
}

// formFields stands for the values a page put in its own form: nobody's words but
// the page's.
const formFields = "the form's fields"

// formDestination is where a form's action reaches; an action that is no web
// address (javascript:, nothing) is a destination nobody can name.
func formDestination(action string) string {
	if action == "" {
		return tools.DestUnknown
	}
	return action
}

// tabIDOf is the tab_id a call names, as an artefact id.
func tabIDOf(a tabArgs) string {
	if a.TabID == nil {
		return ""
	}
	return strconv.Itoa(*a.TabID)
}

// closesTab: closing a tab destroys what the person had in it, unless the
// conversation opened it.
func closesTab(ctx context.Context, call *tools.Call, a tabArgs, e *tools.Effect) error {
	e.Destroys = []tools.Artefact{{Kind: tools.ArtefactTab, ID: tabIDOf(a), What: fmt.Sprintf("closes tab %s, which this conversation did not open", tabIDOf(a))}}
	return nil
}

func closedTab(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
	if !res.Success {
		return tools.Provenance{}
	}
	return tools.Provenance{Removes: e.Destroys}
}

// activated: the tab comes to the front, and nothing of its page enters the context.
func activated(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
	if !res.Success {
		return tools.Provenance{}
	}
	return tools.Provenance{Activated: e.TabURL}
}

// opens: the URL is a destination (what it holds goes there); navigating an
// existing tab changes its page.
func opens(navigates func(a tabArgs) bool) func(ctx context.Context, call *tools.Call, a tabArgs, e *tools.Effect) error {
	return func(ctx context.Context, call *tools.Call, a tabArgs, e *tools.Effect) error {
		if a.URL != "" {
			e.Sends = []tools.Send{{URL: a.URL}}
		}
		if navigates(a) {
			e.Changes = []string{orPage(e.TabURL)}
		} else {
			e.Tab, e.TabURL = 0, ""
		}
		return nil
	}
}

// opened: the page loaded is read, and a new tab is the conversation's own.
func opened(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
	p := readsPage(true)(call, e, res)
	if !res.Success {
		return p
	}
	var a tabArgs
	_ = call.Decode(&a)
	var r struct {
		TabID int `json:"tab_id"`
	}
	if b, err := json.Marshal(res.Result); err == nil && json.Unmarshal(b, &r) == nil && a.TabID == nil && r.TabID > 0 {
		p.Creates = []tools.Artefact{{Kind: tools.ArtefactTab, ID: strconv.Itoa(r.TabID)}}
	}
	return p
}

// listsTabs: the tab list is the person's, and what the tabs' titles say is not.
func listsTabs(ctx context.Context, call *tools.Call) (tools.Effect, error) {
	return tools.Effect{OtherTabs: true}, nil
}

func listedTabs(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
	if !res.Success {
		return tools.Provenance{}
	}
	return tools.Provenance{Reads: []tools.Read{{Source: tools.SourceOtherTabs, Private: true, Untrusted: true, Content: resultText(res)}}}
}

// scriptEffects: a page script changes the page and can send what it is given to
// any origin with fetch, so its destination is unknown; a sandbox computation
// reaches nothing.
func (d Deps) scriptEffects(ctx context.Context, call *tools.Call, a tabArgs, e *tools.Effect) error {
	if a.Target != "page" {
		e.Tab, e.TabURL = 0, ""
		return nil
	}
	e.Changes = []string{orPage(e.TabURL)}
	e.Sends = []tools.Send{{To: tools.DestUnknown, Carries: []string{a.Code}}}
	return nil
}

// scriptRead: what a page script returns (or throws) is the page's; a sandbox's
// answer is computed from what the model gave it.
func scriptRead(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
	if e.Tab == 0 && e.TabURL == "" {
		var a tabArgs
		if call.Decode(&a) == nil && a.Target != "page" {
			return tools.Provenance{}
		}
	}
	return tools.Provenance{Reads: []tools.Read{{URL: orPage(resultURL(res, e.TabURL)), Private: true, Untrusted: true, Content: resultText(res)}}}
}

// noContent: the call brings nothing of the page into the context (a position).
func noContent(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
	return tools.Provenance{}
}

// originOf is a URL's origin, "" for what has none.
func originOf(u string) string {
	o, _ := origins.Of(u)
	return o
}
