package browser

import (
	"context"
	"encoding/json"

	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
)

// An approval holds for the document it was given for. A call a person approves (or
// that was auto-approved for its page's origin) carries the tools.Document it was
// judged for; every browser request made while it runs sends that document along,
// and the extension does the work only while the tab still shows it
// (protocol/BROWSER.md, "Documents"). A tab that navigated in between fails with
// document_changed: ACTION_UNAVAILABLE, and nothing was done.

// pageDocument is browser.page.document's result.
type pageDocument struct {
	TabID      int    `json:"tab_id"`
	URL        string `json:"url"`
	Title      string `json:"title"`
	DocumentID string `json:"document_id"`
}

func (p pageDocument) document() *tools.Document {
	o, _ := origins.Of(p.URL)
	return &tools.Document{TabID: p.TabID, ID: p.DocumentID, URL: p.URL, Title: p.Title, Origin: o}
}

// bindDocuments gives every tool that acts on a tab a Locate, so that a confirmed
// call is bound to the document the person saw. list_tabs acts on no tab, and
// execute_script's assessment binds the page it judged.
func (d Deps) bindDocuments(ts []tools.Tool) {
	for i := range ts {
		switch ts[i].Name {
		case "list_tabs", "execute_script":
		case "open_tab":
			ts[i].Locate = d.locate(false)
		default:
			ts[i].Locate = d.locate(true)
		}
	}
}

// locate finds the document a call would act on: its tab_id, else (for tools that
// default to it) the conversation's tab, else the active tab. Without a tab to act
// on (open_tab opening a new one) there is no document.
func (d Deps) locate(defaultTab bool) func(ctx context.Context, call *tools.Call) (*tools.Document, error) {
	return func(ctx context.Context, call *tools.Call) (*tools.Document, error) {
		var a struct {
			TabID *int `json:"tab_id"`
		}
		if err := call.Decode(&a); err != nil {
			return nil, err
		}
		params := map[string]any{}
		switch {
		case a.TabID != nil:
			params["tab_id"] = *a.TabID
		case !defaultTab:
			return nil, nil
		case call.TabID > 0:
			params["tab_id"] = call.TabID
		}
		var p pageDocument
		if err := d.call(ctx, "browser.page.document", params, &p, assessWait); err != nil {
			return nil, err
		}
		return p.document(), nil
	}
}

// withDocument adds the running call's document to a browser request's params, and
// points tab_id at the document's tab (a call approved without a tab_id acts on the
// tab the person saw, not on whichever is active later).
func withDocument(ctx context.Context, params any) any {
	call, ok := tools.CallFromContext(ctx)
	if !ok || call.Document == nil {
		return params
	}
	m, ok := params.(map[string]any)
	if !ok {
		b, err := json.Marshal(params)
		if err != nil || json.Unmarshal(b, &m) != nil || m == nil {
			return params
		}
	}
	doc := call.Document
	m["tab_id"] = doc.TabID
	m["document"] = map[string]string{"document_id": doc.ID, "origin": doc.Origin, "url": doc.URL}
	return m
}
