package browser

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/host/web"
	"github.com/ferryhq/ferry/protocol"
	"github.com/rs/zerolog"
)

// fakeBrowser records every request and answers from a script per method.
type fakeBrowser struct {
	mu        sync.Mutex
	calls     []fakeCall
	answer    map[string]func(params map[string]any) (any, error)
	connected bool
}

type fakeCall struct {
	Method string
	Params map[string]any
}

func newFake() *fakeBrowser {
	return &fakeBrowser{connected: true, answer: map[string]func(map[string]any) (any, error){}}
}

func (f *fakeBrowser) on(method string, fn func(params map[string]any) (any, error)) {
	f.answer[method] = fn
}

func (f *fakeBrowser) Connected() bool { return f.connected }

func (f *fakeBrowser) Call(ctx context.Context, method string, params, result any) error {
	if !f.connected {
		return ErrNoBrowser
	}
	raw, _ := json.Marshal(params)
	var p map[string]any
	json.Unmarshal(raw, &p)
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{method, p})
	fn := f.answer[method]
	f.mu.Unlock()
	if fn == nil {
		return &protocol.Error{Code: protocol.CodeMethodNotFound, Message: "no method " + method}
	}
	out, err := fn(p)
	if err != nil {
		return err
	}
	if out == nil {
		<-ctx.Done() // a service worker that never answers
		return ctx.Err()
	}
	b, _ := json.Marshal(out)
	return json.Unmarshal(b, result)
}

func (f *fakeBrowser) methods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.Method)
	}
	return out
}

func (f *fakeBrowser) last(method string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i].Method == method {
			return f.calls[i].Params
		}
	}
	return nil
}

// fakeSettings serves both the pipeline (ListSettings) and the tools (GetSetting).
type fakeSettings struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *fakeSettings) set(k, v string) { s.mu.Lock(); s.m[k] = v; s.mu.Unlock() }

func (s *fakeSettings) Snapshot(ctx context.Context) *config.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.m {
		out[k] = v
	}
	return config.Of(out)
}

type fakeUI struct {
	mu       sync.Mutex
	approve  bool
	confirms []tools.ConfirmRequest
}

func (u *fakeUI) Confirm(ctx context.Context, req tools.ConfirmRequest) (bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.confirms = append(u.confirms, req)
	return u.approve, nil
}

func (u *fakeUI) Ask(ctx context.Context, req tools.AskRequest) (tools.AskAnswer, error) {
	return tools.AskAnswer{}, errors.New("not asked in these tests")
}

type fakeSummarizer struct{ prompt, content string }

func (s *fakeSummarizer) Summarize(ctx context.Context, prompt, content string) (string, error) {
	s.prompt, s.content = prompt, content
	return "summary: " + prompt, nil
}

type env struct {
	t        *testing.T
	reg      *tools.Registry
	fake     *fakeBrowser
	settings *fakeSettings
	ui       *fakeUI
}

func newEnv(t *testing.T, mod func(d *Deps)) *env {
	e := &env{t: t, fake: newFake(), settings: &fakeSettings{m: map[string]string{}}, ui: &fakeUI{approve: true}}
	e.reg = tools.NewRegistry(tools.Options{Settings: e.settings, Log: zerolog.Nop()})
	e.reg.SetUI(e.ui)
	d := Deps{Browser: e.fake, Settings: e.settings, wait: 2 * time.Second}
	if mod != nil {
		mod(&d)
	}
	for _, tool := range Tools(d) {
		if err := e.reg.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) call(name, args string) tools.Result {
	e.t.Helper()
	return e.reg.Call(context.Background(), &tools.Call{Tool: name, Arguments: json.RawMessage(args), Caller: "test"})
}

func (e *env) set(k, v string) {
	e.settings.set(k, v)
	e.reg.RefreshSettings()
}

func browserErr(reason, msg string, data map[string]any) error {
	d := map[string]any{"reason": reason}
	for k, v := range data {
		d[k] = v
	}
	return &protocol.Error{Code: protocol.CodeBrowserError, Message: msg, Data: d}
}

func ok(v any) func(map[string]any) (any, error) {
	return func(map[string]any) (any, error) { return v, nil }
}

var allTools = []string{"list_tabs", "open_tab", "close_tab", "activate_tab", "get_tab_content", "execute_script",
	"browser_snapshot", "browser_click", "browser_type", "browser_select", "browser_scroll", "browser_screenshot",
	"browser_navigate", "browser_console", "browser_network", "browser_info", "browser_dialog"}

func TestToolsAndKinds(t *testing.T) {
	e := newEnv(t, nil)
	all := e.reg.All(0)
	if len(all) != len(allTools) {
		t.Fatalf("%d tools, want %d", len(all), len(allTools))
	}
	writes := map[string]bool{"close_tab": true, "execute_script": true, "browser_click": true, "browser_type": true, "browser_select": true, "browser_navigate": true, "browser_dialog": true}
	for _, l := range all {
		if got := l.Kind == tools.KindWrite; got != writes[l.Name] {
			t.Errorf("%s kind %s", l.Name, l.Kind)
		}
		if l.Description == "" {
			t.Errorf("%s lacks a description", l.Name)
		}
	}
}

func TestNoBrowser(t *testing.T) {
	for name, mod := range map[string]func(*Deps){
		"nil":          func(d *Deps) { d.Browser = nil },
		"disconnected": nil,
		"conn nil":     func(d *Deps) { d.Browser = ConnBrowser(func() *protocol.Conn { return nil }) },
		"no conn func": func(d *Deps) { d.Browser = ConnBrowser(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, mod)
			e.fake.connected = false
			avail, unavail := e.reg.List(context.Background(), 0)
			if len(avail) != 0 || len(unavail) != len(allTools) {
				t.Fatalf("available %d, unavailable %d", len(avail), len(unavail))
			}
			for _, u := range unavail {
				if u.Reason != NoBrowserReason {
					t.Fatalf("%s: %q", u.Name, u.Reason)
				}
			}
			r := e.call("list_tabs", `{}`)
			if r.Code != tools.CodeActionUnavailable || r.Reason != NoBrowserReason {
				t.Fatalf("%+v", r)
			}
		})
	}
}

// Arguments that break a schema fail with INVALID_PARAMS before the browser is
// asked anything, and before any confirmation.
func TestParamValidation(t *testing.T) {
	e := newEnv(t, nil)
	e.set(tools.SettingConfirmWrites, "true")
	e.set(SettingAllowNavigate, "true")
	for _, c := range []struct{ tool, args, want string }{
		{"list_tabs", `{"colour":"red"}`, "/colour"},
		{"list_tabs", `{"active":"yes"}`, "/active"},
		{"open_tab", `{}`, "/url"},
		{"open_tab", `{"url":"javascript:alert(1)"}`, "/url"},
		{"open_tab", `{"url":"example.com"}`, "/url"},
		{"close_tab", `{}`, "/tab_id"},
		{"close_tab", `{"tab_id":-1}`, "/tab_id"},
		{"activate_tab", `{"tab_id":"7"}`, "/tab_id"},
		{"get_tab_content", `{"max_length":0}`, "/max_length"},
		{"get_tab_content", `{"selector":""}`, "/selector"},
		{"execute_script", `{"code":"1"}`, "/target"},
		{"execute_script", `{"code":"1","target":"worker"}`, "/target"},
		{"execute_script", `{"code":"","target":"sandbox"}`, "/code"},
		{"execute_script", `{"code":"1","target":"sandbox","timeout_seconds":500}`, "/timeout_seconds"},
		{"browser_snapshot", `{"max_nodes":0}`, "/max_nodes"},
		{"browser_click", `{}`, "ref"},
		{"browser_click", `{"ref":"e1","selector":"#a"}`, "/selector: not allowed"},
		{"browser_click", `{"ref":"button"}`, "/ref"},
		{"browser_type", `{"ref":"e1"}`, "/text"},
		{"browser_select", `{"selector":"#s","values":[]}`, "/values"},
		{"browser_scroll", `{"ref":"e1","selector":"#a"}`, "/selector: not allowed"},
		{"browser_scroll", `{"direction":"sideways"}`, "/direction"},
		{"browser_navigate", `{}`, "url"},
		{"browser_navigate", `{"url":"https://a.example","action":"back"}`, "/action: not allowed"},
		{"browser_navigate", `{"url":"data:text/html,hi"}`, "/url"},
		{"browser_navigate", `{"url":"JavaScript:alert(1)"}`, "/url"},
		{"browser_info", `{"tab_id":1.5}`, "/tab_id"},
	} {
		r := e.call(c.tool, c.args)
		if r.Code != tools.CodeInvalidParams || !strings.Contains(r.Reason, c.want) {
			t.Errorf("%s %s: %+v, want INVALID_PARAMS mentioning %q", c.tool, c.args, r, c.want)
		}
	}
	if m := e.fake.methods(); len(m) != 0 {
		t.Errorf("the browser was asked %v", m)
	}
	if len(e.ui.confirms) != 0 {
		t.Errorf("%d confirmations asked", len(e.ui.confirms))
	}
}

// BROWSER.md's table: each -32010 reason becomes its code and keeps the
// extension's message.
func TestErrorReasons(t *testing.T) {
	for _, c := range []struct {
		reason string
		data   map[string]any
		code   tools.Code
		want   []string
	}{
		{"no_tab", nil, tools.CodeActionUnavailable, []string{"list_tabs"}},
		{"restricted_page", map[string]any{"url": "chrome://settings"}, tools.CodeActionUnavailable, []string{"chrome://settings", "does not let extensions"}},
		{"no_permission", map[string]any{"origin": "https://bank.example"}, tools.CodePermissionDenied, []string{"https://bank.example"}},
		{"stale_ref", nil, tools.CodeActionUnavailable, []string{"take a new browser_snapshot"}},
		{"no_element", nil, tools.CodeActionUnavailable, nil},
		{"element_state", map[string]any{"state": "covered by div.modal"}, tools.CodeActionUnavailable, []string{"covered by div.modal"}},
		{"invalid", nil, tools.CodeInvalidParams, nil},
		{"timeout", nil, tools.CodeTimeout, []string{"may have had effects"}},
		{"script_error", map[string]any{"message": "x is not defined", "stack": "at <anonymous>:1:1"}, tools.CodeHandlerError, []string{"x is not defined", "at <anonymous>:1:1"}},
		{"no_frame", nil, tools.CodeActionUnavailable, nil},
		{"gone", nil, tools.CodeHandlerError, []string{"may have had effects"}},
		{"something_new", nil, tools.CodeHandlerError, nil},
	} {
		e := newEnv(t, nil)
		msg := "extension says " + c.reason
		e.fake.on("browser.page.click", func(map[string]any) (any, error) { return nil, browserErr(c.reason, msg, c.data) })
		r := e.call("browser_click", `{"ref":"e3"}`)
		if r.Code != c.code || !strings.Contains(r.Reason, msg) {
			t.Errorf("%s: %+v, want %s with the extension's message", c.reason, r, c.code)
		}
		for _, w := range c.want {
			if !strings.Contains(r.Reason, w) {
				t.Errorf("%s: reason %q lacks %q", c.reason, r.Reason, w)
			}
		}
	}
	// Other JSON-RPC errors and a silent service worker.
	e := newEnv(t, nil)
	if r := e.call("browser_info", `{}`); r.Code != tools.CodeHandlerError || !strings.Contains(r.Reason, "no method browser.page.info") {
		t.Errorf("method not found: %+v", r)
	}
	e.fake.on("browser.page.info", ok(nil))
	if r := e.call("browser_info", `{}`); r.Code != tools.CodeTimeout || !strings.Contains(r.Reason, "service worker") {
		t.Errorf("no answer: %+v", r)
	}
}

// BROWSER.md's error table is the code's: every reason it lists maps to the tool
// code it says, and every reason the extension may send is listed.
func TestBrowserMDErrorTable(t *testing.T) {
	doc, err := os.ReadFile("../../protocol/BROWSER.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)[strings.Index(string(doc), "## Errors"):]
	section = section[:strings.Index(section, "\n## ")]
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| .* \\| `([A-Z_]+)` \\|$")
	rows := row.FindAllStringSubmatch(section, -1)
	if len(rows) < 10 {
		t.Fatalf("only %d rows in BROWSER.md's error table", len(rows))
	}
	listed := map[string]bool{}
	for _, r := range rows {
		listed[r[1]] = true
		err := MapError("browser.x", &protocol.Error{Code: protocol.CodeBrowserError, Message: "m", Data: map[string]any{"reason": r[1]}})
		var f *tools.Failure
		if !errors.As(err, &f) || string(f.Code) != r[2] {
			t.Errorf("reason %s: %v; BROWSER.md says %s", r[1], err, r[2])
		}
	}
	js, err := os.ReadFile("../../extension/background/browser/errors.js")
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?s)REASONS = Object\.freeze\(\[(.*?)\]\)`).FindSubmatch(js)
	if decl == nil {
		t.Fatal("no REASONS in errors.js")
	}
	for _, m := range regexp.MustCompile(`'([a-z_]+)'`).FindAllSubmatch(decl[1], -1) {
		if !listed[string(m[1])] {
			t.Errorf("the extension may send reason %s, which BROWSER.md does not list", m[1])
		}
	}
}

func TestPassThroughAndTabDefault(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.on("browser.tabs.list", ok(map[string]any{"tabs": []any{map[string]any{"tab_id": 3, "url": "https://a.example/"}}}))
	e.fake.on("browser.page.type", ok(map[string]any{"typed": true, "element": "input#q", "value": "shoes"}))
	r := e.call("list_tabs", `{"url_pattern":"a\\.example","active":true}`)
	if !r.Success || string(r.Result.(json.RawMessage)) != `{"tabs":[{"tab_id":3,"url":"https://a.example/"}]}` {
		t.Fatalf("%+v", r)
	}
	if p := e.fake.last("browser.tabs.list"); p["url_pattern"] != `a\.example` || p["active"] != true {
		t.Fatalf("params %v", p)
	}
	r = e.reg.Call(context.Background(), &tools.Call{Tool: "browser_type", TabID: 9, Arguments: json.RawMessage(`{"selector":"#q","text":"shoes","submit":true}`)})
	if !r.Success {
		t.Fatalf("%+v", r)
	}
	if p := e.fake.last("browser.page.type"); p["tab_id"] != 9.0 || p["selector"] != "#q" || p["text"] != "shoes" || p["submit"] != true {
		t.Fatalf("params %v: the call's tab is the default", p)
	}
}

func TestOpenTab(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.on("browser.tabs.open", ok(map[string]any{"tab_id": 4, "window_id": 1, "url": "https://a.example/", "status": "loading", "loaded": false, "waited_ms": 30000, "timed_out": true}))
	r := e.call("open_tab", `{"url":"https://a.example/"}`)
	if !r.Success {
		t.Fatalf("%+v", r)
	}
	b, _ := json.Marshal(r.Result)
	if !strings.Contains(string(b), `"timed_out":true`) || !strings.Contains(string(b), "stopped waiting after 30 s") {
		t.Fatalf("%s", b)
	}
	if p := e.fake.last("browser.tabs.open"); p["timeout_ms"] != 30000.0 {
		t.Fatalf("params %v", p)
	}
}

func TestNavigateOffByDefault(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.on("browser.page.navigate", ok(map[string]any{"url": "https://b.example/", "title": "B", "status": "complete"}))
	r := e.call("browser_navigate", `{"url":"https://b.example/"}`)
	if r.Code != tools.CodePermissionDenied || !strings.Contains(r.Reason, SettingAllowNavigate) {
		t.Fatalf("%+v", r)
	}
	if len(e.fake.methods()) != 0 {
		t.Fatal("navigated while off")
	}
	e.set(SettingAllowNavigate, "true")
	if r := e.call("browser_navigate", `{"action":"back"}`); !r.Success {
		t.Fatalf("%+v", r)
	}
	if p := e.fake.last("browser.page.navigate"); p["action"] != "back" {
		t.Fatalf("%v", p)
	}
}

func scriptEnv(t *testing.T) *env {
	e := newEnv(t, nil)
	e.fake.on("browser.page.info", ok(map[string]any{"tab_id": 5, "url": "https://Shop.Example:443/cart?x=1", "title": "Cart"}))
	e.fake.on("browser.script.execute", ok(map[string]any{"value": map[string]any{"items": 2}, "type": "object"}))
	return e
}

func TestExecuteScriptConfirmation(t *testing.T) {
	e := scriptEnv(t)
	r := e.call("execute_script", `{"code":"return 1","target":"page","tab_id":5}`)
	if !r.Success || len(e.ui.confirms) != 1 {
		t.Fatalf("%+v, %d confirmations", r, len(e.ui.confirms))
	}
	c := e.ui.confirms[0]
	if !c.Dangerous || !strings.Contains(c.Message, "https://shop.example") || !strings.Contains(c.Message, SettingScriptsAutoApprove) {
		t.Fatalf("confirmation %+v", c)
	}
	if b, _ := json.Marshal(r.Result); string(b) != `{"value":{"items":2},"type":"object"}` {
		t.Fatalf("result %s", b)
	}
	if p := e.fake.last("browser.script.execute"); p["tab_id"] != 5.0 || p["target"] != "page" || p["timeout_ms"] != 30000.0 {
		t.Fatalf("params %v", p)
	}

	// Declined: nothing runs.
	e.ui.approve = false
	if r := e.call("execute_script", `{"code":"return 2","target":"page"}`); r.Code != tools.CodeUserRejected {
		t.Fatalf("%+v", r)
	}
	if n := strings.Count(strings.Join(e.fake.methods(), " "), "browser.script.execute"); n != 1 {
		t.Fatalf("ran %d times", n)
	}

	// An auto-approved origin runs unasked; the sandbox never asks.
	e.set(SettingScriptsAutoApprove, "https://other.example, https://shop.example")
	before := len(e.ui.confirms)
	if r := e.call("execute_script", `{"code":"return 3","target":"page"}`); !r.Success {
		t.Fatalf("%+v", r)
	}
	if r := e.call("execute_script", `{"code":"return 4","target":"sandbox","tab_id":5}`); !r.Success {
		t.Fatalf("%+v", r)
	}
	if len(e.ui.confirms) != before {
		t.Fatalf("asked %d more times", len(e.ui.confirms)-before)
	}
	if p := e.fake.last("browser.script.execute"); p["target"] != "sandbox" || p["tab_id"] != nil {
		t.Fatalf("sandbox params %v", p)
	}

	// A tab that is gone fails before anything is asked.
	e.set(SettingScriptsAutoApprove, "")
	e.fake.on("browser.page.info", func(map[string]any) (any, error) { return nil, browserErr("no_tab", "no tab 77", nil) })
	before = len(e.ui.confirms)
	if r := e.call("execute_script", `{"code":"1","target":"page","tab_id":77}`); r.Code != tools.CodeActionUnavailable || len(e.ui.confirms) != before {
		t.Fatalf("%+v", r)
	}
}

func TestExecuteScriptFailures(t *testing.T) {
	e := scriptEnv(t)
	e.set(SettingScriptsAutoApprove, "https://shop.example")
	e.fake.on("browser.script.execute", func(p map[string]any) (any, error) {
		switch p["code"] {
		case "throw":
			return nil, browserErr("script_error", "the script threw", map[string]any{"message": "TypeError: x is undefined", "stack": "at f (page.js:3:7)"})
		case "spin":
			return nil, browserErr("timeout", "the script did not finish", nil)
		}
		return ok(map[string]any{"type": "undefined"})(p)
	})
	r := e.call("execute_script", `{"code":"throw","target":"page"}`)
	if r.Code != tools.CodeHandlerError || !strings.Contains(r.Reason, "TypeError: x is undefined") || !strings.Contains(r.Reason, "page.js:3:7") {
		t.Fatalf("%+v", r)
	}
	r = e.call("execute_script", `{"code":"spin","target":"page"}`)
	if r.Code != tools.CodeTimeout || !strings.Contains(r.Reason, "may go on") {
		t.Fatalf("%+v", r)
	}
	r = e.call("execute_script", `{"code":"spin","target":"sandbox","timeout_seconds":5}`)
	if r.Code != tools.CodeTimeout || !strings.Contains(r.Reason, "was stopped") || !strings.Contains(r.Reason, "5s") {
		t.Fatalf("%+v", r)
	}
	r = e.call("execute_script", `{"code":"undef","target":"sandbox"}`)
	if b, _ := json.Marshal(r.Result); !r.Success || string(b) != `{"value":null,"type":"undefined"}` {
		t.Fatalf("%+v %s", r, b)
	}
}

func TestGetTabContent(t *testing.T) {
	sum := &fakeSummarizer{}
	e := newEnv(t, func(d *Deps) { d.Summarizer = sum })
	page := `<body data-ferry-sel="body"><nav data-ferry-sel="nav"><a href="/">Home</a></nav><main data-ferry-sel="#m"><h1 data-ferry-sel="#m h1">Title</h1><p>` + strings.Repeat("Long prose, with commas, ", 40) + `</p></main></body>`
	e.fake.on("browser.page.capture", func(p map[string]any) (any, error) {
		if p["selector"] != nil {
			return map[string]any{"tab_id": 2, "url": "https://a.example/", "title": "A", "html": `<p data-ferry-sel="#m p">Part</p>`, "used_selector": p["selector"]}, nil
		}
		return map[string]any{"tab_id": 2, "url": "https://a.example/", "title": "A", "html": page, "used_selector": ""}, nil
	})
	r := e.call("get_tab_content", `{"tab_id":2}`)
	res, _ := r.Result.(*ContentResult)
	if !r.Success || res.UsedSelector != "#m" || !strings.HasPrefix(res.Content, "# Title ⟨#m h1⟩") || strings.Contains(res.Content, "Home") || res.Truncated {
		t.Fatalf("%+v %+v", r, res)
	}
	r = e.call("get_tab_content", `{"tab_id":2,"selector":"#m p","max_length":3}`)
	res = r.Result.(*ContentResult)
	if res.UsedSelector != "#m p" || res.Content != "Par" || !res.Truncated {
		t.Fatalf("%+v", res)
	}
	r = e.call("get_tab_content", `{"prompt":"what is it about?"}`)
	res = r.Result.(*ContentResult)
	if res.Content != "summary: what is it about?" || !res.Summarized || !strings.Contains(sum.content, "Long prose") {
		t.Fatalf("%+v", res)
	}

	e2 := newEnv(t, nil)
	e2.fake.answer = e.fake.answer
	if r := e2.call("get_tab_content", `{"prompt":"x"}`); r.Code != tools.CodeActionUnavailable || !strings.Contains(r.Reason, "no model provider") {
		t.Fatalf("%+v", r)
	}
	if len(e2.fake.methods()) != 0 {
		t.Fatal("captured although the prompt could not be served")
	}
	var _ web.Summarizer = sum
}

func TestScreenshotShrinksToFit(t *testing.T) {
	e := newEnv(t, nil)
	e.set(SettingScreenshotMaxBytes, "20000")
	var widths []float64
	e.fake.on("browser.page.screenshot", func(p map[string]any) (any, error) {
		w := p["max_width"].(float64)
		widths = append(widths, w)
		size := int(w * w / 40) // 1280 px → 40960 bytes
		data := strings.Repeat("A", size/3*4)
		return map[string]any{"data_url": "data:image/jpeg;base64," + data, "width": int(w), "height": int(w * 9 / 16), "bytes": size}, nil
	})
	r := e.call("browser_screenshot", `{"tab_id":3}`)
	if !r.Success {
		t.Fatalf("%+v", r)
	}
	img, found := ImageFromResult(r.Result)
	if !found || img.MimeType != "image/jpeg" || img.Bytes > 20000 || len(widths) < 2 || widths[0] != 1280 {
		t.Fatalf("%+v widths %v", img, widths)
	}
	// As the agent loop may hold it: decoded from JSON.
	b, _ := json.Marshal(r.Result)
	var generic any
	json.Unmarshal(b, &generic)
	if img2, found := ImageFromResult(generic); !found || img2.DataURL != img.DataURL {
		t.Fatal("image not found in the JSON form of the result")
	}
	if _, found := ImageFromResult(map[string]any{"value": 1}); found {
		t.Fatal("found an image in a result without one")
	}

	e.set(SettingScreenshotMaxBytes, "16384")
	e.fake.on("browser.page.screenshot", ok(map[string]any{"data_url": "data:image/jpeg;base64," + strings.Repeat("A", 40000), "width": 320, "height": 200}))
	if r := e.call("browser_screenshot", `{}`); r.Code != tools.CodeActionUnavailable || !strings.Contains(r.Reason, SettingScreenshotMaxBytes) {
		t.Fatalf("%+v", r)
	}
}

// lastingUI answers every card with approved and, where offered, lasting.
type lastingUI struct {
	fakeUI
	lasting bool
}

func (u *lastingUI) ConfirmLasting(ctx context.Context, req tools.ConfirmRequest) (tools.ConfirmAnswer, error) {
	ok, err := u.Confirm(ctx, req)
	return tools.ConfirmAnswer{Approved: ok, Lasting: u.lasting && req.Lasting != nil}, err
}

// storeSettings is fakeSettings that a lasting answer can write to.
type storeSettings struct{ *fakeSettings }

func (s storeSettings) Set(ctx context.Context, key, value string) error {
	s.set(key, value)
	return nil
}

// A script's card offers "always allow scripts on this site" as a lasting answer of
// its own; taking it adds the page's origin to browser.scripts_auto_approve_origins,
// and the next script there runs unasked. Under the person's own policy the card
// offers nothing lasting: the grant could not lift that policy.
func TestExecuteScriptLastingApproval(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.Store = storeSettings{d.Settings.(*fakeSettings)} })
	e.fake.on("browser.page.info", ok(map[string]any{"tab_id": 5, "url": "https://Shop.Example:443/cart?x=1", "title": "Cart"}))
	e.fake.on("browser.script.execute", ok(map[string]any{"value": 1, "type": "number"}))
	ui := &lastingUI{fakeUI: fakeUI{approve: true}}
	e.reg.SetUI(ui)
	run := func() tools.Result {
		t.Helper()
		return e.call("execute_script", `{"code":"return 1","target":"page","tab_id":5}`)
	}

	// Approved once: the card offered the lasting answer, nothing was stored.
	if r := run(); !r.Success || len(ui.confirms) != 1 {
		t.Fatalf("%+v, %d confirmations", r, len(ui.confirms))
	}
	if l := ui.confirms[0].Lasting; l == nil || l.Scope != tools.LastingPageScripts || l.Origin != "https://shop.example" {
		t.Fatalf("lasting offered %+v", l)
	}
	if v := e.settings.Snapshot(context.Background()).String(SettingScriptsAutoApprove); v != "" {
		t.Fatalf("a one-time approval stored %q", v)
	}

	// The person's own policy asks too: nothing lasting on that card.
	e.set(tools.SettingConfirm, "execute_script")
	ui.lasting = true
	if r := run(); !r.Success || len(ui.confirms) != 2 || ui.confirms[1].Lasting != nil {
		t.Fatalf("under tools.confirm: %+v, lasting %+v", r, ui.confirms[len(ui.confirms)-1].Lasting)
	}
	if v := e.settings.Snapshot(context.Background()).String(SettingScriptsAutoApprove); v != "" {
		t.Fatalf("stored %q under the person's policy", v)
	}
	e.set(tools.SettingConfirm, "")

	// Always allow: the origin joins the setting, and the next script there is not asked.
	e.set(SettingScriptsAutoApprove, "https://other.example")
	if r := run(); !r.Success || len(ui.confirms) != 3 {
		t.Fatalf("%+v, %d confirmations", r, len(ui.confirms))
	}
	e.reg.RefreshSettings()
	if v := e.settings.Snapshot(context.Background()).String(SettingScriptsAutoApprove); v != "https://other.example,https://shop.example" {
		t.Fatalf("%s = %q after always allow", SettingScriptsAutoApprove, v)
	}
	if r := run(); !r.Success || len(ui.confirms) != 3 {
		t.Fatalf("after always allow: %+v, asked %d times", r, len(ui.confirms))
	}
}
