package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/ferryhq/ferry/host/tools"
)

// Tools returns the browser tools, in the order a model reads them best: tabs,
// reading, scripts, then interaction.
func Tools(d Deps) []tools.Tool {
	ts := []tools.Tool{
		d.pass("list_tabs", "browser.tabs.list", tools.KindRead, callTimeout, false,
			"List the browser's open tabs with their tab_id, window_id, URL, title, and whether each is active, audible or loading. "+
				"Filters combine: url_pattern and title_pattern are JavaScript regular expressions matched case-insensitively.",
			`{"type":"object","properties":{
  "url_pattern":{"type":"string","minLength":1,"description":"regular expression the tab's URL must match (case-insensitive), e.g. \"github\\\\.com/.*/pull\""},
  "title_pattern":{"type":"string","minLength":1,"description":"regular expression the tab's title must match (case-insensitive)"},
  "active":{"type":"boolean","description":"true: only the active tab of each window; false: only the others"},
  "window_id":{"type":"integer","description":"only tabs of this window"},
  "audible":{"type":"boolean","description":"true: only tabs playing sound"}
},"additionalProperties":false}`),
		d.openTab(),
		d.pass("close_tab", "browser.tabs.close", tools.KindWrite, callTimeout, false,
			"Close a tab. Unsaved work in the page is lost.",
			`{"type":"object","properties":{"tab_id":`+tabIDRequired+`},"required":["tab_id"],"additionalProperties":false}`),
		d.pass("activate_tab", "browser.tabs.activate", tools.KindRead, callTimeout, false,
			"Make a tab the active one of its window and focus that window, so the person sees it.",
			`{"type":"object","properties":{"tab_id":`+tabIDRequired+`},"required":["tab_id"],"additionalProperties":false}`),
		d.getTabContent(),
		d.executeScript(),
		d.pass("browser_snapshot", "browser.page.snapshot", tools.KindRead, callTimeout, true,
			"Take a snapshot of the page's interactive elements and landmarks as a compact tree, one line each, indented by depth, "+
				`e.g. '- button "Add to cart" [ref=e12]'. Pass a ref (e12) to browser_click, browser_type, browser_select or browser_scroll. `+
				"Refs belong to the latest snapshot of the tab: after the page changes, take a new one. Use get_tab_content to read text.",
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`,
  "max_depth":{"type":"integer","minimum":1,"maximum":100,"default":25,"description":"deepest nesting level shown"},
  "max_nodes":{"type":"integer","minimum":1,"maximum":5000,"default":600,"description":"most elements listed; truncated is true when the page has more"}
},"additionalProperties":false}`),
		element(d.pass("browser_click", "browser.page.click", tools.KindWrite, callTimeout, true,
			"Click an element. Give ref or selector, one of them: a ref from the latest browser_snapshot, or a CSS selector (from get_tab_content's ⟨…⟩ marks, say). "+
				"A disabled, hidden or covered element is not clicked: the reason says which.",
			elementParams(``, nil)), true),
		element(sensitiveText(d.pass("browser_type", "browser.page.type", tools.KindWrite, callTimeout, true,
			"Type text into an input, a textarea or a contenteditable element. Give ref or selector, one of them: a ref from the latest browser_snapshot or a CSS selector. "+
				"It fires the input and change events that page frameworks listen to. Returns the field's value afterwards (masked for password and other secret fields).",
			elementParams(`,
  "text":{"type":"string","description":"the text to type"},
  "clear":{"type":"boolean","default":true,"description":"replace what the field holds (true) or append to it (false)"},
  "submit":{"type":"boolean","default":false,"description":"press Enter afterwards, which submits most forms"}`, []string{"text"}))), true),
		element(d.pass("browser_select", "browser.page.select", tools.KindWrite, callTimeout, true,
			"Choose options of a <select>. Give ref or selector, one of them: a ref from the latest browser_snapshot or a CSS selector. "+
				"values are the options' values or visible texts; several only for a multiple select.",
			elementParams(`,
  "values":{"type":"array","items":{"type":"string"},"minItems":1,"description":"the options to select, by value or visible text"}`, []string{"values"})), true),
		element(d.pass("browser_scroll", "browser.page.scroll", tools.KindRead, callTimeout, true,
			"Scroll the page by a number of pixels, or scroll an element into view: give ref or selector, at most one of them (a ref from the latest browser_snapshot, or a CSS selector). "+
				"Returns the new scroll position.",
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`,`+refAndSelector+`,
  "pixels":{"type":"integer","minimum":1,"maximum":100000,"default":500,"description":"how far to scroll when no element is given"},
  "direction":{"type":"string","enum":["down","up","left","right"],"default":"down"}
},"additionalProperties":false}`), false),
		d.screenshot(),
		d.navigate(),
		d.pass("browser_console", "browser.page.console", tools.KindRead, callTimeout, true,
			"The last 30 console messages of the tab's page (level, text, time): errors and warnings help explain a page that misbehaves.",
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`},"additionalProperties":false}`),
		d.pass("browser_network", "browser.page.network", tools.KindRead, callTimeout, true,
			"The last 30 network requests of the tab's page: URL, method, type, status, duration.",
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`},"additionalProperties":false}`),
		d.pass("browser_info", "browser.page.info", tools.KindRead, callTimeout, true,
			"The tab's URL, title, viewport size, scroll position and ready state (loading, interactive, complete).",
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`},"additionalProperties":false}`),
	}
	d.bindDocuments(ts)
	return ts
}

const (
	tabIDRequired = `{"type":"integer","minimum":0,"description":"the tab's id, from list_tabs"}`
	tabIDOptional = `{"type":"integer","minimum":0,"description":"the tab's id, from list_tabs; default: the tab the conversation belongs to, else the active tab"}`

	refAndSelector = `
  "ref":{"type":"string","pattern":"^e[0-9]+$","description":"an element ref from the latest browser_snapshot of this tab, e.g. e12"},
  "selector":{"type":"string","minLength":1,"description":"a CSS selector of the element, e.g. one from get_tab_content's ⟨…⟩ marks"}`
)

// elementParams is the schema of a tool acting on one element: ref and selector,
// then the tool's own properties. That exactly one of ref and selector is given is
// said in the description and checked by element, not written as anyOf or
// dependentSchemas: several model vendors and MCP clients refuse a schema with a
// combinator at its root or a bare false subschema.
func elementParams(extra string, required []string) string {
	req := ""
	if len(required) > 0 {
		b, _ := json.Marshal(required)
		req = `"required":` + string(b) + `,`
	}
	return `{"type":"object","properties":{"tab_id":` + tabIDOptional + `,` + refAndSelector + extra + `
},` + req + `"additionalProperties":false}`
}

// element adds to a tool acting on an element the check its schema leaves out: one
// of ref and selector (exactly one when required, else at most one).
func element(t tools.Tool, required bool) tools.Tool {
	t.Check = func(call *tools.Call) error {
		args, err := decodeArgs(call)
		if err != nil {
			return err
		}
		return exactlyOne(args, "ref", "selector", required)
	}
	return t
}

// exactlyOne refuses arguments that give both a and b, or (when required) neither.
func exactlyOne(args map[string]any, a, b string, required bool) error {
	_, hasA := args[a]
	_, hasB := args[b]
	switch {
	case hasA && hasB:
		return fmt.Errorf("/%s: not allowed with %s: give %s or %s, not both", b, a, a, b)
	case required && !hasA && !hasB:
		return fmt.Errorf("give %s or %s (one of them)", a, b)
	}
	return nil
}

// tabDefault fills tab_id with the tab the call is bound to (the side panel's tab)
// when the arguments name none; the extension falls back to the active tab.
func tabDefault(args map[string]any, call *tools.Call) {
	if _, ok := args["tab_id"]; !ok && call.TabID > 0 {
		args["tab_id"] = call.TabID
	}
}

func decodeArgs(call *tools.Call) (map[string]any, error) {
	args := map[string]any{}
	if len(call.Arguments) > 0 {
		if err := json.Unmarshal(call.Arguments, &args); err != nil {
			return nil, tools.Failf(tools.CodeInvalidParams, "arguments: %v", err)
		}
	}
	return args, nil
}

// pass is a tool whose arguments travel to the extension as they are (tab_id
// defaulted when bindTab) and whose result comes back as the extension sent it.
func (d Deps) pass(name, method string, kind tools.Kind, wait time.Duration, bindTab bool, desc, params string) tools.Tool {
	return tools.Tool{
		Name: name, Description: desc, Parameters: json.RawMessage(params),
		Source: tools.SourceBuiltin, Kind: kind, Timeout: toolTimeout(wait),
		Available: d.available,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			args, err := decodeArgs(call)
			if err != nil {
				return nil, err
			}
			if bindTab {
				tabDefault(args, call)
			}
			var out json.RawMessage
			if err := d.call(ctx, method, args, &out, wait); err != nil {
				return nil, err
			}
			return out, nil
		},
	}
}

// checkURL refuses what a tab must never be sent to by the agent: javascript: runs
// code in the page (past execute_script's confirmation) and data: pages are a
// phishing tool; both are refused before anything runs.
func checkURL(raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return tools.Failf(tools.CodeInvalidParams, "url: %v", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "file", "about":
		return nil
	case "":
		return tools.Failf(tools.CodeInvalidParams, "url %q has no scheme: write the whole URL, like https://example.com/", raw)
	}
	return tools.Failf(tools.CodeInvalidParams, "url scheme %q is not allowed: only http, https, file and about URLs can be opened", u.Scheme)
}

// urlPattern admits the schemes checkURL admits, so that a write (browser_navigate)
// with a javascript: URL is refused before anyone is asked to confirm it.
const urlPattern = `"^([hH][tT][tT][pP][sS]?|[fF][iI][lL][eE]|[aA][bB][oO][uU][tT]):"`

const maxLoadWait = 30 * time.Second

func (d Deps) openTab() tools.Tool {
	return tools.Tool{
		Name: "open_tab",
		Description: "Open a URL in a new tab, or in an existing tab when tab_id is given (that navigates the tab: off unless the person allowed it, setting " + SettingAllowNavigate + "). " +
			"By default the tab becomes active and the call waits until the page has loaded, for at most 30 seconds (timed_out says when the wait was cut short; the page may still be loading). " +
			"A file:// URL or an address on the person's own computer or network is opened only after they approve it, unless the setting " + SettingAllowPrivateHosts + " names it.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
  "url":{"type":"string","pattern":` + urlPattern + `,"description":"the URL to open (http, https, file or about)"},
  "tab_id":{"type":"integer","minimum":0,"description":"an existing tab to navigate instead of opening a new one"},
  "active":{"type":"boolean","default":true,"description":"make the tab the active one"},
  "window_id":{"type":"integer","description":"the window to open the tab in"},
  "wait_until_loaded":{"type":"boolean","default":true,"description":"wait until the page has loaded (at most 30 s)"}
},"required":["url"],"additionalProperties":false}`),
		// Of kind read: opening a new tab changes nothing the person has; with a
		// tab_id the assessment makes the call a write.
		Source: tools.SourceBuiltin, Kind: tools.KindRead, Timeout: toolTimeout(maxLoadWait + 10*time.Second),
		Available: d.available,
		Assess:    d.assessNavigation,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			args, err := decodeArgs(call)
			if err != nil {
				return nil, err
			}
			if err := checkURL(args["url"].(string)); err != nil {
				return nil, err
			}
			args["timeout_ms"] = maxLoadWait.Milliseconds()
			var out struct {
				TabID    int    `json:"tab_id"`
				WindowID int    `json:"window_id"`
				URL      string `json:"url"`
				Title    string `json:"title"`
				Status   string `json:"status"`
				Loaded   bool   `json:"loaded"`
				WaitedMS int64  `json:"waited_ms"`
				TimedOut bool   `json:"timed_out"`
				Note     string `json:"note,omitempty"`
			}
			if err := d.call(ctx, "browser.tabs.open", args, &out, maxLoadWait+10*time.Second); err != nil {
				return nil, err
			}
			if out.TimedOut {
				out.Note = "stopped waiting after 30 s: the page is still loading; get_tab_content or browser_info can look at it now or later"
			}
			return out, nil
		},
	}
}

func (d Deps) navigate() tools.Tool {
	return tools.Tool{
		Name: "browser_navigate",
		Description: "Navigate a tab: give url or action, one of them (a URL to load, or back, forward or reload). Off unless the person allowed it (setting " + SettingAllowNavigate + "); " +
			"open_tab opens a URL in a new tab without it. A file:// URL or an address on the person's own computer or network asks them first, " +
			"unless the setting " + SettingAllowPrivateHosts + " names it.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"tab_id":` + tabIDOptional + `,
  "url":{"type":"string","pattern":` + urlPattern + `,"description":"the URL to load in the tab (http, https, file or about)"},
  "action":{"type":"string","enum":["back","forward","reload"],"description":"go back, forward, or reload, instead of a URL"}
},"additionalProperties":false}`),
		Source: tools.SourceBuiltin, Kind: tools.KindWrite, Timeout: toolTimeout(maxLoadWait + 10*time.Second),
		Available: d.available,
		// The assessment holds browser.allow_navigate and the private destinations.
		Assess: d.assessNavigation,
		Check: func(call *tools.Call) error {
			args, err := decodeArgs(call)
			if err != nil {
				return err
			}
			return exactlyOne(args, "url", "action", true)
		},
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			args, err := decodeArgs(call)
			if err != nil {
				return nil, err
			}
			if u, ok := args["url"].(string); ok {
				if err := checkURL(u); err != nil {
					return nil, err
				}
			}
			tabDefault(args, call)
			var out json.RawMessage
			if err := d.call(ctx, "browser.page.navigate", args, &out, maxLoadWait+10*time.Second); err != nil {
				return nil, err
			}
			return out, nil
		},
	}
}

// sensitiveText makes browser_type's text a secret of the call unless the
// extension, which sees the field, says it is not one: a password field, or one whose
// name, id or autocomplete says secret, token, password or key ("sensitive" in the
// result). A call that failed, or an extension too old to say, keeps the text out of
// the audit log and the log file too: whether it was a password is unknown.
func sensitiveText(t tools.Tool) tools.Tool {
	t.Secret = func(call *tools.Call, result any) []string {
		raw, ok := result.(json.RawMessage)
		var r struct {
			Sensitive *bool `json:"sensitive"`
		}
		if ok && json.Unmarshal(raw, &r) == nil && r.Sensitive != nil && !*r.Sensitive {
			return nil
		}
		return []string{"text"}
	}
	return t
}
