package web

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/tests/corpus"
)

// web_fetch on Mozilla Readability's test pages (tests/corpus: real news, blog,
// wiki and forum pages, each with the article Readability.js extracts from it, as
// go-readability's module ships them), each served from loopback and fetched
// through the whole tool: the content's words scored against the article's, less
// its figure captions, which web_fetch leaves out (extract.go's trimEdges). Target:
// mean F1 at least 0.99. FERRY_CORPUS_VERBOSE=1 (with -v) prints every page.
func TestWebFetchCorpus(t *testing.T) {
	pages, err := corpus.Pages()
	if err != nil {
		t.Skip("corpus:", err)
	}
	if raceEnabled {
		// Every fifth page: the whole corpus under the race detector takes minutes.
		var some []corpus.Page
		for i := 0; i < len(pages); i += 5 {
			some = append(some, pages[i])
		}
		pages = some
	}
	byName := map[string][]byte{}
	for _, p := range pages {
		byName[p.Name] = p.Source
	}
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(byName[r.URL.Path[1:]])
	})
	d := allowLoopback()
	var sumF1, sumRec float64
	var worst []string
	start := time.Now()
	for _, p := range pages {
		res := mustOK(t, d, map[string]any{"url": s.URL + "/" + p.Name, "max_length": 10_000_000})
		prec, rec, f1 := corpus.Score(corpus.Words(res.Content), corpus.Words(corpus.TextWithoutCaptions(p.Expected)))
		sumF1 += f1
		sumRec += rec
		if f1 < 0.95 {
			worst = append(worst, p.Name)
		}
		if testing.Verbose() && envSet("FERRY_CORPUS_VERBOSE") {
			t.Logf("%-44s F1 %.3f precision %.3f recall %.3f whole %v", p.Name, f1, prec, rec, res.Title == "")
		}
	}
	n := float64(len(pages))
	t.Logf("web_fetch over %d pages: mean F1 %.4f, mean recall %.4f; under 0.95: %v; %s in all; load %s",
		len(pages), sumF1/n, sumRec/n, worst, time.Since(start).Round(time.Millisecond), loadAvg())
	if sumF1/n < 0.99 {
		t.Errorf("mean F1 %.4f is under 0.99", sumF1/n)
	}
}

func envSet(k string) bool { return os.Getenv(k) != "" }

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
