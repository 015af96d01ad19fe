package corpus

// The reading benchmark: web_fetch's article (markdown.Extract), the library it
// wraps on its own (go-readability's text), and get_tab_content's main-region
// choice (markdown.ConvertCapture, run here on the page's static HTML, which is
// what the capture holds less what the browser hides) on the corpus of bench.go,
// scored with the article-extraction benchmark's metric. Run in full:
//
//	FERRY_READING_BENCH=1 go test -run TestReadingBench -count=1 -v ./tests/corpus
//
// FERRY_READING_BENCH=tune scores the tuning half instead of the held-out one
// (the pages written here are in both), FERRY_READING_ROWS=1 logs every page's scores,
// FERRY_READING_PAGE=name one page with its output. Without FERRY_READING_BENCH
// (scripts/test) a handful of held-out pages are read and must clear floors.

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/ferryhq/ferry/host/markdown"
)

type reader struct {
	name string
	read func(p BenchPage, base *url.URL) string
	// score is the text the metric sees: the output less Ferry's selector marks and
	// link targets, which are for acting on the page, not reading.
	score func(string) string
}

var readers = []reader{
	{name: "web_fetch", read: func(p BenchPage, base *url.URL) string {
		return markdown.Extract(string(p.HTML), base).Markdown
	}},
	{name: "go-readability alone", read: func(p BenchPage, base *url.URL) string {
		rp := readability.NewParser()
		a, err := rp.Parse(bytes.NewReader(p.HTML), base)
		if err != nil {
			return ""
		}
		var b strings.Builder
		a.RenderText(&b)
		return b.String()
	}},
	{name: "get_tab_content region", read: func(p BenchPage, _ *url.URL) string {
		return markdown.ConvertCapture(string(p.HTML), "").Markdown
	}, score: Marks},
}

// quickEvery picks the held-out pages scripts/test reads: every quickEvery-th in
// name order (chosen by position, not by score), beside every page written here.
const quickEvery = 10

type result struct {
	page   BenchPage
	s      Shingles
	tokens int
	dur    time.Duration
	out    string
}

func TestReadingBench(t *testing.T) {
	mode := os.Getenv("FERRY_READING_BENCH")
	pages, err := BenchPages()
	if err != nil {
		t.Fatal(err)
	}
	one := os.Getenv("FERRY_READING_PAGE")
	held := 0
	pages = slices.DeleteFunc(pages, func(p BenchPage) bool {
		switch {
		case one != "":
			return !strings.HasPrefix(p.Name, one)
		case mode == "tune":
			return p.Held
		case mode != "":
			return p.Set == "zyte" && !p.Held
		case p.Set != "zyte":
			return false
		case !p.Held:
			return true
		}
		held++
		return held%quickEvery != 1
	})
	if len(pages) == 0 {
		t.Fatal("no pages")
	}
	enc := codec.NewO200kBase()
	// The F1 and recall the quick run must clear, by reader and set: a little under
	// what the whole held-out half scores, so that a reader made worse fails.
	floors := map[string][2]float64{
		"web_fetch zyte":  {0.93, 0.97},
		"web_fetch pages": {0.80, 0.85},
		// get_tab_content's region on static HTML (the browser's capture drops
		// what the page hides besides: tests/e2e's TestReadCorpusBench reads it).
		"get_tab_content region zyte":  {0.90, 0.95},
		"get_tab_content region pages": {0.75, 0.80},
	}
	for _, rd := range readers {
		bySet := map[string][]result{}
		for _, p := range pages {
			base, _ := url.Parse(p.URL)
			if p.URL == "" {
				base, _ = url.Parse("http://127.0.0.1/" + p.Name)
			}
			t0 := time.Now()
			out := rd.read(p, base)
			d := time.Since(t0)
			scored := out
			if rd.score != nil {
				scored = rd.score(out)
			}
			n, _ := enc.Count(out)
			r := result{page: p, s: ShingleScore(p.Truth, scored), tokens: n, dur: d, out: out}
			bySet[p.Set] = append(bySet[p.Set], r)
			if os.Getenv("FERRY_READING_ROWS") != "" {
				t.Logf("row %s %s %.3f %.3f %.3f", rd.name, p.Name[:min(7, len(p.Name))], r.s.F1(), r.s.Precision(), r.s.Recall())
			}
			if one != "" {
				t.Logf("%s on %s: F1 %.3f P %.3f R %.3f\n%s", rd.name, p.Name, r.s.F1(), r.s.Precision(), r.s.Recall(), out)
			}
		}
		for _, set := range []string{"zyte", "pages"} {
			rs := bySet[set]
			if len(rs) == 0 {
				continue
			}
			var ss []Shingles
			var tok int
			var cpu time.Duration
			for _, r := range rs {
				ss = append(ss, r.s)
				tok += r.tokens
				cpu += r.dur
			}
			f1, p, rec := Summary(ss)
			t.Logf("%-24s %-5s %3d pages: F1 %.3f  precision %.3f  recall %.3f  tokens a page %5d  time a page %5.1f ms",
				rd.name, set, len(rs), f1, p, rec, tok/len(rs), float64(cpu.Microseconds())/1000/float64(len(rs)))
			sort.Slice(rs, func(i, j int) bool { return rs[i].s.F1() < rs[j].s.F1() })
			var worst []string
			for _, r := range rs[:min(6, len(rs))] {
				worst = append(worst, fmt.Sprintf("%.7s F1 %.2f (P %.2f R %.2f)", r.page.Name, r.s.F1(), r.s.Precision(), r.s.Recall()))
			}
			t.Logf("%-24s %-5s worst: %s", "", set, strings.Join(worst, "; "))
			if fl, ok := floors[rd.name+" "+set]; ok && mode == "" && one == "" && (f1 < fl[0] || rec < fl[1]) {
				t.Errorf("%s on the quick %s pages: F1 %.3f recall %.3f, below the floors %.2f and %.2f", rd.name, set, f1, rec, fl[0], fl[1])
			}
		}
	}
}
