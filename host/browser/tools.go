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
	own := &ownTabs{by: map[string]map[int]bool{}}
	ts := []tools.Tool{
		declare(d.pass("list_tabs", "browser.tabs.list", tools.KindRead, callTimeout, false,
			"List the open tabs (tab_id, window_id, url, title, active, audible, loading). Every argument given filters: "+
				"the patterns are JavaScript regular expressions, case-insensitive; active and audible keep the tabs whose flag is the same.",
			`{"type":"object","properties":{
  "url_pattern":{"type":"string","minLength":1},
  "title_pattern":{"type":"string","minLength":1},
  "active":{"type":"boolean"},
  "window_id":{"type":"integer"},
  "audible":{"type":"boolean"}
},"additionalProperties":false}`), tools.ClassRead, listsTabs, listedTabs),
		d.openTab(own),
		declare(d.pass("close_tab", "browser.tabs.close", tools.KindWrite, callTimeout, false,
			"Close a tab; unsaved work in it is lost.",
			`{"type":"object","properties":{"tab_id":`+tabIDRequired+`},"required":["tab_id"],"additionalProperties":false}`),
			tools.ClassDestroy, d.effects(closesTab), closedTab),
		declare(d.pass("activate_tab", "browser.tabs.activate", tools.KindRead, callTimeout, false,
			"Make a tab active and focus its window, so the person sees it.",
			`{"type":"object","properties":{"tab_id":`+tabIDRequired+`},"required":["tab_id"],"additionalProperties":false}`),
			tools.ClassRead, d.effects(nil), activated),
		d.getTabContent(),
		d.executeScript(),
		declare(d.pass("browser_snapshot", "browser.page.snapshot", tools.KindRead, callTimeout, true,
			"The page's interactive elements and landmarks as an indented tree, one a line, with the refs the element tools take: "+
				`'- button "Add to cart" [ref=e12]'. To read text, use get_tab_content. Past max_nodes it says how many were left out and next_offset.`,
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`,
  "max_depth":{"type":"integer","minimum":1,"maximum":100,"default":25},
  "max_nodes":{"type":"integer","minimum":1,"maximum":5000,"default":600},
  "offset":{"type":"integer","minimum":0,"default":0,"description":"the previous next_offset"},
  "selector":{"type":"string","minLength":1,"description":"list one region only"}
},"additionalProperties":false}`), tools.ClassRead, d.effects(nil), readsPage(true)),
		declare(element(d.pass("browser_click", "browser.page.click", tools.KindWrite, callTimeout, true,
			"Click an element. A disabled, hidden or covered one is not clicked: the reason says which.",
			elementParams(``, nil)), true),
			// A click on a submit control sends its form to the form's action.
			tools.ClassPageWrite, d.effects(d.formSends(changesPage(nil), func(a tabArgs, submitter bool) bool { return submitter })), readsPage(true)),
		declare(element(sensitiveText(d.pass("browser_type", "browser.page.type", tools.KindWrite, callTimeout, true,
			"Type into an input, textarea or contenteditable element, firing the input and change events frameworks listen to; "+
				"returns the field's value (masked in secret fields).",
			elementParams(`,
  "text":{"type":"string"},
  "clear":{"type":"boolean","default":true,"description":"false appends"},
  "submit":{"type":"boolean","description":"press Enter after"}`, []string{"text"}))), true),
			tools.ClassPageWrite, d.effects(d.formSends(changesPage(carriesText), func(tabArgs, bool) bool { return true })), readsPage(true)),
		declare(element(d.pass("browser_select", "browser.page.select", tools.KindWrite, callTimeout, true,
			"Choose options of a <select> by value or visible text; several only in a multiple select.",
			elementParams(`,
  "values":{"type":"array","items":{"type":"string"},"minItems":1}`, []string{"values"})), true),
			// A page may submit its form when a choice changes: the form's action hears it.
			tools.ClassPageWrite, d.effects(d.formSends(changesPage(carriesValues), func(tabArgs, bool) bool { return true })), readsPage(true)),
		stepped(declare(element(d.pass("browser_scroll", "browser.page.scroll", tools.KindRead, callTimeout, true,
			"Scroll the page by pixels (rounded to 100, 250, 500, 1000, 2500, 5000, 10000 or more), or an element into view (ref or selector); returns the scroll position.",
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`,`+refAndSelector+`,
  "pixels":{"type":"integer","minimum":1,"maximum":100000,"default":500},
  "direction":{"type":"string","enum":["down","up","left","right"],"default":"down"}
},"additionalProperties":false}`), false),
			// The page reads where it was scrolled to: the scroll is a write to it, and
			// the distance is rounded to a few steps so that it carries no number
			// (README: Known limits).
			tools.ClassPageWrite, d.effects(changesPage(nil)), noContent)),
		d.screenshot(),
		d.navigate(own),
		declare(d.pass("browser_console", "browser.page.console", tools.KindRead, callTimeout, true,
			"The page's last 30 console messages (level, text, time): errors and warnings explain a page that misbehaves.",
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`},"additionalProperties":false}`), tools.ClassRead, d.effects(nil), readsPage(true)),
		declare(d.pass("browser_network", "browser.page.network", tools.KindRead, callTimeout, true,
			"The page's last 30 network requests: URL, method, type, status, duration.",
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`},"additionalProperties":false}`), tools.ClassRead, d.effects(nil), readsPage(true)),
		declare(d.pass("browser_info", "browser.page.info", tools.KindRead, callTimeout, true,
			"The tab's URL, title, viewport size, scroll position, ready state, the dialog its page waits behind and the last dialogs answered.",
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`},"additionalProperties":false}`), tools.ClassRead, d.effects(nil), readsPage(true)),
		declare(d.pass("browser_dialog", "browser.page.dialog", tools.KindWrite, callTimeout, true,
			"Set the answer to the page's next JavaScript dialog (alert, confirm, prompt, leaving with unsaved changes), then repeat the action that opens it; "+
				"a call that meets a dialog reports it. A dialog already open in a page the person uses waits for them.",
			`{"type":"object","properties":{"tab_id":`+tabIDOptional+`,
  "action":{"type":"string","enum":["accept","dismiss"]},
  "text":{"type":"string","description":"a prompt's answer"}
},"required":["action"],"additionalProperties":false}`),
			// A prompt's answer goes to the page.
			tools.ClassPageWrite, d.effects(changesPage(carriesText)), readsPage(true)),
	}
	d.bindDocuments(ts)
	return ts
}

// declare sets what a tool does as the data-flow rule sees it.
func declare(t tools.Tool, class tools.Class, effects func(context.Context, *tools.Call) (tools.Effect, error), prov func(*tools.Call, tools.Effect, *tools.Result) tools.Provenance) tools.Tool {
	t.Class, t.Effects, t.Provenance = class, effects, prov
	return t
}

// scrollSteps are the distances a scroll may take: a page that reads its scroll
// position learns which step, a few bits, never a number a model chose.
var scrollSteps = []int{100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000}

// stepped rounds browser_scroll's pixels to the nearest step before the page sees it.
func stepped(t tools.Tool) tools.Tool {
	run := t.Run
	t.Run = func(ctx context.Context, call *tools.Call) (any, error) {
		args, err := decodeArgs(call)
		if err != nil {
			return nil, err
		}
		if px, ok := args["pixels"].(float64); ok {
			args["pixels"] = nearestStep(int(px))
			b, _ := json.Marshal(args)
			c := *call
			c.Arguments = b
			return run(ctx, &c)
		}
		return run(ctx, call)
	}
	return t
}

func nearestStep(px int) int {
	best := scrollSteps[0]
	for _, s := range scrollSteps {
		if abs(s-px) < abs(best-px) {
			best = s
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// carriesText: what browser_type and browser_dialog hand the page.
func carriesText(a tabArgs) []string {
	if a.Text == nil {
		return nil
	}
	return []string{*a.Text}
}

func carriesValues(a tabArgs) []string { return a.Values }

const (
	// What tab_id is and which tab it defaults to, what a ref or a selector is, is said
	// once in the system prompt (agent.ToolGuide), not in every tool.
	tabIDRequired = `{"type":"integer","minimum":0}`
	tabIDOptional = tabIDRequired

	refAndSelector = `
  "ref":{"type":"string","pattern":"^e[0-9]+$"},
  "selector":{"type":"string","minLength":1}`
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

// maxHops bounds the redirects between hosts one open_tab follows.
const maxHops = 10

func (d Deps) openTab(own *ownTabs) tools.Tool {
	return tools.Tool{
		Name: "open_tab",
		Description: "Open a URL in a new tab, or navigate tab tab_id to it. The tab becomes active and the call waits for the load, " +
			"at most 30 s (timed_out: still loading), unless active or wait_until_loaded is false.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
  "url":{"type":"string","pattern":` + urlPattern + `},
  "tab_id":` + tabIDRequired + `,
  "active":{"type":"boolean"},
  "window_id":{"type":"integer"},
  "wait_until_loaded":{"type":"boolean"}
},"required":["url"],"additionalProperties":false}`),
		// Of kind read: opening a new tab changes nothing the person has; with a
		// tab_id the assessment makes the call a write.
		Source: tools.SourceBuiltin, Kind: tools.KindRead, Timeout: toolTimeout(maxLoadWait + 10*time.Second),
		Available: d.available,
		Assess:    d.assessNavigation(own),
		// The URL is a destination; navigating a tab changes its page.
		Class:      tools.ClassWayOut,
		Effects:    d.effects(opens(func(a tabArgs) bool { return a.TabID != nil })),
		Provenance: opened,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			args, err := decodeArgs(call)
			if err != nil {
				return nil, err
			}
			if err := checkURL(args["url"].(string)); err != nil {
				return nil, err
			}
			args["timeout_ms"] = maxLoadWait.Milliseconds()
			if call.Scope.Judged() {
				// The tab stops at a redirect to another host, which the run's rule then
				// judges as a destination of its own (below).
				args["stay_on_host"] = true
			}
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
				// The dialogs the page opened while loading, and the one it stopped
				// behind (protocol/BROWSER.md).
				Dialogs json.RawMessage `json:"dialogs,omitempty"`
				Dialog  json.RawMessage `json:"dialog,omitempty"`
				// StoppedRedirect is where the page redirected to another host; the tab
				// stopped before going there.
				StoppedRedirect string `json:"stopped_redirect,omitempty"`
			}
			if err := d.call(ctx, "browser.tabs.open", args, &out, maxLoadWait+10*time.Second); err != nil {
				return nil, err
			}
			for hop := 0; out.StoppedRedirect != "" && hop < maxHops; hop++ {
				next := out.StoppedRedirect
				if err := tools.CheckSend(ctx, call, tools.Send{URL: next}); err != nil {
					return nil, err
				}
				if err := checkURL(next); err != nil {
					return nil, tools.Failf(tools.CodeActionUnavailable, "the page redirected to %s, which a tab cannot be sent to: %v", next, err)
				}
				// The hop may carry what it carries: go there, pinned again.
				again := map[string]any{"url": next, "tab_id": out.TabID, "timeout_ms": args["timeout_ms"], "stay_on_host": true}
				if err := d.call(ctx, "browser.tabs.open", again, &out, maxLoadWait+10*time.Second); err != nil {
					return nil, err
				}
			}
			if out.StoppedRedirect != "" {
				return nil, tools.Failf(tools.CodeActionUnavailable, "stopped after %d redirects between hosts (the last pointed to %s)", maxHops, out.StoppedRedirect)
			}
			if _, navigated := args["tab_id"]; !navigated {
				own.add(tools.Owner(ctx, call), out.TabID)
			}
			if out.TimedOut {
				out.Note = "stopped waiting after 30 s: the page is still loading; get_tab_content or browser_info can look at it now or later"
			}
			return out, nil
		},
	}
}

func (d Deps) navigate(own *ownTabs) tools.Tool {
	return tools.Tool{
		Name:        "browser_navigate",
		Description: "Load a URL in the tab (url), or go back, forward or reload (action): one of the two. To open a URL in a new tab, use open_tab.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"tab_id":` + tabIDOptional + `,
  "url":{"type":"string","pattern":` + urlPattern + `},
  "action":{"type":"string","enum":["back","forward","reload"]}
},"additionalProperties":false}`),
		Source: tools.SourceBuiltin, Kind: tools.KindWrite, Timeout: toolTimeout(maxLoadWait + 10*time.Second),
		Available: d.available,
		// The assessment holds browser.allow_navigate and the private destinations.
		Assess:     d.assessNavigation(own),
		Class:      tools.ClassWayOut,
		Effects:    d.effects(opens(func(tabArgs) bool { return true })),
		Provenance: opened,
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
			_, toURL := args["url"]
			if toURL && call.Scope.Judged() {
				args["stay_on_host"] = true // as open_tab: each hop to another host is judged
			}
			var out json.RawMessage
			if err := d.call(ctx, "browser.page.navigate", args, &out, maxLoadWait+10*time.Second); err != nil {
				return nil, err
			}
			for hop := 0; toURL; hop++ {
				var r struct {
					StoppedRedirect string `json:"stopped_redirect"`
				}
				if json.Unmarshal(out, &r) != nil || r.StoppedRedirect == "" {
					break
				}
				if hop == maxHops {
					return nil, tools.Failf(tools.CodeActionUnavailable, "stopped after %d redirects between hosts (the last pointed to %s)", maxHops, r.StoppedRedirect)
				}
				if err := tools.CheckSend(ctx, call, tools.Send{URL: r.StoppedRedirect}); err != nil {
					return nil, err
				}
				if err := checkURL(r.StoppedRedirect); err != nil {
					return nil, tools.Failf(tools.CodeActionUnavailable, "the page redirected to %s, which a tab cannot be sent to: %v", r.StoppedRedirect, err)
				}
				args["url"] = r.StoppedRedirect
				if err := d.call(ctx, "browser.page.navigate", args, &out, maxLoadWait+10*time.Second); err != nil {
					return nil, err
				}
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
