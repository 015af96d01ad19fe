package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
)

const (
	defaultScriptTimeout = 30 * time.Second
	maxScriptTimeout     = 120 * time.Second
	// assessWait bounds the look-up of the target page's origin before the
	// confirmation.
	assessWait = 10 * time.Second
)

// ScriptResult is execute_script's result: the value made JSON-safe by the
// extension, and its JavaScript type.
type ScriptResult struct {
	Value json.RawMessage `json:"value"`
	Type  string          `json:"type"`
}

type scriptArgs struct {
	Code           string `json:"code"`
	Target         string `json:"target"`
	TabID          *int   `json:"tab_id"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

func (a *scriptArgs) tab(call *tools.Call) (int, bool) {
	if a.TabID != nil {
		return *a.TabID, true
	}
	if call.TabID > 0 {
		return call.TabID, true
	}
	return 0, false
}

func (d Deps) executeScript() tools.Tool {
	return tools.Tool{
		Name: "execute_script",
		Description: "Run JavaScript, the body of an async function (return the value; await works), and get its value, JSON-safe " +
			"(depth ≤ 10, ≤ 1 MiB; DOM nodes described), and type. target page: in the page's MAIN world, sharing its window " +
			"(DOM, the page's functions and variables); the person confirms it unless they allowed scripts on that site. " +
			"target sandbox: isolated, no DOM or APIs, pure computation. A throw fails with its message and stack. " +
			"At the timeout a sandbox script is stopped; a page script may go on.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
  "code":{"type":"string","minLength":1},
  "target":{"type":"string","enum":["page","sandbox"]},
  "tab_id":{"type":"integer","minimum":0,"description":"target page only"},
  "timeout_seconds":{"type":"integer","minimum":1,"maximum":120,"default":30}
},"required":["code","target"],"additionalProperties":false}`),
		Source:    tools.SourceBuiltin,
		Kind:      tools.KindWrite,
		Timeout:   toolTimeout(maxScriptTimeout),
		Available: d.available,
		Assess:    d.assessScript,
		// Allowing scripts on a site lifts their card, never this: a page script can
		// fetch any origin.
		Class: tools.ClassPageWrite, Effects: d.effects(d.scriptEffects), Provenance: scriptRead,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			var a scriptArgs
			if err := call.Decode(&a); err != nil {
				return nil, tools.Failf(tools.CodeInvalidParams, "arguments: %v", err)
			}
			wait := defaultScriptTimeout
			if a.TimeoutSeconds > 0 {
				wait = time.Duration(a.TimeoutSeconds) * time.Second
			}
			params := map[string]any{"code": a.Code, "target": a.Target, "timeout_ms": wait.Milliseconds()}
			if tab, ok := a.tab(call); ok && a.Target == "page" {
				params["tab_id"] = tab
			}
			var out ScriptResult
			// The extension enforces wait; the margin lets its timeout answer arrive
			// before the host gives up on the round trip.
			err := d.call(ctx, "browser.script.execute", params, &out, wait+5*time.Second)
			var f *tools.Failure
			if errors.As(err, &f) && f.Code == tools.CodeTimeout {
				if a.Target == "sandbox" {
					return nil, tools.Failf(tools.CodeTimeout, "the sandbox script did not finish within %s and was stopped", wait)
				}
				return nil, tools.Failf(tools.CodeTimeout, "the page script did not finish within %s; a page's code cannot be stopped, so it may go on running and have effects: check the page before retrying", wait)
			}
			if err != nil {
				return nil, err
			}
			if len(out.Value) == 0 {
				out.Value = json.RawMessage("null")
			}
			return out, nil
		},
	}
}

// assessScript asks a person before a page script unless its page's origin is in
// browser.scripts_auto_approve_origins. A page script is always dangerous: it runs
// with the page's own powers, as the signed-in person.
func (d Deps) assessScript(ctx context.Context, call *tools.Call) (tools.Assessment, error) {
	var a scriptArgs
	if err := call.Decode(&a); err != nil {
		return tools.Assessment{}, tools.Failf(tools.CodeInvalidParams, "arguments: %v", err)
	}
	if a.Target != "page" {
		return tools.Assessment{}, nil
	}
	params := map[string]any{}
	if tab, ok := a.tab(call); ok {
		params["tab_id"] = tab
	}
	var info pageDocument
	if err := d.call(ctx, "browser.page.info", params, &info, assessWait); err != nil {
		return tools.Assessment{}, err
	}
	// Whether asked or allowed by the setting, the script runs only in the document
	// judged here: an origin trusted a moment ago says nothing of the next page.
	doc := info.document()
	o, ok := doc.Origin, doc.Origin != ""
	trusted := origins.Normalize(d.settings(ctx).List(SettingScriptsAutoApprove))
	if ok && slices.Contains(trusted, o) {
		return tools.Assessment{Dangerous: true, Document: doc}, nil
	}
	where := o
	if !ok {
		where = info.URL
	}
	out := tools.Assessment{
		Confirm:   true,
		Dangerous: true,
		Document:  doc,
		Message: fmt.Sprintf("Run this script in %s (tab %d, %q)? It runs as the page itself: it can read what you see there and act as you. "+
			"To stop being asked for this site, add %s to the setting %s.", where, info.TabID, info.Title, where, SettingScriptsAutoApprove),
	}
	if ok && d.Store != nil {
		out.Lasting = &tools.Lasting{Scope: tools.LastingPageScripts, Origin: o}
		out.Grant = func(ctx context.Context) error { return d.trustScripts(ctx, o) }
	}
	return out, nil
}

// grantMu keeps two lasting approvals from writing the list over each other.
var grantMu sync.Mutex

// trustScripts adds origin to browser.scripts_auto_approve_origins: a person's
// lasting answer on a script's card.
func (d Deps) trustScripts(ctx context.Context, origin string) error {
	grantMu.Lock()
	defer grantMu.Unlock()
	list := origins.Normalize(d.settings(ctx).List(SettingScriptsAutoApprove))
	if slices.Contains(list, origin) {
		return nil
	}
	return d.Store.Set(ctx, SettingScriptsAutoApprove, strings.Join(append(list, origin), ","))
}
