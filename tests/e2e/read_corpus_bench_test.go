//go:build browserbench

package e2e

// get_tab_content on Mozilla Readability's test pages (tests/corpus: real news,
// blog, wiki and forum pages with the article each holds, from go-readability's
// module), loaded one after another in one tab of the real Chromium from loopback:
// the share of the article's words the content keeps, and what reading costs
// (tokens of the result as the model receives it, o200k_base through js-tiktoken
// and the host's own estimate of bytes/4; the call's time). Run:
//
//	go test -tags browserbench -run TestReadCorpusBench -count=1 -v ./tests/e2e
//
// FERRY_CORPUS_PAGE=name reads one page and prints its content.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/tests/corpus"
)

// corpusServer serves each page's source at /NAME/ under a policy that keeps every
// load on loopback (the pages name images, scripts and fonts of their real sites).
func corpusServer(t *testing.T, pages []corpus.Page) *httptest.Server {
	t.Helper()
	byName := map[string][]byte{}
	for _, p := range pages {
		byName[p.Name] = p.Source
	}
	return loopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src, ok := byName[strings.Trim(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self' 'unsafe-inline' data:")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(src)
	}))
}

func TestReadCorpusBench(t *testing.T) {
	pages, err := corpus.Pages()
	if err != nil {
		t.Skip("corpus:", err)
	}
	if one := os.Getenv("FERRY_CORPUS_PAGE"); one != "" {
		pages = slices.DeleteFunc(pages, func(p corpus.Page) bool { return p.Name != one })
	}
	s := start(t, 20*time.Minute)
	srv := corpusServer(t, pages)
	// Pages are read one after another in one tab: navigating a tab that is open
	// already is off until a person allows it (the one setting off its default).
	if out, err := ferry(t, s.home, "config", "set", "browser.allow_navigate", "true"); err != nil {
		t.Fatal(out)
	}
	time.Sleep(1100 * time.Millisecond) // the pipeline's settings refresh
	call := func(name string, args map[string]any) (map[string]any, json.RawMessage, time.Duration, error) {
		t.Helper()
		var r struct {
			Success bool            `json:"success"`
			Code    string          `json:"code"`
			Reason  string          `json:"reason"`
			Result  json.RawMessage `json:"result"`
		}
		t0 := time.Now()
		out := s.request("tools.call", map[string]any{"name": name, "arguments": args})
		d := time.Since(t0)
		if !out.OK {
			return nil, nil, d, fmt.Errorf("%s: %s", out.Reason, out.Message)
		}
		json.Unmarshal(out.Result, &r)
		if !r.Success {
			return nil, nil, d, fmt.Errorf("%s: %s", r.Code, r.Reason)
		}
		var m map[string]any
		json.Unmarshal(r.Result, &m)
		return m, r.Result, d, nil
	}
	newTab := func() any {
		o, _, _, err := call("open_tab", map[string]any{"url": "about:blank"})
		if err != nil {
			t.Fatal(err)
		}
		return o["tab_id"]
	}
	tab := newTab()

	type row struct {
		name         string
		recall, prec float64
		bytes        int
		ms           float64
		sel          string
		result       string
		err          error
	}
	var rows []row
	for _, p := range pages {
		_, _, _, err := call("open_tab", map[string]any{"url": srv.URL + "/" + p.Name + "/", "tab_id": tab})
		var res map[string]any
		var raw json.RawMessage
		var d time.Duration
		if err == nil {
			res, raw, d, err = call("get_tab_content", map[string]any{"tab_id": tab, "max_length": 1_000_000})
		}
		if err != nil {
			// A page left blocked (a dialog, say) is scored as nothing read; the next
			// page gets a fresh tab.
			rows = append(rows, row{name: p.Name, err: err})
			call("close_tab", map[string]any{"tab_id": tab})
			tab = newTab()
			continue
		}
		content, _ := res["content"].(string)
		want := corpus.Words(corpus.Text(p.Expected))
		prec, rec, _ := corpus.Score(corpus.Words(corpus.Marks(content)), want)
		sel, _ := res["used_selector"].(string)
		rows = append(rows, row{name: p.Name, recall: rec, prec: prec, bytes: len(raw), ms: float64(d.Microseconds()) / 1000, sel: sel, result: string(raw)})
		if len(pages) == 1 {
			t.Logf("%s", content)
		}
	}
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = r.result
	}
	o200k, terr := corpus.O200k(texts)
	var sumRec, sumPrec float64
	var under []string
	var totalTok, totalEst int
	var ms []float64
	for i, r := range rows {
		sumRec += r.recall
		sumPrec += r.prec
		if r.recall < 0.9 || r.err != nil {
			under = append(under, fmt.Sprintf("%s %.2f", r.name, r.recall))
		}
		est := (r.bytes + 3) / 4
		totalEst += est
		tok := 0
		if terr == nil {
			tok = o200k[i]
			totalTok += tok
		}
		if r.err != nil {
			t.Logf("%-44s FAILED: %v", r.name, r.err)
			continue
		}
		ms = append(ms, r.ms)
		t.Logf("%-44s recall %.3f precision %.3f  %6d tokens (o200k) %6d (bytes/4) %6.0f ms  used %s", r.name, r.recall, r.prec, tok, est, r.ms, r.sel)
	}
	if terr != nil {
		t.Logf("o200k tokens not counted: %v", terr)
	}
	n := float64(len(rows))
	t.Logf("get_tab_content over %d pages: article words kept (recall) mean %.4f, precision mean %.3f; pages under 0.9: %d %v",
		len(rows), sumRec/n, sumPrec/n, len(under), under)
	t.Logf("tokens to read all pages: %d (o200k_base), %d (bytes/4); call time median %.0f ms; load %s",
		totalTok, totalEst, medianOf(ms), loadAvg())
}
