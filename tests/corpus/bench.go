package corpus

// The held-out reading corpus: real pages nobody here tuned Ferry's readers to, with
// the article text a person marked on each, scored with the article-extraction
// benchmark's own metric (ShingleScore). data/SOURCES.md says where
// each set comes from and under what license.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"unicode"
)

// BenchPage is one page of the benchmark corpus.
type BenchPage struct {
	Set  string // "zyte" (news and blogs) or "pages" (non-article pages written here)
	Name string // the page's file name without extension
	URL  string // where the page was captured from ("" for pages written here)
	HTML []byte
	// Truth is the text a person would read there: the article body, or for a page
	// that is not an article what it is for (results, products, posts).
	Truth string
	// Held is true for the held-out half: never looked at while tuning, measured
	// only to report.
	Held bool
}

// DataDir is tests/corpus/data, found from this file's location.
func DataDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "data")
}

// HeldOut says whether a page of the Zyte set is in the held-out half: the pages
// whose name (a SHA-256 in hex) starts with 8 to f. The split is fixed by the names,
// so nothing chosen while tuning can move a page from one half to the other.
func HeldOut(name string) bool { return name != "" && name[0] >= '8' }

// BenchPages reads the Zyte set and the pages written here.
func BenchPages() ([]BenchPage, error) {
	zyte, err := zytePages()
	if err != nil {
		return nil, err
	}
	own, err := ownPages()
	if err != nil {
		return nil, err
	}
	return append(zyte, own...), nil
}

func zytePages() ([]BenchPage, error) {
	dir := filepath.Join(DataDir(), "zyte")
	b, err := os.ReadFile(filepath.Join(dir, "ground-truth.json"))
	if err != nil {
		return nil, err
	}
	var truth map[string]struct {
		ArticleBody string `json:"articleBody"`
		URL         string `json:"url"`
	}
	if err := json.Unmarshal(b, &truth); err != nil {
		return nil, fmt.Errorf("zyte ground truth: %v", err)
	}
	var out []BenchPage
	for name, t := range truth {
		src, err := gunzip(filepath.Join(dir, "html", name+".html.gz"))
		if err != nil {
			return nil, err
		}
		out = append(out, BenchPage{Set: "zyte", Name: name, URL: t.URL, HTML: src, Truth: t.ArticleBody, Held: HeldOut(name)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ownPages are data/pages/NAME.html with the text a person reads there in
// NAME.txt. They are looked at while tuning (they are few, and each names a kind of
// page a reader must serve), so none of them is held out.
func ownPages() ([]BenchPage, error) {
	dir := filepath.Join(DataDir(), "pages")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []BenchPage
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".html")
		if !ok {
			continue
		}
		src, err1 := os.ReadFile(filepath.Join(dir, e.Name()))
		want, err2 := os.ReadFile(filepath.Join(dir, name+".txt"))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("page %s: %v %v", name, err1, err2)
		}
		out = append(out, BenchPage{Set: "pages", Name: name, HTML: src, Truth: string(want)})
	}
	return out, nil
}

func gunzip(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return io.ReadAll(z)
}

// Tokens are the benchmark's tokens: runs of word characters (letters, digits,
// underscore), case kept, as its \w+ finds them.
func Tokens(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		word := r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			out = append(out, s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// Shingles is the benchmark's per-page comparison: the two texts' 4-grams of tokens
// (a text shorter than four tokens is one shingle of all of them) counted as bags,
// true positives, false positives and false negatives normalised to sum to one, so
// that a long page weighs no more than a short one.
type Shingles struct{ TP, FP, FN float64 }

// ShingleScore compares pred with the truth.
func ShingleScore(truth, pred string) Shingles {
	t, p := shingles(truth), shingles(pred)
	var s Shingles
	for k, tc := range t {
		pc := p[k]
		s.TP += float64(min(tc, pc))
		s.FN += float64(max(0, tc-pc))
	}
	for k, pc := range p {
		s.FP += float64(max(0, pc-t[k]))
	}
	if sum := s.TP + s.FP + s.FN; sum > 0 {
		s.TP, s.FP, s.FN = s.TP/sum, s.FP/sum, s.FN/sum
	}
	return s
}

func shingles(text string) map[string]int {
	toks := Tokens(text)
	m := map[string]int{}
	if len(toks) == 0 {
		return m
	}
	for i := 0; i < max(1, len(toks)-3); i++ {
		m[strings.Join(toks[i:min(i+4, len(toks))], "\x00")]++
	}
	return m
}

// Precision and Recall of one page, as the benchmark defines them.
func (s Shingles) Precision() float64 {
	if s.FP == 0 && s.FN == 0 {
		return 1
	}
	if s.TP == 0 && s.FP == 0 {
		return 0
	}
	return s.TP / (s.TP + s.FP)
}

func (s Shingles) Recall() float64 {
	if s.FP == 0 && s.FN == 0 {
		return 1
	}
	if s.TP == 0 && s.FN == 0 {
		return 0
	}
	return s.TP / (s.TP + s.FN)
}

func (s Shingles) F1() float64 {
	p, r := s.Precision(), s.Recall()
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

// Summary is the benchmark's figure over pages: precision is the mean of the pages'
// precisions (over pages that predicted something), recall the mean of their
// recalls (over pages with a truth), F1 their harmonic mean.
func Summary(pages []Shingles) (f1, precision, recall float64) {
	var np, nr int
	for _, s := range pages {
		if s.TP+s.FP > 0 {
			precision += s.Precision()
			np++
		}
		if s.TP+s.FN > 0 {
			recall += s.Recall()
			nr++
		}
	}
	if np > 0 {
		precision /= float64(np)
	}
	if nr > 0 {
		recall /= float64(nr)
	}
	if precision+recall > 0 {
		f1 = 2 * precision * recall / (precision + recall)
	}
	return f1, precision, recall
}
