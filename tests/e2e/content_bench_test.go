//go:build browserbench

package e2e

// get_tab_content on a page with a 2 MB DOM, end to end: ferryHost.request
// ('tools.call') in the service worker → host → browser.page.capture in the page →
// the capture back to the host → Markdown → the result back to the worker. Target:
// at most 300 ms at the median. Run:
//
//	go test -tags browserbench -run TestGetTabContentBench -count=1 -v ./tests/e2e
//
// FERRY_BENCH_RUNS changes the number of timed calls (default 7).

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/tests/browsertest"
)

const contentTargetMS = 300.0

func TestGetTabContentBench(t *testing.T) {
	runs := 7
	if n, err := strconv.Atoi(os.Getenv("FERRY_BENCH_RUNS")); err == nil && n > 0 {
		runs = n
	}
	s := start(t, 3*time.Minute)
	srv := fixtureServer(t)
	var o struct {
		Success bool `json:"success"`
		Result  struct {
			TabID int `json:"tab_id"`
		} `json:"result"`
	}
	s.must("tools.call", map[string]any{"name": "open_tab", "arguments": map[string]any{"url": srv.URL + "/big?kb=2048"}}, &o)
	if !o.Success {
		t.Fatalf("open_tab: %+v", o)
	}
	// The DOM's size as the page holds it.
	domBytes, err := browsertest.Eval[int](s.sw, fmt.Sprintf(`chrome.scripting.executeScript({target: {tabId: %d},
		func: () => document.documentElement.outerHTML.length}).then(r => r[0].result)`, o.Result.TabID))
	if err != nil {
		t.Fatal(err)
	}
	type timed struct {
		MS      float64 `json:"ms"`
		OK      bool    `json:"ok"`
		Success bool    `json:"success"`
		Length  int     `json:"length"`
		Error   string  `json:"error"`
	}
	// max_length differs from call to call: the loop guard stops a caller that
	// repeats the same arguments. FERRY_BENCH_FULL=1 returns the whole Markdown
	// (about 1.7 MB) instead of the default max_length's 100,000 characters.
	maxLen := 100_000
	if os.Getenv("FERRY_BENCH_FULL") == "1" {
		maxLen = 10_000_000
	}
	call := func(i int) string {
		args, _ := json.Marshal(map[string]any{"name": "get_tab_content", "arguments": map[string]any{"tab_id": o.Result.TabID, "max_length": maxLen + i}})
		return `(async () => {
		const t0 = performance.now();
		try {
			const r = await ferryHost.request('tools.call', ` + string(args) + `);
			return {ms: performance.now() - t0, ok: true, success: r.success, length: (r.result?.content ?? '').length, error: r.reason ?? ''};
		} catch (e) { return {ms: performance.now() - t0, ok: false, error: String(e?.message ?? e)}; }
	})()`
	}
	var ms []float64
	var length int
	for i := 0; i <= runs; i++ { // the first call warms the content script and the host up
		r, err := browsertest.Eval[timed](s.sw, call(i))
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK || !r.Success {
			t.Fatalf("get_tab_content: %+v", r)
		}
		length = r.Length
		if i > 0 {
			ms = append(ms, r.MS)
		}
	}
	// Where the time goes: the capture alone, called as the worker calls it (in
	// an extension page that imports the same modules), and its walk in the page.
	page, cancel := chromedp.NewContext(s.browser.Ctx)
	defer cancel()
	if err := chromedp.Do(page, chromedp.Navigate("chrome-extension://"+buildinfo.ExtensionID+"/options/options.html")); err != nil {
		t.Fatal(err)
	}
	type capTimed struct {
		MS        float64 `json:"ms"`
		CaptureMS float64 `json:"capture_ms"`
		HTML      int     `json:"html"`
	}
	var capMS, walkMS []float64
	var htmlLen int
	for i := 0; i <= 3; i++ {
		c, err := browsertest.Eval[capTimed](page, fmt.Sprintf(`(async () => {
			const [m, api] = await Promise.all([import('/background/browser/index.js'), import('/lib/chrome-api.js')]);
			const methods = m.createBrowserMethods(api);
			const t0 = performance.now();
			const r = await methods['browser.page.capture']({tab_id: %d});
			return {ms: performance.now() - t0, capture_ms: r.capture_ms, html: r.html.length};
		})()`, o.Result.TabID))
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			capMS, walkMS, htmlLen = append(capMS, c.MS), append(walkMS, c.CaptureMS), c.HTML
		}
	}
	var audit struct {
		Entries []struct {
			Tool       string `json:"tool"`
			DurationNS int64  `json:"duration_ns"`
		} `json:"entries"`
	}
	s.must("audit.query", map[string]any{"tool": "get_tab_content"}, &audit)
	var hostMS []float64
	for _, e := range audit.Entries {
		hostMS = append(hostMS, float64(e.DurationNS)/1e6)
	}
	t.Logf("the tool's run in the host (audit duration, capture included): median %.0f ms", medianOf(hostMS))
	t.Logf("of which: browser.page.capture %.0f ms (the walk in the page %.0f ms), %d chars of simplified HTML",
		medianOf(capMS), medianOf(walkMS), htmlLen)
	slices.Sort(ms)
	med := ms[len(ms)/2]
	if len(ms)%2 == 0 {
		med = (ms[len(ms)/2-1] + ms[len(ms)/2]) / 2
	}
	t.Logf("get_tab_content, %.2f MB DOM → %d chars of Markdown: median %.0f ms over %d runs (min %.0f, max %.0f); target ≤ %.0f ms; load %s",
		float64(domBytes)/1e6, length, med, len(ms), ms[0], ms[len(ms)-1], contentTargetMS, loadAvg())
	if med > contentTargetMS {
		t.Errorf("median %.0f ms is above the %.0f ms target", med, contentTargetMS)
	}
}

func medianOf(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return string(b[:min(len(b), 14)])
}
