package e2e

// Reading real pages through the whole chain: a page of 2,000 controls read in
// full through browser_snapshot's paging, and the loop guard, which stops the
// same call giving the same result again and again and lets progress through,
// counted per outside client session (two `ferry mcp` processes).

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/control"
)

// readingServer serves /controls?n=N (a form of N labelled controls of every
// kind) and /counter (a page whose button moves a counter on).
func readingServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/controls", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Query().Get("n"), "%d", &n)
		var b strings.Builder
		b.WriteString("<!doctype html><title>controls</title><main><h1>Order form</h1><form>")
		for i := 0; i < n; i++ {
			switch i % 4 {
			case 0:
				fmt.Fprintf(&b, `<label>Field %d <input name="f%d"></label>`, i, i)
			case 1:
				fmt.Fprintf(&b, `<label><input type="checkbox" name="f%d"> Option %d</label>`, i, i)
			case 2:
				fmt.Fprintf(&b, `<button type="button" id="b%d">Button %d</button>`, i, i)
			case 3:
				fmt.Fprintf(&b, `<a href="#l%d">Link %d</a>`, i, i)
			}
		}
		b.WriteString("</form></main>")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, b.String())
	})
	mux.HandleFunc("/counter", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>counter</title><main><h1>Queue</h1><p id="n">Item 0</p><button id="next" onclick="const p = document.getElementById('n'); p.textContent = 'Item ' + (Number(p.textContent.slice(5)) + 1)">Next</button></main>`)
	})
	return loopbackServer(t, mux)
}

// waitControl waits until the browser's host listens on its control socket, where
// `ferry mcp` finds it.
func (s *session) waitControl() {
	s.t.Helper()
	hi := s.info()
	if err := waitUntil(10*time.Second, func() bool {
		hosts, _ := control.List(s.home)
		return len(hosts) > 0 && hosts[0].PID == hi.PID
	}); err != nil {
		s.t.Fatalf("the host (pid %d) never listed its control socket", hi.PID)
	}
}

var refLine = regexp.MustCompile(`(?m)^\s*- (textbox|checkbox|button|link) "(Field|Option|Button|Link) (\d+)"`)

func TestSnapshotPaging(t *testing.T) {
	s := start(t, 2*time.Minute)
	srv := readingServer(t)
	const n = 2000
	tab := s.toolOK("open_tab", map[string]any{"url": fmt.Sprintf("%s/controls?n=%d", srv.URL, n)})["tab_id"]

	seen := map[string]bool{}
	offset := 0.0
	pages := 0
	for {
		r := s.toolOK("browser_snapshot", map[string]any{"tab_id": tab, "offset": offset})
		pages++
		for _, m := range refLine.FindAllStringSubmatch(r["tree"].(string), -1) {
			seen[m[3]] = true
		}
		if r["truncated"] != true {
			if r["next_offset"] != nil {
				t.Errorf("the last page names a next offset: %v", r["next_offset"])
			}
			break
		}
		// What is left out is said, and where to go on.
		note, _ := r["note"].(string)
		total, _ := r["total"].(float64)
		next, _ := r["next_offset"].(float64)
		if total < n || next <= offset || !strings.Contains(note, fmt.Sprintf("%d more elements", int(total-next))) || !strings.Contains(note, "offset") {
			t.Fatalf("a page of the snapshot: total %v, next %v, note %q", r["total"], r["next_offset"], note)
		}
		offset = next
		if pages > 10 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != n {
		t.Fatalf("read %d of the %d controls over %d pages", len(seen), n, pages)
	}
	if pages < 4 {
		t.Errorf("%d pages for %d controls at 600 a page", pages, n)
	}

	// A ref from a later page acts like any other.
	r := s.toolOK("browser_snapshot", map[string]any{"tab_id": tab, "offset": 1950, "max_nodes": 100})
	m := regexp.MustCompile(`button "Button 1998" \[ref=(e\d+)\]`).FindStringSubmatch(r["tree"].(string))
	if m == nil {
		t.Fatalf("no Button 1998 on the last page:\n%s", r["tree"])
	}
	if c := s.toolOK("browser_click", map[string]any{"tab_id": tab, "ref": m[1]}); c["clicked"] != true {
		t.Errorf("click on a ref of a later page: %v", c)
	}

	// A region: only what it holds.
	r = s.toolOK("browser_snapshot", map[string]any{"tab_id": tab, "selector": "form", "max_nodes": 5000})
	if got := len(refLine.FindAllString(r["tree"].(string), -1)); got != n || r["truncated"] != false {
		t.Errorf("the form's region: %d controls, truncated %v", got, r["truncated"])
	}
	if strings.Contains(r["tree"].(string), "Order form") {
		t.Error("the region's snapshot holds the heading outside it")
	}
}

func TestLoopGuardKnowsProgress(t *testing.T) {
	s := start(t, 2*time.Minute)
	srv := readingServer(t)
	s.waitControl()
	tab := s.toolOK("open_tab", map[string]any{"url": srv.URL + "/counter"})["tab_id"]
	a, b := startMCP(t, s.ctx, s.home), startMCP(t, s.ctx, s.home)
	read := func(m *mcpClient) toolResult {
		res, _ := m.call("get_tab_content", map[string]any{"tab_id": tab})
		return res
	}

	// Progress: reading after each click gives a new page every time.
	for i := 0; i < 12; i++ {
		if res := read(a); !res.Success {
			t.Fatalf("read %d after a click: %+v", i, res)
		}
		if res, _ := a.call("browser_click", map[string]any{"tab_id": tab, "selector": "#next"}); !res.Success {
			t.Fatalf("click %d: %+v", i, res)
		}
	}

	// A repeat: the same read of an unchanged page, again and again.
	var stopped toolResult
	for i := 0; i < 10 && stopped.Code == ""; i++ {
		if res := read(a); !res.Success {
			stopped = res
		}
	}
	if stopped.Code != "LOOP_DETECTED" || !strings.Contains(stopped.Reason, "same result 5 times") || !strings.Contains(stopped.Reason, "this client session") ||
		!strings.Contains(stopped.Reason, "ferry config set tools.loop.repeat_limit") {
		t.Fatalf("the repeat was not stopped as a loop: %+v", stopped)
	}
	// Another session is not this one's loop.
	if res := read(b); !res.Success {
		t.Errorf("a second ferry mcp is stopped by the first one's loop: %+v", res)
	}
	// Progress again lets the first through.
	a.call("browser_click", map[string]any{"tab_id": tab, "selector": "#next"})
	if res := read(a); !res.Success {
		t.Errorf("after the page moved on: %+v", res)
	}
}
