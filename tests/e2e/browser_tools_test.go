package e2e

// End-to-end tests of the browser tools' hands: the extension's browser.*
// methods (protocol/BROWSER.md) in a real Chromium, against pages served from
// loopback. One browser is shared by all the subtests of TestBrowserMethods.
//
// The methods are host → extension requests. They are called here through
// the extension's own modules, imported in one of its pages
// (options/options.html), which has the same chrome.* APIs as the worker; the
// worker itself cannot import() modules dynamically. TestBrowserToolsThroughHost
// goes the whole way (ferryHost.request('tools.call', …) → host → the worker's
// registered handlers) for the tools the host registers.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/net/html"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/tests/browsertest"
)

// fixtureServer serves tests/e2e/testdata and /big?kb=N (a generated page of
// about N KiB of DOM) on loopback.
func fixtureServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(filepath.Join(browsertest.RepoRoot(), "tests", "e2e", "testdata"))))
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		var kb int
		fmt.Sscanf(r.URL.Query().Get("kb"), "%d", &kb)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, bigPage(kb<<10))
	})
	// A page whose body never ends (until the test server closes): a load that never completes.
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>slow</title><p>still loading")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
	// On 127.0.0.1: "localhost" then names a different origin (the cross-origin
	// frames of the fixtures).
	return loopbackServer(t, mux)
}

// bigPage is an article-like page of about size bytes: sections of headings,
// paragraphs with inline markup, links, lists and tables, a few hidden blocks.
func bigPage(size int) string {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>Big page</title><style>.h{display:none}</style></head><body><header><nav><a href=\"/\">Home</a></nav></header><main id=\"main\">")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `<section class="s%d"><h2 id="h%d">Section %d</h2>`, i, i, i)
		for j := 0; j < 4; j++ {
			fmt.Fprintf(&b, `<p>Paragraph %d.%d with <a href="/p/%d/%d">a link</a>, <b>bold</b> and <i>italic</i> words that make the text long enough to look like prose in an article.</p>`, i, j, i, j)
		}
		fmt.Fprintf(&b, `<ul><li>item one %d</li><li>item two</li><li>item three</li></ul>`, i)
		fmt.Fprintf(&b, `<table><tr><th>k</th><th>v</th></tr><tr><td>a%d</td><td>1</td></tr><tr><td>b</td><td>2</td></tr></table>`, i)
		fmt.Fprintf(&b, `<div class="h"><p>hidden %d</p></div><div><div><span>nested %d</span></div></div></section>`, i, i)
	}
	b.WriteString("</main><footer>end</footer></body></html>")
	return b.String()
}

type bsession struct {
	*session
	page context.Context // an extension page that imports the browser modules
	srv  *httptest.Server
}

// callErr is how a browser.* method failed: the JSON-RPC error it would send.
type callErr struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
	Reason  string          `json:"reason"`
}

func (e *callErr) Error() string { return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message) }

func startBrowserMethods(t *testing.T, timeout time.Duration) *bsession {
	t.Helper()
	s := start(t, timeout)
	srv := fixtureServer(t)
	page, cancel := chromedp.NewContext(s.browser.Ctx)
	t.Cleanup(cancel)
	url := "chrome-extension://" + buildinfo.ExtensionID + "/options/options.html"
	if err := chromedp.Do(page, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	if _, err := browsertest.Eval[bool](page, `(globalThis.__methods = Promise.all([
			import('/background/browser/index.js'), import('/lib/chrome-api.js')])
		.then(([m, api]) => m.createBrowserMethods(api))).then(() => true)`); err != nil {
		t.Fatalf("import the browser modules: %v", err)
	}
	return &bsession{session: s, page: page, srv: srv}
}

// call invokes one browser.* method and decodes its result into v (when not nil).
func (b *bsession) call(method string, params any, v any) *callErr {
	b.t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		b.t.Fatal(err)
	}
	m, _ := json.Marshal(method)
	type out struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Err    *callErr        `json:"error"`
	}
	got, err := browsertest.Eval[out](b.page, `(async () => {
		const methods = await globalThis.__methods;
		try { return {ok: true, result: await methods[`+string(m)+`](`+string(p)+`) ?? null}; }
		catch (e) { return {ok: false, error: {code: e.code ?? 0, message: String(e.message ?? e), data: e.data ?? null, reason: e.data?.reason ?? ''}}; }
	})()`)
	if err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
	if !got.OK {
		return got.Err
	}
	if v != nil {
		if err := json.Unmarshal(got.Result, v); err != nil {
			b.t.Fatalf("%s result %s: %v", method, got.Result, err)
		}
	}
	return nil
}

func (b *bsession) must(method string, params any, v any) {
	b.t.Helper()
	if e := b.call(method, params, v); e != nil {
		b.t.Fatalf("%s(%v): %v", method, params, e)
	}
}

// wantErr asserts a -32010 failure with the given reason.
func (b *bsession) wantErr(method string, params any, reason string) *callErr {
	b.t.Helper()
	e := b.call(method, params, nil)
	if e == nil {
		b.t.Fatalf("%s(%v) succeeded, want reason %s", method, params, reason)
	}
	if e.Code != -32010 || e.Reason != reason {
		b.t.Fatalf("%s(%v) failed with %v, want -32010 %s", method, params, e, reason)
	}
	return e
}

type tabInfo struct {
	TabID    int    `json:"tab_id"`
	WindowID int    `json:"window_id"`
	URL      string `json:"url"`
	Title    string `json:"title"`
	Active   bool   `json:"active"`
	Audible  bool   `json:"audible"`
	Status   string `json:"status"`
}

type opened struct {
	tabInfo
	Loaded   bool `json:"loaded"`
	WaitedMS int  `json:"waited_ms"`
	TimedOut bool `json:"timed_out"`
}

func (b *bsession) open(path string) opened {
	b.t.Helper()
	var o opened
	b.must("browser.tabs.open", map[string]any{"url": b.srv.URL + path}, &o)
	if !o.Loaded || o.TimedOut {
		b.t.Fatalf("open %s: %+v", path, o)
	}
	return o
}

type capture struct {
	TabID        int    `json:"tab_id"`
	URL          string `json:"url"`
	Title        string `json:"title"`
	HTML         string `json:"html"`
	UsedSelector any    `json:"used_selector"`
	Frames       []struct {
		Src      string `json:"src"`
		Selector string `json:"selector"`
		Inlined  bool   `json:"inlined"`
	} `json:"frames"`
	Truncated bool `json:"truncated"`
	Elements  int  `json:"elements"`
	CaptureMS int  `json:"capture_ms"`
}

func TestBrowserMethods(t *testing.T) {
	b := startBrowserMethods(t, 110*time.Second)

	t.Run("tabs", func(t *testing.T) {
		b.t = t
		a := b.open("/tabs.html?a")
		c := b.open("/content.html")
		var list struct{ Tabs []tabInfo }
		b.must("browser.tabs.list", map[string]any{"url_pattern": `tabs\.html\?A$`}, &list)
		if len(list.Tabs) != 1 || list.Tabs[0].TabID != a.TabID || list.Tabs[0].Title != "Ferry tabs fixture" {
			t.Fatalf("url_pattern filter (case-insensitive): %+v, want only tab %d", list.Tabs, a.TabID)
		}
		b.must("browser.tabs.list", map[string]any{"title_pattern": "content FIXTURE", "active": true}, &list)
		if len(list.Tabs) != 1 || list.Tabs[0].TabID != c.TabID || list.Tabs[0].Status != "complete" {
			t.Fatalf("title_pattern+active: %+v, want tab %d", list.Tabs, c.TabID)
		}
		b.must("browser.tabs.list", map[string]any{"window_id": a.WindowID, "audible": true}, &list)
		if len(list.Tabs) != 0 {
			t.Fatalf("audible: %+v, want none", list.Tabs)
		}
		b.wantErr("browser.tabs.list", map[string]any{"url_pattern": "("}, "invalid")

		var act struct {
			TabID    int `json:"tab_id"`
			WindowID int `json:"window_id"`
		}
		b.must("browser.tabs.activate", map[string]any{"tab_id": a.TabID}, &act)
		b.must("browser.tabs.list", map[string]any{"active": true, "window_id": a.WindowID}, &list)
		if len(list.Tabs) != 1 || list.Tabs[0].TabID != a.TabID {
			t.Fatalf("after activate: active tabs %+v, want %d", list.Tabs, a.TabID)
		}
		// Navigating an existing tab waits for the new page, not the old one.
		var nav opened
		b.must("browser.tabs.open", map[string]any{"url": b.srv.URL + "/form.html", "tab_id": a.TabID}, &nav)
		if nav.TabID != a.TabID || !strings.HasSuffix(nav.URL, "/form.html") || nav.Title != "Ferry form fixture" {
			t.Fatalf("open with tab_id: %+v", nav)
		}
		// The cap is reported, not hidden: a page that never finishes loading.
		b.must("browser.tabs.open", map[string]any{"url": b.srv.URL + "/slow", "timeout_ms": 300}, &nav)
		if !nav.TimedOut || nav.Loaded {
			t.Fatalf("open of a page that never loads with timeout_ms 300: %+v, want timed_out", nav)
		}
		var closed struct{ Closed bool }
		for _, id := range []int{a.TabID, c.TabID, nav.TabID} {
			b.must("browser.tabs.close", map[string]any{"tab_id": id}, &closed)
		}
		b.wantErr("browser.tabs.close", map[string]any{"tab_id": a.TabID}, "no_tab")
		b.wantErr("browser.tabs.activate", map[string]any{"tab_id": a.TabID}, "no_tab")
		b.wantErr("browser.page.info", map[string]any{"tab_id": a.TabID}, "no_tab")
	})
}

func (b *bsession) capture(tabID int, selector string) capture {
	b.t.Helper()
	params := map[string]any{"tab_id": tabID}
	if selector != "" {
		params["selector"] = selector
	}
	var c capture
	b.must("browser.page.capture", params, &c)
	return c
}

// selOf returns the full selector (the capture's sel attribute, relative ones
// rebuilt as BROWSER.md says) of the last element whose opening tag precedes
// marker in the capture and carries one.
func selOf(t *testing.T, capture, marker string) string {
	t.Helper()
	i := strings.Index(capture, marker)
	if i < 0 {
		t.Fatalf("%q not in the capture", marker)
	}
	if strings.LastIndexByte(capture[:i], '<') > strings.LastIndexByte(capture[:i], '>') {
		i += strings.IndexByte(capture[i:], '>') + 1 // the marker is inside a tag: include that tag
	}
	type scope struct{ name, sel string }
	var stack []scope
	enclosing := func() string {
		if len(stack) == 0 {
			return ""
		}
		return stack[len(stack)-1].sel
	}
	last := ""
	z := html.NewTokenizer(strings.NewReader(capture[:i]))
	for {
		switch z.Next() {
		case html.ErrorToken:
			if last == "" {
				t.Fatalf("no sel before %q", marker)
			}
			return last
		case html.StartTagToken:
			name, more := z.TagName()
			sel := ""
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				if string(k) == "sel" {
					sel = string(v)
				}
			}
			if rest, ok := strings.CutPrefix(sel, ">>>"); ok {
				sel = enclosing() + " >>> " + rest
			} else if rest, ok := strings.CutPrefix(sel, ">"); ok {
				sel = enclosing() + " > " + rest
			}
			if sel != "" {
				last = sel
			}
			switch string(name) {
			case "br", "hr", "img", "input", "wbr", "col":
				continue
			}
			if sel == "" {
				sel = enclosing()
			}
			stack = append(stack, scope{string(name), sel})
		case html.EndTagToken:
			name, _ := z.TagName()
			for j := len(stack) - 1; j >= 0; j-- {
				if stack[j].name == string(name) {
					stack = stack[:j]
					break
				}
			}
		}
	}
}

func TestBrowserCapture(t *testing.T) {
	b := startBrowserMethods(t, 100*time.Second)
	tab := b.open("/content.html")

	t.Run("rendered DOM", func(t *testing.T) {
		b.t = t
		// The cross-origin frame's src is set by script: wait until it is there.
		c := b.capture(tab.TabID, "")
		t.Logf("capture: %d chars, %d elements, %d ms in the page, frames %+v", len(c.HTML), c.Elements, c.CaptureMS, c.Frames)
		if c.Title != "Ferry content fixture" || c.UsedSelector != nil || c.TabID != tab.TabID {
			t.Errorf("title %q, used_selector %v, tab %d", c.Title, c.UsedSelector, c.TabID)
		}
		for _, want := range []string{"Visible heading", "First paragraph of the story.", "<b>bold</b>", "Card three",
			"SHADOW-TEXT", "SLOTTED-LIGHT", "FRAME-TEXT", `value='prefilled'`, `<ferry-frame src='frame.html'`, `cross-origin`} {
			if !strings.Contains(c.HTML, want) {
				t.Errorf("capture lacks %q", want)
			}
		}
		for _, hidden := range []string{"HIDDEN-DISPLAY-NONE", "HIDDEN-VISIBILITY", "HIDDEN-ARIA", "HIDDEN-ATTRIBUTE", "HIDDEN-ZERO-SIZE",
			"SCRIPT-TEXT", "SVG-TEXT", "TEMPLATE-TEXT", "COMMENT-TEXT", "SHADOW-HIDDEN", "<style", "<script"} {
			if strings.Contains(c.HTML, hidden) {
				t.Errorf("capture contains %q", hidden)
			}
		}
		for marker, want := range map[string]string{
			"Visible heading":               "h1",
			"First paragraph of the story.": "#story",
			`value='prefilled'`:             `[name="q"]`,
			`type='email'`:                  `[data-testid="email"]`,
			"Card two":                      "section > div:nth-of-type(2)",
			"SHADOW-TEXT":                   "#widget >>> .inner",
			"FRAME-TEXT":                    "#same >>> #in-frame",
		} {
			if got := selOf(t, c.HTML, marker); got != want {
				t.Errorf("selector of %q = %q, want %q", marker, got, want)
			}
		}
	})

	t.Run("selector round trip", func(t *testing.T) {
		b.t = t
		c := b.capture(tab.TabID, "")
		for _, marker := range []string{"Card two", "SHADOW-TEXT", "FRAME-TEXT", "Visible heading"} {
			sel := selOf(t, c.HTML, marker)
			part := b.capture(tab.TabID, sel)
			if part.UsedSelector != sel || !strings.Contains(part.HTML, marker) || len(part.HTML) > 400 {
				t.Errorf("capture(%q) = used %v, %q; want just the element holding %q", sel, part.UsedSelector, part.HTML, marker)
			}
		}
		b.wantErr("browser.page.capture", map[string]any{"tab_id": tab.TabID, "selector": "#nope"}, "no_element")
		b.wantErr("browser.page.capture", map[string]any{"tab_id": tab.TabID, "selector": "p[["}, "invalid")
	})

	t.Run("big DOM", func(t *testing.T) {
		b.t = t
		for _, kb := range []int{2048, 5120} {
			big := b.open(fmt.Sprintf("/big?kb=%d", kb))
			// Measured inside the extension page, so that the figures are the
			// browser's side of get_tab_content, not chromedp shipping megabytes to Go.
			type run struct {
				MS        float64 `json:"ms"`
				Chars     int     `json:"chars"`
				Elements  int     `json:"elements"`
				CaptureMS int     `json:"capture_ms"`
				Truncated bool    `json:"truncated"`
				End       bool    `json:"end"`
				Hidden    bool    `json:"hidden"`
			}
			runs, err := browsertest.Eval[[]run](b.page, fmt.Sprintf(`(async () => {
				const methods = await globalThis.__methods;
				const out = [];
				for (let i = 0; i < 5; i++) {
					const t0 = performance.now();
					const c = await methods['browser.page.capture']({tab_id: %d});
					out.push({ms: performance.now() - t0, chars: c.html.length, elements: c.elements, capture_ms: c.capture_ms,
						truncated: c.truncated, end: c.html.includes('end</footer>'), hidden: c.html.includes('hidden 3<')});
				}
				return out;
			})()`, big.TabID))
			if err != nil {
				t.Fatal(err)
			}
			var ms []float64
			for _, r := range runs {
				ms = append(ms, r.MS)
			}
			last := runs[len(runs)-1]
			t.Logf("%d KiB DOM: capture %d chars, %d elements; in the page %d ms; method round trips (ms) %.0f (the first injects the content script)",
				kb, last.Chars, last.Elements, last.CaptureMS, ms)
			if last.Truncated || !last.End || last.Hidden {
				t.Errorf("%d KiB: truncated %v, has the end %v, has hidden text %v", kb, last.Truncated, last.End, last.Hidden)
			}
			b.must("browser.tabs.close", map[string]any{"tab_id": big.TabID}, nil)
		}
	})

	t.Run("element cap", func(t *testing.T) {
		b.t = t
		var c capture
		b.must("browser.page.capture", map[string]any{"tab_id": tab.TabID, "max_elements": 5}, &c)
		if !c.Truncated || c.Elements > 6 {
			t.Errorf("max_elements 5: truncated %v, elements %d", c.Truncated, c.Elements)
		}
	})
}

type scriptResult struct {
	Value     json.RawMessage `json:"value"`
	Type      string          `json:"type"`
	Truncated bool            `json:"truncated"`
}

func (b *bsession) script(target, code string, tabID int, timeoutMS int) (scriptResult, *callErr) {
	b.t.Helper()
	p := map[string]any{"code": code, "target": target}
	if tabID != 0 {
		p["tab_id"] = tabID
	}
	if timeoutMS != 0 {
		p["timeout_ms"] = timeoutMS
	}
	var r scriptResult
	e := b.call("browser.script.execute", p, &r)
	return r, e
}

func TestBrowserScripts(t *testing.T) {
	b := startBrowserMethods(t, 100*time.Second)
	tab := b.open("/content.html")

	t.Run("page", func(t *testing.T) {
		b.t = t
		for _, c := range []struct{ code, value, typ string }{
			{`document.title`, `"Ferry content fixture"`, "string"},
			{`window.pageVar + 1`, `42`, "number"},
			{`const a = [1, 2]; return a.map(x => x * 2)`, `[2,4]`, "array"},
			{`new Promise(r => setTimeout(() => r({late: true}), 50))`, `{"late":true}`, "object"},
			{`(() => { const o = {name: 'o'}; o.self = o; return o })()`, `{"name":"o","self":"[Circular]"}`, "object"},
			{`document.querySelector('h1')`, `"[element h1 \"Visible heading\"]"`, "node"},
			{`({f() {}, s: Symbol('x'), u: undefined, n: NaN, big: 10n})`, `{"f":"[Function f]","s":"[Symbol x]","u":null,"n":"NaN","big":"10n"}`, "object"},
			{`undefined`, `null`, "undefined"},
		} {
			r, e := b.script("page", c.code, tab.TabID, 0)
			if e != nil {
				t.Errorf("%s: %v", c.code, e)
				continue
			}
			if !jsonEqual(r.Value, c.value) || r.Type != c.typ {
				t.Errorf("%s = %s (%s), want %s (%s)", c.code, r.Value, r.Type, c.value, c.typ)
			}
		}
		// Depth and size limits.
		r, e := b.script("page", `let o = {}; const top = o; for (let i = 0; i < 30; i++) { o.next = {}; o = o.next } return top`, tab.TabID, 0)
		if e != nil || !r.Truncated || !strings.Contains(string(r.Value), `"[Object]"`) {
			t.Errorf("deep object: %s truncated %v, %v", r.Value, r.Truncated, e)
		}
		r, e = b.script("page", `'x'.repeat(3 * 1024 * 1024)`, tab.TabID, 0)
		if e != nil || !r.Truncated || len(r.Value) > 1<<20+200 {
			t.Errorf("3 MiB string: %d bytes back, truncated %v, %v", len(r.Value), r.Truncated, e)
		}
		// Errors come back with message and stack.
		_, e = b.script("page", `function boom() { throw new TypeError('bad thing') } boom()`, tab.TabID, 0)
		if e == nil || e.Reason != "script_error" || !strings.Contains(e.Message, "bad thing") || !strings.Contains(string(e.Data), "boom") {
			t.Errorf("thrown error: %+v", e)
		}
		_, e = b.script("page", `Promise.reject(new Error('async nope'))`, tab.TabID, 0)
		if e == nil || e.Reason != "script_error" || !strings.Contains(e.Message, "async nope") {
			t.Errorf("rejected promise: %+v", e)
		}
		_, e = b.script("page", `this is not javascript (`, tab.TabID, 0)
		if e == nil || e.Reason != "script_error" || !strings.Contains(e.Message, "SyntaxError") {
			t.Errorf("syntax error: %+v", e)
		}
		// A timeout says that the page's code may go on.
		t0 := time.Now()
		_, e = b.script("page", `new Promise(() => {})`, tab.TabID, 300)
		if e == nil || e.Reason != "timeout" || !strings.Contains(e.Message, "may still be running") || time.Since(t0) > 3*time.Second {
			t.Errorf("page timeout: %+v after %v", e, time.Since(t0))
		}
		// The page still answers.
		if r, e := b.script("page", `1 + 1`, tab.TabID, 0); e != nil || string(r.Value) != "2" {
			t.Errorf("after the timeout: %s %v", r.Value, e)
		}
	})

	t.Run("sandbox", func(t *testing.T) {
		b.t = t
		r, e := b.script("sandbox", `({doc: typeof document, win: typeof window, chrome: typeof chrome, sum: [1,2,3].reduce((a, b) => a + b)})`, 0, 0)
		if e != nil || !jsonEqual(r.Value, `{"doc":"undefined","win":"undefined","chrome":"undefined","sum":6}`) {
			t.Errorf("sandbox isolation: %s %v", r.Value, e)
		}
		r, e = b.script("sandbox", `globalThis.leftover = 1; await new Promise(r => setTimeout(r, 10)); return 'ok'`, 0, 0)
		if e != nil || string(r.Value) != `"ok"` {
			t.Errorf("sandbox await: %s %v", r.Value, e)
		}
		r, e = b.script("sandbox", `typeof leftover`, 0, 0)
		if e != nil || string(r.Value) != `"undefined"` {
			t.Errorf("a run sees what an earlier one left: %s %v", r.Value, e)
		}
		// No network either (the sandbox's Content-Security-Policy: connect-src 'none').
		_, e = b.script("sandbox", `fetch('`+b.srv.URL+`/tabs.html').then(r => r.status)`, 0, 0)
		if e == nil || e.Reason != "script_error" {
			t.Errorf("sandbox fetch: %+v", e)
		}
		_, e = b.script("sandbox", `throw new RangeError('sandboxed')`, 0, 0)
		if e == nil || e.Reason != "script_error" || !strings.Contains(e.Message, "sandboxed") {
			t.Errorf("sandbox error: %+v", e)
		}
		t0 := time.Now()
		_, e = b.script("sandbox", `while (true) {}`, 0, 500)
		took := time.Since(t0)
		if e == nil || e.Reason != "timeout" || !strings.Contains(string(e.Data), `"stopped":true`) || took > 3*time.Second {
			t.Errorf("runaway sandbox loop: %+v after %v", e, took)
		}
		r, e = b.script("sandbox", `'alive'`, 0, 0)
		if e != nil || string(r.Value) != `"alive"` {
			t.Errorf("after the runaway loop: %s %v", r.Value, e)
		}
		t.Logf("while(true) stopped after %v", took)
	})

	t.Run("restricted", func(t *testing.T) {
		b.t = t
		var o opened
		b.must("browser.tabs.open", map[string]any{"url": "chrome://version"}, &o)
		for _, m := range []string{"browser.page.capture", "browser.page.snapshot", "browser.page.info", "browser.page.console"} {
			e := b.wantErr(m, map[string]any{"tab_id": o.TabID}, "restricted_page")
			if !strings.Contains(string(e.Data), "chrome://version") {
				t.Errorf("%s: data %s lacks the URL", m, e.Data)
			}
		}
		_, e := b.script("page", "1", o.TabID, 0)
		if e == nil || e.Reason != "restricted_page" {
			t.Errorf("execute_script on chrome://version: %+v", e)
		}
		b.must("browser.tabs.close", map[string]any{"tab_id": o.TabID}, nil)
	})
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	p, _ := json.Marshal(x)
	q, _ := json.Marshal(y)
	return string(p) == string(q)
}

type snapshotResult struct {
	SnapshotID string `json:"snapshot_id"`
	URL        string `json:"url"`
	Title      string `json:"title"`
	Tree       string `json:"tree"`
	Truncated  bool   `json:"truncated"`
}

// refFor finds the ref of the first tree line containing what.
func refFor(t *testing.T, tree, what string) string {
	t.Helper()
	for _, line := range strings.Split(tree, "\n") {
		if strings.Contains(line, what) {
			if i := strings.Index(line, "[ref="); i >= 0 {
				return strings.TrimSuffix(line[i+5:], "]")
			}
		}
	}
	t.Fatalf("no line with %q in\n%s", what, tree)
	return ""
}

func (b *bsession) events(tabID int) string {
	b.t.Helper()
	r, e := b.script("page", `window.events.join('|')`, tabID, 0)
	if e != nil {
		b.t.Fatal(e)
	}
	var s string
	json.Unmarshal(r.Value, &s)
	return s
}

func TestBrowserInteraction(t *testing.T) {
	b := startBrowserMethods(t, 100*time.Second)
	tab := b.open("/form.html")
	id := map[string]any{"tab_id": tab.TabID}
	with := func(kv ...any) map[string]any {
		m := map[string]any{"tab_id": tab.TabID}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}

	t.Run("snapshot and act by ref", func(t *testing.T) {
		b.t = t
		var snap snapshotResult
		b.must("browser.page.snapshot", id, &snap)
		t.Logf("snapshot %s:\n%s", snap.SnapshotID, snap.Tree)
		for _, want := range []string{`- main`, `- form`, `textbox "Name"`, `combobox "Size" value="Small"`, `textbox "Notes"`, `button "Save"`, `button "Disabled one" [disabled]`} {
			if !strings.Contains(snap.Tree, want) {
				t.Errorf("snapshot lacks %q", want)
			}
		}
		var typed struct {
			Typed   bool   `json:"typed"`
			Element string `json:"element"`
			Value   string `json:"value"`
		}
		name := refFor(t, snap.Tree, `textbox "Name"`)
		b.must("browser.page.type", with("ref", name, "text", "Ada"), &typed)
		if typed.Value != "Ada" {
			t.Errorf("type: %+v", typed)
		}
		b.must("browser.page.type", with("ref", name, "text", " Lovelace", "clear", false), &typed)
		b.must("browser.page.type", with("ref", refFor(t, snap.Tree, `textbox "Notes"`), "text", "hello notes"), &typed)
		var sel struct{ Selected []string }
		b.must("browser.page.select", with("ref", refFor(t, snap.Tree, `combobox "Size"`), "values", []string{"Large"}), &sel)
		if len(sel.Selected) != 1 || sel.Selected[0] != "l" {
			t.Errorf("select by label: %+v", sel)
		}
		b.wantErr("browser.page.select", with("ref", refFor(t, snap.Tree, `combobox "Size"`), "values", []string{"XL"}), "invalid")
		var clicked struct {
			Clicked bool   `json:"clicked"`
			Element string `json:"element"`
		}
		b.must("browser.page.click", with("ref", refFor(t, snap.Tree, `button "Save"`)), &clicked)
		got := b.events(tab.TabID)
		for _, want := range []string{"onChange:name=Ada", "onChange:name=Ada Lovelace", "notes:hello notes", "select:l", "clicked:Save"} {
			if !strings.Contains(got, want) {
				t.Errorf("the page saw %q, want %q among its events", got, want)
			}
		}
		e := b.wantErr("browser.page.click", with("ref", refFor(t, snap.Tree, `button "Disabled one"`)), "element_state")
		if !strings.Contains(string(e.Data), `"state":"disabled"`) {
			t.Errorf("disabled: %s", e.Data)
		}
		e = b.wantErr("browser.page.click", with("selector", "#covered"), "element_state")
		if !strings.Contains(string(e.Data), `"state":"covered"`) || !strings.Contains(e.Message, "#shield") {
			t.Errorf("covered: %s %s", e.Message, e.Data)
		}
		b.wantErr("browser.page.click", with("selector", "#nothing"), "no_element")
		b.wantErr("browser.page.click", with("ref", "e9999"), "stale_ref")
		b.wantErr("browser.page.click", id, "invalid")

		// The page re-renders: every old ref is refused, and a new snapshot works.
		b.must("browser.page.click", with("ref", refFor(t, snap.Tree, `button "Re-render"`)), &clicked)
		time.Sleep(100 * time.Millisecond)
		e = b.wantErr("browser.page.click", with("ref", refFor(t, snap.Tree, `button "Save"`)), "stale_ref")
		if !strings.Contains(e.Message, "new snapshot") {
			t.Errorf("stale ref message: %s", e.Message)
		}
		b.wantErr("browser.page.type", with("ref", name, "text", "x"), "stale_ref")
		var snap2 snapshotResult
		b.must("browser.page.snapshot", id, &snap2)
		if snap2.SnapshotID == snap.SnapshotID || refFor(t, snap2.Tree, `button "Save"`) == refFor(t, snap.Tree, `button "Save"`) {
			t.Errorf("second snapshot %s reuses the ids of %s", snap2.SnapshotID, snap.SnapshotID)
		}
		save := refFor(t, snap2.Tree, `button "Save"`)
		b.must("browser.page.click", with("ref", save), &clicked)
		// A changed name is also a stale ref, even though the element is the same.
		if _, e := b.script("page", `[...document.querySelectorAll('button')].find(b => b.textContent === 'Save').textContent = 'Delete'`, tab.TabID, 0); e != nil {
			t.Fatal(e)
		}
		e = b.wantErr("browser.page.click", with("ref", save), "stale_ref")
		if !strings.Contains(e.Message, `"Delete"`) {
			t.Errorf("renamed element: %s", e.Message)
		}
		// After a navigation (here a reload), a ref of the old document is refused.
		var nav struct{ URL, Status string }
		b.must("browser.page.navigate", with("action", "reload"), &nav)
		b.wantErr("browser.page.click", with("ref", refFor(t, snap2.Tree, `button "Re-render"`)), "stale_ref")
	})

	t.Run("scroll info navigate", func(t *testing.T) {
		b.t = t
		big := b.open("/big?kb=200")
		var info struct {
			TabID      int    `json:"tab_id"`
			URL        string `json:"url"`
			Title      string `json:"title"`
			ReadyState string `json:"ready_state"`
			Viewport   struct{ Width, Height int }
			Scroll     struct{ X, Y int }
		}
		b.must("browser.page.info", map[string]any{"tab_id": big.TabID}, &info)
		if info.Title != "Big page" || info.ReadyState != "complete" || info.Viewport.Width == 0 || info.Scroll.Y != 0 {
			t.Errorf("info: %+v", info)
		}
		var pos struct{ X, Y int }
		b.must("browser.page.scroll", map[string]any{"tab_id": big.TabID}, &pos)
		if pos.Y != 500 {
			t.Errorf("scroll down 500: %+v", pos)
		}
		b.must("browser.page.scroll", map[string]any{"tab_id": big.TabID, "pixels": 200, "direction": "up"}, &pos)
		if pos.Y != 300 {
			t.Errorf("scroll up 200: %+v", pos)
		}
		b.must("browser.page.scroll", map[string]any{"tab_id": big.TabID, "selector": "#h40"}, &pos)
		if pos.Y < 1000 {
			t.Errorf("scroll to #h40: %+v", pos)
		}
		var nav struct {
			URL      string `json:"url"`
			Title    string `json:"title"`
			Status   string `json:"status"`
			TimedOut bool   `json:"timed_out"`
		}
		b.must("browser.page.navigate", map[string]any{"tab_id": big.TabID, "url": b.srv.URL + "/tabs.html"}, &nav)
		if nav.Title != "Ferry tabs fixture" || nav.Status != "complete" {
			t.Errorf("navigate url: %+v", nav)
		}
		b.must("browser.page.navigate", map[string]any{"tab_id": big.TabID, "action": "back"}, &nav)
		if nav.Title != "Big page" {
			t.Errorf("navigate back: %+v", nav)
		}
		b.must("browser.page.navigate", map[string]any{"tab_id": big.TabID, "action": "forward"}, &nav)
		if nav.Title != "Ferry tabs fixture" {
			t.Errorf("navigate forward: %+v", nav)
		}
		b.wantErr("browser.page.navigate", map[string]any{"tab_id": big.TabID, "action": "sideways"}, "invalid")
	})

	t.Run("screenshot", func(t *testing.T) {
		b.t = t
		var shot struct {
			DataURL   string `json:"data_url"`
			Width     int    `json:"width"`
			Height    int    `json:"height"`
			Bytes     int    `json:"bytes"`
			Activated bool   `json:"activated"`
		}
		b.must("browser.page.screenshot", map[string]any{"tab_id": tab.TabID, "max_width": 400}, &shot)
		t.Logf("screenshot: %dx%d, %d bytes, activated %v", shot.Width, shot.Height, shot.Bytes, shot.Activated)
		if !strings.HasPrefix(shot.DataURL, "data:image/jpeg;base64,") || shot.Width != 400 || shot.Height == 0 || shot.Bytes == 0 {
			t.Errorf("screenshot: %dx%d %d bytes %.40s", shot.Width, shot.Height, shot.Bytes, shot.DataURL)
		}
	})

	t.Run("console and network", func(t *testing.T) {
		b.t = t
		c := b.open("/console.html")
		time.Sleep(200 * time.Millisecond) // the fetch and the late error
		var con struct {
			Messages []struct{ Level, Text, Time string }
		}
		b.must("browser.page.console", map[string]any{"tab_id": c.TabID}, &con)
		var lines []string
		for _, m := range con.Messages {
			lines = append(lines, m.Level+": "+m.Text)
		}
		got := strings.Join(lines, "\n")
		for _, want := range []string{`log: hello from the page {"n":1}`, "warn: careful", "error: broken thing", "info: fetched", "error: Uncaught Error: late failure"} {
			if !strings.Contains(got, want) {
				t.Errorf("console lacks %q:\n%s", want, got)
			}
		}
		var netw struct {
			Requests []struct {
				URL        string `json:"url"`
				Method     any    `json:"method"`
				Type       string `json:"type"`
				Status     int    `json:"status"`
				DurationMS int    `json:"duration_ms"`
			}
		}
		b.must("browser.page.network", map[string]any{"tab_id": c.TabID}, &netw)
		var reqs []string
		for _, r := range netw.Requests {
			reqs = append(reqs, fmt.Sprintf("%s %s %d", r.Type, strings.TrimPrefix(r.URL, b.srv.URL), r.Status))
		}
		got = strings.Join(reqs, "\n")
		for _, want := range []string{"document /console.html 200", "img /pixel.gif 200", "fetch /tabs.html?from=fetch 200"} {
			if !strings.Contains(got, want) {
				t.Errorf("network lacks %q:\n%s", want, got)
			}
		}
	})
}

// TestBrowserToolsThroughHost goes the whole way: ferryHost.request('tools.call')
// in the worker → the host's registry and pipeline → browser.* requests back to
// the worker's registered handlers → the page.
func TestBrowserToolsThroughHost(t *testing.T) {
	s := start(t, 60*time.Second)
	srv := fixtureServer(t)
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	s.must("tools.list", map[string]any{}, &list)
	have := map[string]bool{}
	for _, tool := range list.Tools {
		have[tool.Name] = true
	}
	for _, name := range []string{"list_tabs", "open_tab", "close_tab", "activate_tab", "get_tab_content", "execute_script",
		"browser_snapshot", "browser_click", "browser_type", "browser_select", "browser_scroll", "browser_screenshot",
		"browser_navigate", "browser_console", "browser_network", "browser_info"} {
		if !have[name] {
			t.Errorf("tools.list lacks %s", name)
		}
	}
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		var r map[string]any
		s.must("tools.call", map[string]any{"name": name, "arguments": args}, &r)
		if r["success"] != true {
			t.Fatalf("%s(%v): %v", name, args, r)
		}
		res, _ := r["result"].(map[string]any)
		return res
	}
	o := call("open_tab", map[string]any{"url": srv.URL + "/content.html"})
	tabID := o["tab_id"]
	tabs := call("list_tabs", map[string]any{"url_pattern": "content\\.html"})
	if found, _ := tabs["tabs"].([]any); len(found) != 1 || found[0].(map[string]any)["tab_id"] != tabID {
		t.Errorf("list_tabs by url_pattern: %v, want the tab %v alone", tabs, tabID)
	}
	c := call("get_tab_content", map[string]any{"tab_id": tabID})
	if content, _ := c["content"].(string); !strings.Contains(content, "First paragraph of the story.") || strings.Contains(content, "HIDDEN-") {
		t.Errorf("get_tab_content: %v", c)
	}
	if r := call("execute_script", map[string]any{"code": "6 * 7", "target": "sandbox"}); r["value"] != 42.0 {
		t.Errorf("execute_script in the sandbox: %v", r)
	}
	var bad map[string]any
	s.must("tools.call", map[string]any{"name": "get_tab_content", "arguments": map[string]any{"tab_id": 999999}}, &bad)
	if bad["success"] != false || bad["code"] != "ACTION_UNAVAILABLE" {
		t.Errorf("get_tab_content of a missing tab: %v", bad)
	}

	// Every call is in the audit log with its code.
	var audit struct {
		Entries []struct {
			Tool, Code, TraceID string
			Success             bool
		} `json:"entries"`
	}
	s.must("audit.query", map[string]any{}, &audit)
	codes := map[string][]string{}
	for _, e := range audit.Entries {
		codes[e.Tool] = append(codes[e.Tool], fmt.Sprintf("%v/%s", e.Success, e.Code))
	}
	for tool, want := range map[string]string{
		"open_tab": "[true/]", "list_tabs": "[true/]", "execute_script": "[true/]",
		"get_tab_content": "[false/ACTION_UNAVAILABLE true/]",
	} {
		if got := fmt.Sprint(codes[tool]); got != want {
			t.Errorf("audit rows of %s: %s, want %s (newest first)", tool, got, want)
		}
	}
}
