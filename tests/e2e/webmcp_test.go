package e2e

// WebMCP pages as the ecosystem writes them, each run in Chromium with and without
// Ferry, with and without the browser's own WebMCP (--enable-features=WebMCP): with
// Ferry, the page's own view (getTools(), what it logged, its errors) is the view it
// has without Ferry, and Ferry's tools.list for the tab lists the page's tools.
// The pages are the tests' own (testdata/webmcp), written after the draft's and the
// libraries' documented usage; the libraries themselves (@mcp-b/webmcp-polyfill,
// @mcp-b/global, usewebmcp, React) come from npm (scripts/e2e-npm).

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/ferryhq/ferry/tests/browsertest"
)

var (
	npmOnce sync.Once
	npmDir  string
	npmErr  error
)

// e2eNPM is the folder scripts/e2e-npm installs the ecosystem's packages into.
func e2eNPM(t *testing.T) string {
	t.Helper()
	npmOnce.Do(func() {
		cmd := exec.Command(filepath.Join(browsertest.RepoRoot(), "scripts", "e2e-npm"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		npmDir, npmErr = strings.TrimSpace(string(out)), err
	})
	if npmErr != nil || npmDir == "" {
		t.Fatalf("scripts/e2e-npm (the ecosystem's packages from npm): %v", npmErr)
	}
	return npmDir
}

// webmcpServer serves the test pages at /webmcp/ and the npm packages at /npm/, on
// 127.0.0.1.
func webmcpServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	files := http.StripPrefix("/webmcp/", http.FileServer(http.Dir(filepath.Join(browsertest.RepoRoot(), "tests", "e2e", "testdata", "webmcp"))))
	mux.Handle("/webmcp/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page whose document.domain must stay enabled asks for it as a site
		// does: by opting out of origin-keyed agent clusters.
		if r.URL.Path == "/webmcp/domain.html" {
			w.Header().Set("Origin-Agent-Cluster", "?0")
		}
		files.ServeHTTP(w, r)
	}))
	mux.Handle("/npm/", http.StripPrefix("/npm/", http.FileServer(http.Dir(filepath.Join(e2eNPM(t), "node_modules")))))
	return loopbackServer(t, mux)
}

// loopbackServer serves h on 127.0.0.1 (not "localhost", which then names another
// origin on the same server) until the test ends.
func loopbackServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// pageView is what a test page saw (testdata/webmcp/view.js).
type pageView struct {
	Tools  json.RawMessage `json:"tools"`
	Log    []string        `json:"log"`
	Errors []string        `json:"errors"`
}

func (v pageView) toolNames() []string {
	var ts []struct {
		Name string `json:"name"`
	}
	json.Unmarshal(v.Tools, &ts)
	out := []string{}
	for _, x := range ts {
		out = append(out, x.Name)
	}
	sort.Strings(out)
	return out
}

// viewIn loads url in a new tab of the browser and returns the page's view.
func viewIn(t *testing.T, ctx, browser context.Context, url string) (pageView, context.Context) {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := browsertest.WaitFor(wctx, tab, `window.__view?.done === true || window.__view?.errors?.length > 0`); err != nil {
		t.Fatalf("%s never finished: %v", url, err)
	}
	time.Sleep(100 * time.Millisecond) // late errors of the page land in the view too
	raw, err := browsertest.Eval[string](tab, `JSON.stringify(window.__view)`)
	if err != nil {
		t.Fatal(err)
	}
	var v pageView
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	return v, tab
}

// forms, bistro, domain, detached and navigate hold the shim to the browser's own
// WebMCP (Chromium 156): each rule of the declarative synthesis, a form read by a
// script right after it, document.domain's gate, a removed frame's refusals, and a
// form tool that navigates.
var webmcpPages = []string{"spec", "declarative", "forms", "bistro", "domain", "detached", "navigate", "polyfill", "global", "usewebmcp", "wu"}

// ownRuntime: pages that bring their own WebMCP, so that they work in a browser
// without one, Ferry or not.
var ownRuntime = map[string]bool{"polyfill": true, "global": true, "usewebmcp": true}

func TestWebMCPPagesAsWithoutFerry(t *testing.T) {
	browsertest.RequireChromium(t)
	srv := webmcpServer(t)
	url := func(p string) string { return srv.URL + "/webmcp/" + p + ".html" }
	without := map[bool]map[string]pageView{} // native → page → view
	for _, native := range []bool{false, true} {
		var features []string
		if native {
			features = []string{"WebMCP"}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		b, err := browsertest.Launch(ctx, browsertest.Options{UserDataDir: browsertest.TempDir(t, "ferry-e2e-plain-"), NoExtension: true, Features: features})
		if err != nil {
			t.Fatal(err)
		}
		without[native] = map[string]pageView{}
		for _, p := range webmcpPages {
			v, _ := viewIn(t, ctx, b.Ctx, url(p))
			without[native][p] = v
		}
		b.Close()
		cancel()
	}
	compared := 0
	for _, native := range []bool{false, true} {
		t.Run(map[bool]string{false: "shim", true: "native WebMCP"}[native], func(t *testing.T) {
			var features []string
			if native {
				features = []string{"WebMCP"}
			}
			s := startWith(t, 120*time.Second, features)
			for _, p := range webmcpPages {
				got, tab := viewIn(t, s.ctx, s.browser.Ctx, url(p))
				// The reference: the same browser without Ferry; for a page that relies on
				// the browser's WebMCP, the browser that has it (Ferry's shim stands in).
				ref := without[native][p]
				if !native && !ownRuntime[p] {
					ref = without[true][p]
				}
				if p == "wu" {
					ref = without[native][p]
				}
				if !reflect.DeepEqual(got, ref) {
					t.Errorf("%s: the page's own view differs with Ferry:\n with    %s\n without %s", p, mustJSON(got), mustJSON(ref))
				} else {
					compared++
				}
				want := got.toolNames()
				if p == "forms" {
					// Its schema allows no value at all (anyOf of nothing): the host
					// refuses such a declaration, whoever synthesised it.
					want = slices.DeleteFunc(want, func(n string) bool { return n == "empty_choice" })
				}
				if p == "wu" {
					want = []string{"addToCart", "setTheme", "wishlist:save"}
				}
				id := tabIDOf(t, s, tab)
				if names := waitPageToolsAre(t, s, id, want); !reflect.DeepEqual(names, want) {
					t.Errorf("%s: tools.list has the page tools %v; the page has %v", p, names, want)
				}
				for _, c := range pageCalls[p] {
					var r toolResult
					s.must("tools.call", map[string]any{"name": c.tool, "arguments": c.args, "tab_id": id}, &r)
					if c.code == "" && (!r.Success || !strings.Contains(string(r.Result), c.has)) {
						t.Errorf("%s: %s %v = %+v %s, want a success with %s", p, c.tool, c.args, r, r.Result, c.has)
					}
					// The browser's own executeTool does not pass a thrown error's message on.
					lost := native && c.thrown
					if c.code != "" && (r.Code != c.code || (!lost && !strings.Contains(r.Reason, c.has))) {
						t.Errorf("%s: %s %v = %+v, want %s with %q", p, c.tool, c.args, r, c.code, c.has)
					}
				}
				if p == "wu" {
					if n, _ := browsertest.Eval[string](tab, `document.getElementById('count').textContent`); n != "1" {
						t.Errorf("wu: the cart shows %s items after addToCart, want 1", n)
					}
				}
				if p == "wu" && !native {
					// The same app exposing its actions through WebMCP: each offered once.
					_, tab2 := viewIn(t, s.ctx, s.browser.Ctx, srv.URL+"/webmcp/wu.html?expose")
					time.Sleep(1500 * time.Millisecond) // the app's poll and the WebMCP read settle
					names := waitPageTools(t, s, tabIDOf(t, s, tab2), 3)
					if want := []string{"addToCart", "setTheme", "wishlist.save"}; !reflect.DeepEqual(names, want) {
						t.Errorf("wu with expose(): tools.list has %v, want each action once: %v", names, want)
					}
				}
			}
		})
	}
	t.Logf("pages whose view with Ferry equals the view without: %d of %d", compared, 2*len(webmcpPages))
}

// pageCalls are calls through Ferry's pipeline into each page's tools, and what
// they must give (code empty: a success whose result has has).
var pageCalls = map[string][]struct {
	tool   string
	args   map[string]any
	code   string
	has    string
	thrown bool // the tool throws (rather than answering {content, isError})
}{
	"spec":        {{"todo.add", map[string]any{"text": "call the plumber"}, "", `"count":2`, false}, {"todo.add", map[string]any{}, "INVALID_PARAMS", "text", false}},
	"declarative": {{"book_table", map[string]any{"name": "Ada Lovelace", "guests": 2, "date": "2026-12-24", "time": "19:30", "seating": "terrace"}, "", `"booked":true`, false}},
	"polyfill":    {{"get-page-title", map[string]any{}, "", "own WebMCP polyfill", false}, {"search_catalog", map[string]any{"query": "socks"}, "", "socks", false}},
	"global":      {{"get-page-title", map[string]any{}, "", "MCP-B", false}, {"reserve-seat", map[string]any{"seat": "1A"}, "HANDLER_ERROR", "seat 1A is taken", false}},
	"usewebmcp":   {{"search", map[string]any{"query": "webmcp"}, "", `"total":6`, false}, {"delete-index", map[string]any{}, "HANDLER_ERROR", "the index is locked", true}},
	"wu":          {{"addToCart", map[string]any{"productId": "SKU-42"}, "", `"added":"SKU-42"`, false}, {"setTheme", map[string]any{"theme": "dark"}, "", `"theme":"dark"`, false}, {"wishlist:save", map[string]any{"productId": "SKU-7"}, "", `"saved":"SKU-7"`, false}},
}

// tabIDOf is the id of the tab a chromedp context shows.
func tabIDOf(t *testing.T, s *session, tab context.Context) int {
	t.Helper()
	u, err := browsertest.Eval[string](tab, `location.href`)
	if err != nil {
		t.Fatal(err)
	}
	return s.tabOf(u)
}

// waitPageTools waits until the tab's page tools number n (or 10 s pass) and returns
// their registered names, sorted.
func waitPageTools(t *testing.T, s *session, tab, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var l struct {
			Tools []struct {
				Name   string `json:"name"`
				Source string `json:"source"`
			} `json:"tools"`
			Unavailable []struct{ Name string } `json:"unavailable"`
		}
		s.must("tools.list", map[string]any{"tab_id": tab}, &l)
		names := []string{}
		for _, x := range l.Tools {
			if x.Source == "page" {
				names = append(names, x.Name)
			}
		}
		sort.Strings(names)
		if len(names) >= n || time.Now().After(deadline) {
			return names
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPageToolsAre waits until the tab's page tools are want (or 10 s pass), since a
// page that takes a tool away (bistro's form) is heard a moment later, and returns
// the last names it saw.
func waitPageToolsAre(t *testing.T, s *session, tab int, want []string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		names := waitPageTools(t, s, tab, len(want))
		if reflect.DeepEqual(names, want) || time.Now().After(deadline) {
			return names
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Fifty tools registered in a row, none awaited, twenty loads: every load lists all
// fifty, with Ferry's shim and with the browser's own WebMCP.
func TestWebMCPEveryRegistrationArrives(t *testing.T) {
	browsertest.RequireChromium(t)
	srv := webmcpServer(t)
	const loads = 20
	for _, native := range []bool{false, true} {
		t.Run(map[bool]string{false: "shim", true: "native WebMCP"}[native], func(t *testing.T) {
			var features []string
			if native {
				features = []string{"WebMCP"}
			}
			s := startWith(t, 240*time.Second, features)
			page, tab := s.openTab(srv.URL + "/webmcp/race.html?load=1")
			complete := 0
			for load := 1; load <= loads; load++ {
				if load > 1 {
					if err := chromedp.Do(page, chromedp.Navigate(fmt.Sprintf("%s/webmcp/race.html?load=%d", srv.URL, load))); err != nil {
						t.Fatal(err)
					}
				}
				prefix := fmt.Sprintf("l%d_tool_", load)
				var mine []string
				deadline := time.Now().Add(10 * time.Second)
				for {
					mine = mine[:0]
					for _, n := range waitPageTools(t, s, tab, 0) {
						if strings.HasPrefix(n, prefix) {
							mine = append(mine, n)
						}
					}
					if len(mine) == 50 || time.Now().After(deadline) {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if len(mine) == 50 {
					complete++
				} else {
					t.Errorf("load %d: %d of its 50 tools listed", load, len(mine))
				}
			}
			load, _ := os.ReadFile("/proc/loadavg")
			t.Logf("%d of %d loads listed all 50 tools (load average %s)", complete, loads, strings.TrimSpace(string(load)))
		})
	}
}

// executeTool's two contracts: Chromium 156's own (the input an object) and, played
// by a stand-in installed before any script of the page, the browsers before 155
// (the input JSON text; an object refused while it is converted). Through Ferry each
// call runs its tool exactly once, and a tool that fails is not run again.
func TestWebMCPExecuteToolContracts(t *testing.T) {
	browsertest.RequireChromium(t)
	srv := webmcpServer(t)
	older, err := os.ReadFile(filepath.Join(browsertest.RepoRoot(), "tests", "e2e", "testdata", "webmcp", "older-executetool.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		features []string
		standIn  string
	}{{"object (Chromium 156)", []string{"WebMCP"}, ""}, {"JSON text (before 155)", nil, string(older)}} {
		t.Run(c.name, func(t *testing.T) {
			s := startWith(t, 120*time.Second, c.features)
			tab, cancel := chromedp.NewContext(s.browser.Ctx)
			t.Cleanup(cancel)
			url := srv.URL + "/webmcp/contracts.html"
			if err := chromedp.Do(tab); err != nil {
				t.Fatal(err)
			}
			if c.standIn != "" {
				if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: c.standIn}); err != nil {
					t.Fatal(err)
				}
			}
			if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
				t.Fatal(err)
			}
			if err := browsertest.WaitFor(s.ctx, tab, `window.__view?.done === true`); err != nil {
				t.Fatal(err)
			}
			if c.standIn != "" {
				// Ferry must have taken the stand-in for the browser's own WebMCP.
				if ok, _ := browsertest.Eval[bool](tab, `Array.isArray(window.__olderCalls)`); !ok {
					t.Fatal("the stand-in was not installed before the page")
				}
			}
			id := tabIDOf(t, s, tab)
			if names := waitPageTools(t, s, id, 2); !reflect.DeepEqual(names, []string{"count.bump", "count.fail"}) {
				t.Fatalf("tools.list has the page tools %v", names)
			}
			runs := func() map[string]int {
				m, err := browsertest.Eval[map[string]int](tab, `window.__runs`)
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			for i := 1; i <= 3; i++ {
				var r toolResult
				s.must("tools.call", map[string]any{"name": "count.bump", "arguments": map[string]any{"by": i, "note": "call " + fmt.Sprint(i)}, "tab_id": id}, &r)
				want := fmt.Sprintf(`"got":{"by":%d,"note":"call %d"}`, i, i)
				if !r.Success || !strings.Contains(string(r.Result), want) || !strings.Contains(string(r.Result), fmt.Sprintf(`"runs":%d`, i)) {
					t.Errorf("count.bump call %d = %+v %s, want a success with %s after %d runs", i, r, r.Result, want, i)
				}
				if n := runs()["count.bump"]; n != i {
					t.Errorf("after %d calls count.bump ran %d times", i, n)
				}
			}
			var r toolResult
			s.must("tools.call", map[string]any{"name": "count.fail", "arguments": map[string]any{}, "tab_id": id}, &r)
			if r.Success || r.Code != "HANDLER_ERROR" {
				t.Errorf("count.fail = %+v, want HANDLER_ERROR", r)
			}
			if n := runs()["count.fail"]; n != 1 {
				t.Errorf("count.fail ran %d times for one call, want 1 (a tool's failure is never retried)", n)
			}
			if c.standIn != "" {
				// Each bump: the object refused, then the text; the failing tool: the object
				// refused, the text run once.
				calls, _ := browsertest.Eval[[]string](tab, `window.__olderCalls`)
				want := []string{"object", "string", "object", "string", "object", "string", "object", "string"}
				if !reflect.DeepEqual(calls, want) {
					t.Errorf("the older executeTool received %v, want %v", calls, want)
				}
			}
		})
	}
}
