package flow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

// Effect is what one call would do, as the rule sees it.
type Effect struct {
	// Out is where the call would send data: an origin, DestSearch, or "" (none).
	Out string
	// Payload is the data it would carry there; URLs the URLs among it.
	Payload []string
	URLs    []string
	// Write is the origin of a page the call would change ("" none); WriteTab the
	// tab, when it is known.
	Write string
	// Destroy says what the call would destroy or overwrite outside the run's own
	// write set ("" none).
	Destroy string
	// Tab is the origin of the tab the call acts on, when it acts on one.
	Tab string
}

// Class is how the rule classifies one tool: the README's table is held to it.
type Class string

const (
	ClassRead      Class = "read"       // reads; its result is labelled
	ClassWayOut    Class = "way out"    // carries data to the destination it names
	ClassPageWrite Class = "page write" // changes a page, and carries its arguments to it
	ClassDestroy   Class = "destroy"    // deletes or overwrites what the run did not create
	ClassLocal     Class = "local"      // stays in the host (tasks, a sub-agent whose own calls are checked)
	ClassAsk       Class = "ask"        // asks the person
)

// Builtins is the class of every builtin tool the rule knows; a builtin missing
// here is treated as a page write of an unknown origin (it asks when the context is
// untrusted), and a test holds the registry to this table.
var Builtins = map[string]Class{
	"list_tabs": ClassRead, "get_tab_content": ClassRead, "browser_snapshot": ClassRead,
	"browser_console": ClassRead, "browser_network": ClassRead, "browser_info": ClassRead,
	"browser_screenshot": ClassRead, "browser_scroll": ClassRead, "activate_tab": ClassRead,
	"opfs_read": ClassRead, "opfs_list": ClassRead,
	"open_tab": ClassWayOut, "web_fetch": ClassWayOut, "web_search": ClassWayOut, "browser_navigate": ClassWayOut,
	"browser_type": ClassPageWrite, "browser_select": ClassPageWrite, "browser_click": ClassPageWrite,
	"execute_script": ClassPageWrite, "browser_dialog": ClassPageWrite,
	"close_tab": ClassDestroy, "opfs_delete": ClassDestroy, "opfs_write": ClassDestroy,
	"create_task": ClassLocal, "update_task": ClassLocal, "list_tasks": ClassLocal, "agent": ClassLocal,
	"ask_user": ClassAsk,
}

type args map[string]any

func decode(raw json.RawMessage) args {
	a := args{}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	_ = d.Decode(&a)
	return a
}

func (a args) str(k string) string { s, _ := a[k].(string); return s }

func (a args) num(k string) (int, bool) {
	n, ok := a[k].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return int(i), err == nil
}

func (a args) strs(k string) []string {
	var out []string
	if l, ok := a[k].([]any); ok {
		for _, v := range l {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// leaves is every value of v as text: what arguments carry.
func leaves(v any, out []string) []string {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			out = leaves(e, out)
		}
	case args:
		for _, e := range x {
			out = leaves(e, out)
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

// tabOf is the tab a browser tool acts on: its tab_id, else the conversation's tab,
// else (0) the active tab, as the tools themselves default.
func tabOf(a args, call *tools.Call) int {
	if t, ok := a.num("tab_id"); ok {
		return t
	}
	return call.TabID
}

// effect classifies one call. Lookups that fail leave an origin empty: unknown, and
// so never designated (the rule asks).
func (c *Conv) effect(ctx context.Context, call *tools.Call, t tools.Listing) (Effect, error) {
	a := decode(call.Arguments)
	var e Effect
	tabOrigin := func(tab int) string {
		if d := call.Document; d != nil && tab > 0 && d.TabID == tab {
			// The tool's assessment has just looked the page up (execute_script).
			return OriginOf(d.URL)
		}
		if c.t.deps.Browser == nil {
			return ""
		}
		u, err := c.t.deps.Browser.TabURL(ctx, tab)
		if err != nil {
			return ""
		}
		return OriginOf(u)
	}
	if t.Source == tools.SourcePage {
		e.Out, e.Tab = t.Origin, t.Origin
		e.Payload = leaves(a, nil)
		if t.Kind == tools.KindWrite {
			e.Write = t.Origin
		}
		return e, nil
	}
	switch t.Name {
	case "open_tab", "browser_navigate":
		if u := a.str("url"); u != "" {
			e.Out, e.URLs = destination(u), []string{u}
		}
		if tab, ok := a.num("tab_id"); ok || t.Name == "browser_navigate" {
			if !ok {
				tab = call.TabID
			}
			// Navigating a tab away from its page changes it.
			e.Tab = tabOrigin(tab)
			e.Write = orUnknown(e.Tab)
		}
	case "web_fetch":
		u := a.str("url")
		e.Out, e.URLs = destination(u), []string{u}
	case "web_search":
		e.Out, e.Payload = DestSearch, []string{a.str("query")}
	case "browser_type", "browser_select", "browser_click", "browser_dialog":
		e.Tab = tabOrigin(tabOf(a, call))
		e.Out, e.Write = orUnknown(e.Tab), orUnknown(e.Tab)
		switch t.Name {
		case "browser_type", "browser_dialog": // a prompt's answer goes to the page
			e.Payload = []string{a.str("text")}
		case "browser_select":
			e.Payload = a.strs("values")
		}
	case "execute_script":
		if a.str("target") == "page" {
			e.Tab = tabOrigin(tabOf(a, call))
			e.Out, e.Write, e.Payload = orUnknown(e.Tab), orUnknown(e.Tab), []string{a.str("code")}
		}
	case "close_tab":
		tab, _ := a.num("tab_id")
		if !c.st.Tabs[tab] {
			e.Destroy = fmt.Sprintf("closes tab %d, which this conversation did not open", tab)
		}
	case "opfs_delete":
		p, err := storage.CleanPath(a.str("path"))
		if err != nil {
			return e, nil // the tool refuses it itself
		}
		if ok, err := c.createdAll(ctx, p); err != nil || !ok {
			e.Destroy = fmt.Sprintf("deletes %s from the workspace, which this conversation did not create", p)
		}
	case "opfs_write":
		p, err := storage.CleanPath(a.str("path"))
		if err != nil || c.st.Created[p] || c.st.Named[p] {
			return e, nil
		}
		if ws := c.t.deps.Workspace; ws != nil {
			if _, err := ws.Stat(ctx, p); err == nil {
				e.Destroy = fmt.Sprintf("overwrites %s in the workspace, which this conversation did not create and you did not name", p)
			} else if !errors.Is(err, storage.ErrFileNotFound) {
				e.Destroy = fmt.Sprintf("may overwrite %s in the workspace (%v)", p, err)
			}
		}
	default:
		if _, known := Builtins[t.Name]; !known && t.Kind == tools.KindWrite {
			e.Write = "what " + t.Name + " changes"
		}
	}
	return e, nil
}

// unknownPage stands for a page whose origin could not be looked up: never
// designated, so the rule asks.
const unknownPage = "an unknown page"

func orUnknown(origin string) string {
	if origin == "" {
		return unknownPage
	}
	return origin
}

// createdAll reports whether this conversation created the file at p, or every file
// under the folder p.
func (c *Conv) createdAll(ctx context.Context, p string) (bool, error) {
	if c.st.Created[p] {
		return true, nil
	}
	ws := c.t.deps.Workspace
	if ws == nil {
		return false, nil
	}
	seen := 0
	var walk func(dir string) (bool, error)
	walk = func(dir string) (bool, error) {
		es, err := ws.List(ctx, dir)
		if err != nil {
			return false, err
		}
		for _, e := range es {
			if seen++; seen > 200 {
				return false, nil
			}
			child := strings.TrimSuffix(dir, "/") + "/" + e.Name
			if e.Type == "dir" {
				if ok, err := walk(child); err != nil || !ok {
					return false, err
				}
			} else if !c.st.Created[child] {
				return false, nil
			}
		}
		return true, nil
	}
	return walk(p)
}

// clean reports whether everything the call would carry is already known to be
// free to go: the person's own words, and URLs that occur verbatim in content the
// context holds (following a link carries no new data).
func (st *State) clean(e Effect) bool {
	for _, u := range e.URLs {
		if !st.seen(u) && !st.said(u) {
			return false
		}
	}
	for _, p := range e.Payload {
		if !st.said(p) {
			return false
		}
	}
	return true
}

// verdict is the rule. Nothing asks while the context holds only the person's own
// words: whatever the model does then, it does for them. Once untrusted content is
// in, a person approves the exact call that would
//   - change a page of an origin outside the designated set,
//   - delete or overwrite what the conversation did not create (files, tabs), or
//   - carry data that is not the person's own words or a URL already seen to a
//     destination, while the context holds private data of another source.
func (st *State) verdict(e Effect, tool string) tools.FlowVerdict {
	if !st.untrusted() {
		return tools.FlowVerdict{}
	}
	var why []string
	var flow *tools.Flow
	if e.Write != "" && !st.designated(e.Write) {
		why = append(why, fmt.Sprintf("%s would change a page of %s, which you did not name for this task", tool, e.Write))
	}
	if e.Destroy != "" {
		why = append(why, tool+" "+e.Destroy)
	}
	if e.Out != "" && !st.clean(e) {
		if priv := st.privateFor(e.Out); len(priv) > 0 {
			flow = &tools.Flow{Sources: priv, Destination: e.Out}
			why = append(why, fmt.Sprintf("%s would send data to %s while this conversation holds data from %s, and content it read (which may carry someone else's instructions) could have asked for it",
				tool, e.Out, strings.Join(priv, ", ")))
		}
	}
	if len(why) == 0 {
		return tools.FlowVerdict{}
	}
	return tools.FlowVerdict{Confirm: true, Flow: flow, Reason: strings.Join(why, "; ") + "."}
}
