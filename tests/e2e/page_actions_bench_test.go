//go:build browserbench

package e2e

// Page actions in Chromium, timed. Targets (medians): host's page.action.run → the
// handler starting ≤ 20 ms; the handler's end → the host holding the result ≤ 20 ms;
// a DOM change → the expectation passing ≤ 50 ms; a snapshot of a page with 1,000
// records and 200 actions ≤ 30 ms. Run:
//
//	go test -tags browserbench -run TestPageActionsBench -count=1 -v ./tests/e2e
//
// FERRY_BENCH_RUNS changes the number of timed calls (default 25).

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ferryhq/ferry/tests/browsertest"
)

const benchPage = `<!doctype html><title>bench</title><ul id="list"></ul><div id="out"></div>
<script>
  const rows = Array.from({length: 1000}, (_, i) => ({id: 'r' + i, text: 'Row number ' + i, done: i % 3 === 0}));
  const list = document.getElementById('list');
  list.innerHTML = rows.slice(0, 50).map(r => '<li>' + r.text + '</li>').join('');
  ferry.records('rows', () => rows);
  for (let i = 0; i < 199; i++) ferry.action('act_' + i, {desc: 'Action ' + i, kind: i % 2 ? 'write' : 'read', params: [{name: 'x', optional: true}], available: () => i % 10 ? true : 'not now'});
  const counter = {type: 'object', properties: {i: {type: 'integer'}}};
  ferry.action('noop', {desc: 'Does nothing', kind: 'read', parameters: counter, run: () => ({ok: 1})});
  window.__dom = [];
  let marker = 0;
  ferry.action('dom', {
    desc: 'Changes the DOM a little later',
    kind: 'write',
    parameters: counter,
    run: () => { const n = ++marker; setTimeout(() => { const p = document.createElement('p'); p.id = 'm' + n; document.getElementById('out').append(p); window.__changedAt = performance.now(); }, 5); return n; },
    expect: {desc: 'the marker is there', check: (args, n) => { const ok = Boolean(document.getElementById('m' + n)); if (ok && window.__changedAt) { window.__dom.push(performance.now() - window.__changedAt); window.__changedAt = 0; } return ok; }},
  });
</script>`

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func TestPageActionsBench(t *testing.T) {
	runs := 25
	if v, err := strconv.Atoi(os.Getenv("FERRY_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	s := start(t, 180*time.Second)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, benchPage)
	})}}
	srv.Start()
	defer srv.Close()
	url := srv.URL + "/bench"
	page, tab := s.openTab(url)
	if err := waitUntil(15*time.Second, func() bool {
		var l toolsList
		s.must("tools.list", map[string]any{"tab_id": tab}, &l)
		n := 0
		for _, tool := range l.Tools {
			if tool.Source == "page" && (tool.Name == "noop" || tool.Name == "dom") {
				n++
			}
		}
		return n == 2
	}); err != nil {
		t.Fatal("the bench page's actions never registered")
	}

	type timing struct {
		CallToHandler   float64 `json:"call_to_handler_ms"`
		Handler         float64 `json:"handler_ms"`
		HandlerToResult float64 `json:"handler_to_result_ms"`
	}
	var toHandler, toResult, total []float64
	for i := 0; i < runs+2; i++ {
		var r struct {
			Success bool
			Code    string
			Reason  string
			Changed struct {
				Timing *timing `json:"timing"`
			} `json:"changed"`
		}
		t0 := time.Now()
		s.must("tools.call", map[string]any{"name": "noop", "arguments": map[string]any{"i": i}, "tab_id": tab}, &r)
		el := float64(time.Since(t0).Microseconds()) / 1000
		if !r.Success || r.Changed.Timing == nil {
			t.Fatalf("noop: %+v", r)
		}
		if i < 2 {
			continue // warm-up
		}
		toHandler = append(toHandler, r.Changed.Timing.CallToHandler)
		toResult = append(toResult, r.Changed.Timing.HandlerToResult)
		total = append(total, el)
	}
	for i := 0; i < runs; i++ {
		var r struct{ Success bool }
		s.must("tools.call", map[string]any{"name": "dom", "arguments": map[string]any{"i": i}, "tab_id": tab}, &r)
		if !r.Success {
			t.Fatalf("dom: %+v", r)
		}
	}
	raw, err := browsertest.Eval[string](page, `JSON.stringify(window.__dom)`)
	if err != nil {
		t.Fatal(err)
	}
	var dom []float64
	json.Unmarshal([]byte(raw), &dom)
	raw, err = browsertest.Eval[string](page, `(() => { const t = []; for (let i = 0; i < 30; i++) { const a = performance.now(); const s = ferry.snapshot(); t.push(performance.now() - a); if (s.actions.length !== 201 || s.records.rows.total !== 1000) throw new Error('bad snapshot'); } return JSON.stringify(t.slice(3)); })()`)
	if err != nil {
		t.Fatal(err)
	}
	var snap []float64
	json.Unmarshal([]byte(raw), &snap)

	report := []struct {
		what   string
		v      []float64
		target float64
	}{
		{"host's page.action.run → handler start", toHandler, 20},
		{"handler end → result in the host", toResult, 20},
		{"DOM change → expect passing", dom, 50},
		{"snapshot, 1,000 records + 201 actions", snap, 30},
		{"whole tools.call from the service worker's host client (for reference)", total, 0},
	}
	for _, r := range report {
		m := median(r.v)
		t.Logf("%-72s median %7.2f ms  (min %.2f, max %.2f, n=%d)%s", r.what, m, slices.Min(r.v), slices.Max(r.v), len(r.v),
			map[bool]string{true: "", false: fmt.Sprintf("  target ≤ %.0f ms", r.target)}[r.target == 0])
		if r.target > 0 && m > r.target {
			t.Errorf("%s: median %.2f ms over the %.0f ms target", r.what, m, r.target)
		}
	}
}
