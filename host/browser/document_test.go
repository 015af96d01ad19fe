package browser

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/tools"
)

// A page script is bound to the document its origin was judged in, asked or
// auto-approved: the request carries that document, and a tab that moved on
// answers document_changed, which is ACTION_UNAVAILABLE.
func TestScriptBoundToDocument(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.on("browser.page.info", ok(map[string]any{"tab_id": 5, "url": "http://127.0.0.1:8/a", "title": "A", "document_id": "DOC-A"}))
	e.fake.on("browser.script.execute", ok(map[string]any{"value": 1, "type": "number"}))
	wantDoc := func(what string) {
		t.Helper()
		p := e.fake.last("browser.script.execute")
		d, _ := p["document"].(map[string]any)
		if p["tab_id"] != 5.0 || d["document_id"] != "DOC-A" || d["origin"] != "http://127.0.0.1:8" || d["url"] != "http://127.0.0.1:8/a" {
			t.Fatalf("%s: params %v, want the judged document", what, p)
		}
	}
	// Without a tab_id: the script runs in the tab that was judged, not whichever is active later.
	if r := e.call("execute_script", `{"code":"1","target":"page"}`); !r.Success {
		t.Fatalf("%+v", r)
	}
	wantDoc("approved")
	if c := e.ui.confirms[0]; c.Page == nil || c.Page.ID != "DOC-A" || c.Origin != "http://127.0.0.1:8" {
		t.Fatalf("the card's page %+v origin %q", c.Page, c.Origin)
	}
	e.set(SettingScriptsAutoApprove, "http://127.0.0.1:8")
	if r := e.call("execute_script", `{"code":"2","target":"page"}`); !r.Success || len(e.ui.confirms) != 1 {
		t.Fatalf("%+v, %d confirmations", r, len(e.ui.confirms))
	}
	wantDoc("auto-approved")

	e.fake.on("browser.script.execute", func(map[string]any) (any, error) {
		return nil, browserErr("document_changed", "the tab's page changed after the call was approved (approved for http://127.0.0.1:8/a, the tab now shows http://localhost:8): nothing was done", nil)
	})
	r := e.call("execute_script", `{"code":"3","target":"page"}`)
	if r.Code != tools.CodeActionUnavailable || !strings.Contains(r.Reason, "nothing was done") || !strings.Contains(r.Reason, "localhost:8") {
		t.Fatalf("%+v, want ACTION_UNAVAILABLE saying the page changed", r)
	}
}

// Any browser call a person confirms is bound the same way, through Locate; calls
// nobody is asked about are not, and cost no extra round trip.
func TestConfirmedBrowserCallBound(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.on("browser.page.document", ok(map[string]any{"tab_id": 9, "url": "https://shop.example/cart", "title": "Cart", "document_id": "DOC-9"}))
	e.fake.on("browser.page.click", ok(map[string]any{"clicked": true}))
	e.fake.on("browser.tabs.close", ok(map[string]any{"closed": true}))
	if r := e.call("browser_click", `{"selector":"#buy"}`); !r.Success {
		t.Fatalf("%+v", r)
	}
	if p := e.fake.last("browser.page.click"); p["document"] != nil || e.fake.last("browser.page.document") != nil {
		t.Fatalf("an unconfirmed click was bound: %v", p)
	}
	e.set(tools.SettingConfirmWrites, "true")
	if r := e.call("browser_click", `{"selector":"#buy"}`); !r.Success {
		t.Fatalf("%+v", r)
	}
	p := e.fake.last("browser.page.click")
	if d, _ := p["document"].(map[string]any); p["tab_id"] != 9.0 || d["document_id"] != "DOC-9" || d["origin"] != "https://shop.example" {
		t.Fatalf("confirmed click params %v", p)
	}
	if c := e.ui.confirms[len(e.ui.confirms)-1]; c.Origin != "https://shop.example" || c.Page == nil || c.Page.Title != "Cart" {
		t.Fatalf("card %+v", c)
	}
	if r := e.call("close_tab", `{"tab_id":9}`); !r.Success || e.fake.last("browser.page.document")["tab_id"] != 9.0 {
		t.Fatalf("close_tab: %+v", r)
	}
	if d, _ := e.fake.last("browser.tabs.close")["document"].(map[string]any); d["document_id"] != "DOC-9" {
		t.Fatalf("confirmed close_tab not bound: %v", e.fake.last("browser.tabs.close"))
	}
}

// open_tab with a tab_id is a navigation: off with browser.allow_navigate, and a
// write when on (tools.confirm_writes asks); a new tab is neither.
func TestOpenTabWithTabIDIsNavigation(t *testing.T) {
	e := newEnv(t, nil)
	// Tab 3 is the person's; the new tabs the calls open are 7.
	e.fake.on("browser.tabs.open", ok(map[string]any{"tab_id": 7, "url": "https://example.com/", "loaded": true}))
	e.fake.on("browser.page.document", ok(map[string]any{"tab_id": 3, "url": "https://mail.example/inbox", "document_id": "D3"}))
	r := e.call("open_tab", `{"url":"https://example.com/","tab_id":3}`)
	if r.Code != tools.CodePermissionDenied || !strings.Contains(r.Reason, SettingAllowNavigate) {
		t.Fatalf("%+v, want PERMISSION_DENIED naming %s", r, SettingAllowNavigate)
	}
	if got := e.fake.methods(); len(got) != 0 {
		t.Fatalf("the browser was asked %v", got)
	}
	if r := e.call("open_tab", `{"url":"https://example.com/"}`); !r.Success {
		t.Fatalf("a new tab: %+v", r)
	}
	e.set(SettingAllowNavigate, "true")
	if r := e.call("open_tab", `{"url":"https://example.com/","tab_id":3}`); !r.Success || len(e.ui.confirms) != 0 {
		t.Fatalf("allowed: %+v, %d confirmations", r, len(e.ui.confirms))
	}
	e.set(tools.SettingConfirmWrites, "true")
	if r := e.call("open_tab", `{"url":"https://example.com/"}`); !r.Success || len(e.ui.confirms) != 0 {
		t.Fatalf("a new tab under confirm_writes: %+v, %d confirmations", r, len(e.ui.confirms))
	}
	e.ui.approve = false
	if r := e.call("open_tab", `{"url":"https://example.com/","tab_id":3}`); r.Code != tools.CodeUserRejected || len(e.ui.confirms) != 1 {
		t.Fatalf("navigation under confirm_writes: %+v, %d confirmations", r, len(e.ui.confirms))
	}
	if c := e.ui.confirms[0]; c.Page == nil || c.Page.URL != "https://mail.example/inbox" {
		t.Fatalf("the card does not show the tab being navigated: %+v", c.Page)
	}
	e.set(SettingAllowNavigate, "false")
	if r := e.call("browser_navigate", `{"url":"https://example.com/","tab_id":3}`); r.Code != tools.CodePermissionDenied || len(e.ui.confirms) != 1 {
		t.Fatalf("browser_navigate off: %+v (asked %d)", r, len(e.ui.confirms))
	}
}

// A private destination asks a person unless browser.allow_private_hosts names it.
func TestPrivateDestinations(t *testing.T) {
	defer func(l func(context.Context, string) ([]netip.Addr, error)) { lookup = l }(lookup)
	lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "router.example":
			return []netip.Addr{netip.MustParseAddr("192.168.1.1")}, nil
		case "rebind.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")}, nil
		case "shop.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return nil, context.DeadlineExceeded
	}
	e := newEnv(t, nil)
	e.fake.on("browser.tabs.open", ok(map[string]any{"tab_id": 3, "loaded": true}))
	e.ui.approve = false
	for _, tc := range []struct {
		url, want string // want: what the card says it is; "" for no card
	}{
		{"https://shop.example/", ""},
		{"https://unresolvable.example/", ""},
		{"http://127.0.0.1:8080/admin", "a loopback address (127.0.0.1)"},
		{"http://localhost:3000/", "a loopback address (localhost is 127.0.0.1)"},
		{"http://app.localhost/", "loopback"},
		{"http://[::1]/", "a loopback address (::1)"},
		{"http://10.0.0.5/", "a private address (10.0.0.5)"},
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata address"},
		{"http://[fe80::1]/", "link-local"},
		{"http://router.example/", "a private address (router.example is 192.168.1.1)"},
		{"http://rebind.example/", "loopback"},
		{"file:///etc/passwd", "a file on this computer"},
	} {
		before := len(e.ui.confirms)
		r := e.call("open_tab", `{"url":"`+tc.url+`"}`)
		if tc.want == "" {
			if !r.Success || len(e.ui.confirms) != before {
				t.Errorf("%s: %+v, asked %d, want opened unasked", tc.url, r, len(e.ui.confirms)-before)
			}
			continue
		}
		if r.Code != tools.CodeUserRejected || len(e.ui.confirms) != before+1 {
			t.Errorf("%s: %+v, want a person asked (and declining)", tc.url, r)
			continue
		}
		if m := e.ui.confirms[before].Message; !strings.Contains(m, tc.want) || !strings.Contains(m, SettingAllowPrivateHosts) {
			t.Errorf("%s: message %q, want %q and the setting", tc.url, m, tc.want)
		}
	}
	opens := strings.Count(strings.Join(e.fake.methods(), " "), "browser.tabs.open")
	if opens != 2 {
		t.Fatalf("the browser opened %d tabs, want only the 2 public ones", opens)
	}

	// The setting names them: no question.
	e.set(SettingAllowPrivateHosts, "127.0.0.1, *.localhost, 10.0.0.0/8, router.example, file:///home/me/docs/")
	for _, u := range []string{"http://127.0.0.1:8080/", "http://localhost:8080/", "http://app.localhost/", "http://10.1.2.3/", "http://router.example/", "file:///home/me/docs/a.html"} {
		before := len(e.ui.confirms)
		if r := e.call("open_tab", `{"url":"`+u+`"}`); !r.Success || len(e.ui.confirms) != before {
			t.Errorf("%s allowed by the setting: %+v, asked %d", u, r, len(e.ui.confirms)-before)
		}
	}
	// A file share on another machine is no local file, whatever the setting allows.
	e.set(SettingAllowPrivateHosts, "file://")
	before := len(e.ui.confirms)
	if r := e.call("open_tab", `{"url":"file://server/share/x.html"}`); r.Success || len(e.ui.confirms) != before+1 || !strings.Contains(e.ui.confirms[before].Message, "a file share on server") {
		t.Errorf("a file share with local files allowed: %+v", r)
	}
	e.set(SettingAllowPrivateHosts, "127.0.0.1, *.localhost, 10.0.0.0/8, router.example, file:///home/me/docs/")
	// localhost is 127.0.0.1, which the setting names; 127.0.0.2 it does not.
	e.fake.on("browser.page.document", ok(map[string]any{"tab_id": 3, "url": "https://example.com/", "document_id": "D3"}))
	for _, u := range []string{"http://127.0.0.2/", "file:///home/me/documents/x", "file:///etc/passwd"} {
		before := len(e.ui.confirms)
		if r := e.call("browser_navigate", `{"url":"`+u+`"}`); r.Code != tools.CodePermissionDenied {
			t.Errorf("browser_navigate off must refuse %s before asking: %+v", u, r)
		}
		e.set(SettingAllowNavigate, "true")
		if r := e.call("browser_navigate", `{"url":"`+u+`"}`); r.Code != tools.CodeUserRejected || len(e.ui.confirms) != before+1 {
			t.Errorf("%s not named by the setting: %+v, want asked", u, r)
		}
		e.set(SettingAllowNavigate, "false")
	}
	// An entry with a port allows that port only (the port of the URL, or its
	// scheme's).
	e.set(SettingAllowPrivateHosts, "127.0.0.1:3000, router.example:443")
	for u, asked := range map[string]bool{"http://127.0.0.1:3000/": false, "http://127.0.0.1:3001/": true,
		"https://router.example/": false, "http://router.example/": true} {
		before := len(e.ui.confirms)
		r := e.call("open_tab", `{"url":"`+u+`"}`)
		if got := len(e.ui.confirms) != before; got != asked || r.Success == asked {
			t.Errorf("%s with ports in the setting: %+v, asked %v, want asked %v", u, r, got, asked)
		}
	}
}

func TestPrivateAllowSetting(t *testing.T) {
	for _, v := range []string{"", "127.0.0.1", "file://", "FILE:///home/me/", "*.corp.example, 10.0.0.0/8, file:///tmp/"} {
		if _, err := parsePrivateAllow(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"http://x", "file://server/share", "file:///a?b", "not a host!"} {
		if _, err := parsePrivateAllow(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}

// A tab the caller opened itself is its own to navigate with browser.allow_navigate
// off: an outside agent reads page after page in one tab of its own, while the
// person's tabs, and the tabs another client session opened, stay off.
func TestOwnTabNavigates(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.on("browser.tabs.open", ok(map[string]any{"tab_id": 7, "url": "https://example.com/", "loaded": true}))
	e.fake.on("browser.page.navigate", ok(map[string]any{"tab_id": 7, "url": "https://example.com/2", "loaded": true}))
	e.fake.on("browser.page.document", ok(map[string]any{"tab_id": 7, "url": "https://example.com/", "document_id": "D7"}))
	session := func(id string) context.Context { return tools.WithSession(context.Background(), id) }
	call := func(ctx context.Context, name, args string) tools.Result {
		t.Helper()
		return e.reg.Call(ctx, &tools.Call{Tool: name, Arguments: json.RawMessage(args), Caller: "mcp"})
	}
	if r := call(session("a"), "open_tab", `{"url":"https://example.com/"}`); !r.Success {
		t.Fatalf("a new tab: %+v", r)
	}
	for _, c := range []struct{ tool, args string }{
		{"open_tab", `{"url":"https://example.com/2","tab_id":7}`},
		{"browser_navigate", `{"url":"https://example.com/2","tab_id":7}`},
		{"browser_navigate", `{"action":"back","tab_id":7}`},
	} {
		if r := call(session("a"), c.tool, c.args); !r.Success {
			t.Errorf("%s %s in the session's own tab: %+v", c.tool, c.args, r)
		}
		if r := call(session("b"), c.tool, c.args); r.Code != tools.CodePermissionDenied || !strings.Contains(r.Reason, SettingAllowNavigate) {
			t.Errorf("%s %s from another session: %+v, want PERMISSION_DENIED naming %s", c.tool, c.args, r, SettingAllowNavigate)
		}
	}
	if r := call(session("a"), "browser_navigate", `{"url":"https://example.com/2","tab_id":3}`); r.Code != tools.CodePermissionDenied {
		t.Errorf("the person's tab 3: %+v, want PERMISSION_DENIED", r)
	}
	if r := e.call("open_tab", `{"url":"https://example.com/2","tab_id":7}`); r.Code != tools.CodePermissionDenied {
		t.Errorf("another caller: %+v, want PERMISSION_DENIED", r)
	}
}
