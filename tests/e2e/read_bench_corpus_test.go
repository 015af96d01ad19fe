//go:build browserbench

package e2e

// get_tab_content on the held-out half of the reading corpus (tests/corpus/data:
// real news and blog pages nobody tuned Ferry to, and the non-article pages
// written there), in the real Chromium from loopback, scored with the
// article-extraction benchmark's metric on the content less its selector marks
// and link targets, beside web_fetch on the same pages served the same way.
// Run:
//
//	go test -tags browserbench -run TestReadHeldOutBench -count=1 -v ./tests/e2e
//
// FERRY_READING_BENCH=tune reads the tuning half instead, FERRY_READING_LIMIT=n
// only the first n pages, FERRY_READING_PAGE=name one page (of either half) with
// its content.

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/ferryhq/ferry/tests/corpus"
)

func TestReadHeldOutBench(t *testing.T) {
	all, err := corpus.BenchPages()
	if err != nil {
		t.Fatal(err)
	}
	tune := os.Getenv("FERRY_READING_BENCH") == "tune"
	var bench []corpus.BenchPage
	var pages []corpus.Page
	for _, p := range all {
		if one := os.Getenv("FERRY_READING_PAGE"); one != "" && !strings.HasPrefix(p.Name, one) || one == "" && p.Set == "zyte" && p.Held == tune {
			continue
		}
		if lim, _ := strconv.Atoi(os.Getenv("FERRY_READING_LIMIT")); lim > 0 && len(bench) >= lim {
			break
		}
		bench = append(bench, p)
		pages = append(pages, corpus.Page{Name: p.Name, Source: p.HTML})
	}
	s := start(t, 30*time.Minute)
	srv := corpusServer(t, pages)
	if out, err := ferry(t, s.home, "config", "set", "browser.allow_navigate", "true"); err != nil {
		t.Fatal(out)
	}
	if out, err := ferry(t, s.home, "config", "set", "fetch.allow_private_hosts", "127.0.0.1"); err != nil {
		t.Fatal(out)
	}
	time.Sleep(1100 * time.Millisecond) // the pipeline's settings refresh
	call := func(name string, args map[string]any) (map[string]any, string, error) {
		var r struct {
			Success bool            `json:"success"`
			Code    string          `json:"code"`
			Reason  string          `json:"reason"`
			Result  json.RawMessage `json:"result"`
		}
		out := s.request("tools.call", map[string]any{"name": name, "arguments": args})
		if !out.OK {
			return nil, "", fmt.Errorf("%s: %s", out.Reason, out.Message)
		}
		json.Unmarshal(out.Result, &r)
		if !r.Success {
			return nil, "", fmt.Errorf("%s: %s", r.Code, r.Reason)
		}
		var m map[string]any
		json.Unmarshal(r.Result, &m)
		return m, string(r.Result), nil
	}
	newTab := func() any {
		o, _, err := call("open_tab", map[string]any{"url": "about:blank"})
		if err != nil {
			t.Fatal(err)
		}
		return o["tab_id"]
	}
	tab := newTab()
	enc := codec.NewO200kBase()
	type row struct {
		name   string
		s      corpus.Shingles
		tokens int
		ms     float64
	}
	rows := map[string]map[string][]row{} // tool -> set -> rows
	add := func(tool, set string, r row) {
		if rows[tool] == nil {
			rows[tool] = map[string][]row{}
		}
		rows[tool][set] = append(rows[tool][set], r)
	}
	for _, p := range bench {
		url := srv.URL + "/" + p.Name + "/"
		// get_tab_content, as the agent calls it: the page's main content.
		_, _, err := call("open_tab", map[string]any{"url": url, "tab_id": tab})
		var res map[string]any
		var raw string
		t0 := time.Now()
		if err == nil {
			res, raw, err = call("get_tab_content", map[string]any{"tab_id": tab, "max_length": 1_000_000})
		}
		d := time.Since(t0)
		if err != nil {
			t.Logf("%.7s get_tab_content FAILED: %v", p.Name, err)
			// Nothing read: recall 0 on this page.
			add("get_tab_content", p.Set, row{name: p.Name, s: corpus.ShingleScore(p.Truth, "")})
			call("close_tab", map[string]any{"tab_id": tab})
			tab = newTab()
		} else {
			content, _ := res["content"].(string)
			n, _ := enc.Count(raw)
			if os.Getenv("FERRY_READING_PAGE") != "" {
				t.Logf("get_tab_content of %s (used %v):\n%s", p.Name, res["used_selector"], content)
			}
			add("get_tab_content", p.Set, row{name: p.Name, s: corpus.ShingleScore(p.Truth, corpus.Marks(content)), tokens: n, ms: float64(d.Microseconds()) / 1000})
		}
		// web_fetch of the same page from the same server.
		t0 = time.Now()
		res, raw, err = call("web_fetch", map[string]any{"url": url, "max_length": 1_000_000})
		d = time.Since(t0)
		if err != nil {
			t.Logf("%.7s web_fetch FAILED: %v", p.Name, err)
			add("web_fetch", p.Set, row{name: p.Name, s: corpus.ShingleScore(p.Truth, "")})
			continue
		}
		content, _ := res["content"].(string)
		n, _ := enc.Count(raw)
		add("web_fetch", p.Set, row{name: p.Name, s: corpus.ShingleScore(p.Truth, content), tokens: n, ms: float64(d.Microseconds()) / 1000})
	}
	for _, tool := range []string{"web_fetch", "get_tab_content"} {
		for _, set := range []string{"zyte", "pages"} {
			rs := rows[tool][set]
			if len(rs) == 0 {
				continue
			}
			var ss []corpus.Shingles
			tok := 0
			var ms []float64
			for _, r := range rs {
				ss = append(ss, r.s)
				tok += r.tokens
				ms = append(ms, r.ms)
			}
			f1, prec, rec := corpus.Summary(ss)
			t.Logf("%-16s %-5s %3d pages: F1 %.3f  precision %.3f  recall %.3f  tokens a page %5d (o200k, the whole result)  call median %.0f ms",
				tool, set, len(rs), f1, prec, rec, tok/len(rs), medianOf(ms))
			sort.Slice(rs, func(i, j int) bool { return rs[i].s.F1() < rs[j].s.F1() })
			var worst []string
			for _, r := range rs[:min(8, len(rs))] {
				worst = append(worst, fmt.Sprintf("%.7s %.2f (P %.2f R %.2f)", r.name, r.s.F1(), r.s.Precision(), r.s.Recall()))
			}
			t.Logf("%-16s %-5s worst: %s", "", set, strings.Join(worst, "; "))
		}
	}
	t.Logf("load %s", loadAvg())
}
