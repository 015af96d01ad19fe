// Package browser holds the host's browser tools: tabs, page content, page scripts,
// and generic interaction with pages that declare no actions of their own. Each tool
// is an ordinary registry tool (one pipeline, one audit log); its Run asks the
// extension's service worker to do the browser part through the browser.* methods
// of protocol/BROWSER.md, and maps their -32010 error reasons to result codes by that
// document's table.
//
// For the agent runtime: browser_screenshot's result carries the image as
// result.image = {data_url, width, height, bytes, mime_type} (see Image and
// ImageFromResult). The agent loop must turn it into an image part for models that
// take images, drop the data URL from the text it sends, and tell a text-only model
// that an image was left out.
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/host/web"
	"github.com/ferryhq/ferry/protocol"
)

// Browser sends one request to the extension. It returns ErrNoBrowser when no
// extension is connected, and the *protocol.Error of a JSON-RPC error answer as is.
type Browser interface {
	Call(ctx context.Context, method string, params, result any) error
}

// Connected is optionally implemented by a Browser that can tell, without a round
// trip, whether an extension is connected; tools.list then shows the browser tools
// as unavailable while none is.
type Connected interface {
	Connected() bool
}

// ErrNoBrowser is what a Browser returns when no extension is connected.
var ErrNoBrowser = errors.New("no browser is connected")

// NoBrowserReason is the reason every browser tool gives while no extension is
// connected (a `ferry call`, a `ferry run` without a browser).
const NoBrowserReason = "no browser is connected: open Chrome with the Ferry extension, or use the side panel"

// ConnBrowser reaches the extension over the connection conn returns at the time of
// each call (the host's Conn method); a nil function or a nil connection means no
// browser.
func ConnBrowser(conn func() *protocol.Conn) Browser { return connBrowser{conn} }

type connBrowser struct{ conn func() *protocol.Conn }

func (c connBrowser) current() *protocol.Conn {
	if c.conn == nil {
		return nil
	}
	return c.conn()
}

func (c connBrowser) Call(ctx context.Context, method string, params, result any) error {
	conn := c.current()
	if conn == nil {
		return ErrNoBrowser
	}
	return conn.Call(ctx, method, params, result)
}

func (c connBrowser) Connected() bool { return c.current() != nil }

// Summarizer distils page content through the configured model (get_tab_content's
// prompt); the same interface as web_fetch's.
type Summarizer = web.Summarizer

// Deps is what the browser tools need from the host.
type Deps struct {
	Browser  Browser         // nil: no browser, ever (the tools are listed as unavailable)
	Settings config.Settings // nil: every setting at its default
	// Store writes the settings a person's lasting answer changes (execute_script's
	// "always allow scripts on this site"); nil: no lasting answer is offered.
	Store      SettingsStore
	Summarizer Summarizer // nil: get_tab_content's prompt fails saying no model is configured

	// wait replaces every browser request's bound in tests, unexported so that
	// production code always gets the real ones.
	wait time.Duration
}

// SettingsStore writes one setting, checked as `ferry config set` checks it.
type SettingsStore interface {
	Set(ctx context.Context, key, value string) error
}

// Settings keys this package registers.
const (
	SettingScriptsAutoApprove  = "browser.scripts_auto_approve_origins"
	SettingAllowNavigate       = "browser.allow_navigate"
	SettingScreenshotMaxBytes  = "browser.screenshot_max_bytes"
	SettingContentMaxLength    = "browser.content_max_length"
	defaultScreenshotMaxBytes  = 1 << 20
	defaultContentMaxLength    = 100000
	minScreenshotMaxBytes      = 16 << 10
	maxScreenshotMaxBytesLimit = 16 << 20
)

func init() {
	config.Register(config.Setting{
		Key: SettingScriptsAutoApprove,
		Description: "comma-separated origins (https://example.com) where execute_script runs page scripts without asking; " +
			"elsewhere a person confirms each one",
		Default: "",
		Validate: func(v string) error {
			_, err := origins.ParseList(v)
			return err
		},
	})
	config.Register(config.Setting{
		Key:         SettingAllowNavigate,
		Description: "let the agent navigate tabs it did not open itself with browser_navigate or open_tab (a write: off unless allowed)",
		Default:     "false",
		Validate:    config.OneOf("true", "false"),
	})
	config.Register(config.Setting{
		Key:         SettingScreenshotMaxBytes,
		Description: "bytes a browser_screenshot image may have; a larger one is taken again smaller (width, JPEG quality)",
		Default:     strconv.Itoa(defaultScreenshotMaxBytes),
		Validate:    config.IntRange(minScreenshotMaxBytes, maxScreenshotMaxBytesLimit),
	})
	config.Register(config.Setting{
		Key:         SettingContentMaxLength,
		Description: "characters of content get_tab_content returns when a call gives no max_length (0: no limit)",
		Default:     strconv.Itoa(defaultContentMaxLength),
		Validate:    config.IntRange(0, 1<<30),
	})
}

// settings is the current snapshot; without Settings every setting is at its
// default, which is always the cautious value (no auto-approval, no navigation).
func (d Deps) settings(ctx context.Context) *config.Snapshot {
	if d.Settings == nil {
		return config.Of(nil)
	}
	return d.Settings.Snapshot(ctx)
}

// available is every browser tool's precondition.
func (d Deps) available(ctx context.Context, call *tools.Call) (bool, string) {
	if d.Browser == nil {
		return false, NoBrowserReason
	}
	if c, ok := d.Browser.(Connected); ok && !c.Connected() {
		return false, NoBrowserReason
	}
	return true, ""
}

// errorData is the data of a -32010 error.
type errorData struct {
	Reason  string `json:"reason"`
	URL     string `json:"url"`
	Origin  string `json:"origin"`
	State   string `json:"state"`
	Message string `json:"message"`
	Stack   string `json:"stack"`
}

// callTimeout bounds one request to the extension unless a tool sets its own: a
// service worker that Chrome restarted mid-call never answers, and the call must
// end with a clear error rather than wait.
const callTimeout = 30 * time.Second

// toolTimeout is the pipeline's bound on a tool whose browser request is bounded
// by wait: a little more, so that the browser's own timeout error is the one the
// caller sees.
func toolTimeout(wait time.Duration) time.Duration { return wait + 10*time.Second }

// call sends one request and maps every failure to a tool result code.
func (d Deps) call(ctx context.Context, method string, params, result any, wait time.Duration) error {
	if d.Browser == nil {
		return tools.Failf(tools.CodeActionUnavailable, "%s", NoBrowserReason)
	}
	if d.wait > 0 {
		wait = d.wait
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err := d.Browser.Call(cctx, method, withDocument(ctx, params), result)
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNoBrowser) {
		return tools.Failf(tools.CodeActionUnavailable, "%s", NoBrowserReason)
	}
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return MapError(method, perr)
	}
	if ctx.Err() == nil && cctx.Err() != nil {
		return tools.Failf(tools.CodeTimeout, "the browser did not answer %s within %s (the extension's service worker may have been restarted); it may have had effects: check before retrying", method, wait)
	}
	if c, ok := d.Browser.(Connected); ok && !c.Connected() {
		return tools.Failf(tools.CodeHandlerError, "the browser disconnected during %s; it may have had effects: check before retrying", method)
	}
	return tools.Failf(tools.CodeHandlerError, "%s failed: %v", method, err)
}

// MapError is BROWSER.md's table, the one place where the extension's -32010
// reasons become tool codes: the browser tools and the pages' actions both come
// through it. The extension's message is kept, with what the agent should do next
// where the reason implies it; subject (the method or the action) names what failed
// when the message alone would not.
func MapError(subject string, perr *protocol.Error) error {
	msg := strings.TrimSpace(perr.Message)
	if msg == "" {
		msg = subject + " failed"
	}
	if perr.Code != protocol.CodeBrowserError {
		return tools.Failf(tools.CodeHandlerError, "%s: %s", subject, msg)
	}
	var d errorData
	if perr.Data != nil {
		raw, err := json.Marshal(perr.Data)
		if err == nil {
			json.Unmarshal(raw, &d)
		}
	}
	with := func(label, v string) string {
		if v == "" || strings.Contains(msg, v) {
			return msg
		}
		return msg + " (" + label + v + ")"
	}
	switch d.Reason {
	case "no_tab":
		return tools.Failf(tools.CodeActionUnavailable, "%s; list_tabs shows the open tabs", msg)
	case "no_frame":
		return tools.Failf(tools.CodeActionUnavailable, "%s", msg)
	case "gone":
		return tools.Failf(tools.CodeHandlerError, "%s; it may have had effects: check before retrying", msg)
	case "restricted_page":
		return tools.Failf(tools.CodeActionUnavailable, "%s: the browser does not let extensions work in this page", with("", d.URL))
	case "no_permission":
		return tools.Failf(tools.CodePermissionDenied, "%s", with("origin ", d.Origin))
	case "document_changed":
		return tools.Failf(tools.CodeActionUnavailable, "%s; look at the tab again (browser_info, get_tab_content) before deciding what to do there", msg)
	case "stale_ref":
		return tools.Failf(tools.CodeActionUnavailable, "%s: the page changed since that snapshot; take a new browser_snapshot and use a ref from it", msg)
	case "no_element":
		return tools.Failf(tools.CodeActionUnavailable, "%s", msg)
	case "element_state":
		return tools.Failf(tools.CodeActionUnavailable, "%s", with("", d.State))
	case "dialog_open", "beforeunload":
		// The page waits behind a dialog of the person's, or asks before being left:
		// nothing was done, and the message names the dialog.
		return tools.Failf(tools.CodeActionUnavailable, "%s", msg)
	case "invalid":
		return tools.Failf(tools.CodeInvalidParams, "%s", msg)
	case "timeout":
		return tools.Failf(tools.CodeTimeout, "%s; it may have had effects: check before retrying", msg)
	case "script_error":
		text := msg
		if d.Message != "" && !strings.Contains(msg, d.Message) {
			text = msg + ": " + d.Message
		}
		if d.Stack != "" {
			text += "\n" + d.Stack
		}
		return tools.Failf(tools.CodeHandlerError, "%s", text)
	}
	return tools.Failf(tools.CodeHandlerError, "%s", msg)
}

// TabLookup answers what a tab shows now, for the data-flow policy: the URL of a
// tab's document from the browser's own tab list (no script runs in the page), or
// for tab 0 the active tab's.
func TabLookup(b Browser) interface {
	TabURL(ctx context.Context, tab int) (string, error)
} {
	return tabLookup{b}
}

type tabLookup struct{ b Browser }

// lookupWait bounds one look-up: the confirm step waits on it.
const lookupWait = 5 * time.Second

func (l tabLookup) TabURL(ctx context.Context, tab int) (string, error) {
	if l.b == nil {
		return "", ErrNoBrowser
	}
	ctx, cancel := context.WithTimeout(ctx, lookupWait)
	defer cancel()
	if tab <= 0 {
		var info struct {
			URL string `json:"url"`
		}
		if err := l.b.Call(ctx, "browser.page.info", map[string]any{}, &info); err != nil {
			return "", err
		}
		return info.URL, nil
	}
	var out struct {
		Tabs []struct {
			TabID int    `json:"tab_id"`
			URL   string `json:"url"`
		} `json:"tabs"`
	}
	if err := l.b.Call(ctx, "browser.tabs.list", map[string]any{}, &out); err != nil {
		return "", err
	}
	for _, t := range out.Tabs {
		if t.TabID == tab {
			return t.URL, nil
		}
	}
	return "", fmt.Errorf("no tab %d is open", tab)
}
