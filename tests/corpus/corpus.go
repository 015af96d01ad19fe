// Package corpus is the reading benchmarks' corpus and scoring: Mozilla
// Readability's test pages (the real news, blog, wiki and forum pages that ship,
// with the article each holds, in go-readability's module as test-pages/NAME/
// source.html and expected.html), read from the Go module cache at test time, and
// bag-of-words scores of a text against an article.
package corpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Module is the module whose test pages make the corpus; its version is the one
// go.mod requires.
const Module = "codeberg.org/readeck/go-readability/v2"

// Page is one test page: its source and the article Readability extracts from it.
type Page struct {
	Name     string
	Source   []byte // source.html
	Expected []byte // expected.html
}

// Dir is the module's directory in the module cache (downloaded when missing).
func Dir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-json", Module).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %v", Module, err)
	}
	var m struct{ Version, Dir string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	if m.Dir == "" {
		out, err := exec.Command("go", "mod", "download", "-json", Module+"@"+m.Version).Output()
		if err != nil {
			return "", fmt.Errorf("go mod download %s@%s: %v", Module, m.Version, err)
		}
		if err := json.Unmarshal(out, &m); err != nil {
			return "", err
		}
	}
	return m.Dir, nil
}

// Pages reads every test page that has both a source and an expected article.
func Pages() ([]Page, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(dir, "test-pages"))
	if err != nil {
		return nil, err
	}
	var out []Page
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, "test-pages", e.Name())
		src, err1 := os.ReadFile(filepath.Join(p, "source.html"))
		exp, err2 := os.ReadFile(filepath.Join(p, "expected.html"))
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, Page{Name: e.Name(), Source: src, Expected: exp})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil, fmt.Errorf("no test pages in %s", dir)
	}
	return out, nil
}

// Text is the text an HTML fragment shows: its text nodes, scripts and styles left out.
func Text(h []byte) string { return text(h, false) }

// TextWithoutCaptions is Text without the fragment's <figcaption>s: what web_fetch
// keeps of an article, which leaves captions out as the benchmark's readers did.
func TextWithoutCaptions(h []byte) string { return text(h, true) }

func text(h []byte, noCaptions bool) string {
	z := html.NewTokenizer(bytes.NewReader(h))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
				b.WriteByte(' ')
			}
		case html.StartTagToken:
			name, _ := z.TagName()
			if a := atom.Lookup(name); a == atom.Script || a == atom.Style || noCaptions && a == atom.Figcaption {
				skip++
			} else if a == atom.Br || a == atom.P || a == atom.Div || a == atom.Li || a == atom.Td {
				b.WriteByte(' ')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if a := atom.Lookup(name); (a == atom.Script || a == atom.Style || noCaptions && a == atom.Figcaption) && skip > 0 {
				skip--
			} else {
				b.WriteByte(' ')
			}
		}
	}
}

// Words splits text into lower-case words: runs of letters, digits and marks, and
// each Han, kana or Hangul character on its own (those scripts do not separate
// words with spaces, and a renderer may break their runs anywhere).
func Words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			cur = append(cur, r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// Score compares got's words with want's as bags (a word counts as often as it
// occurs): recall is the share of want's words got holds, precision the share of
// got's words that are want's. Empty against empty scores 1.
func Score(got, want []string) (precision, recall, f1 float64) {
	if len(got) == 0 && len(want) == 0 {
		return 1, 1, 1
	}
	bag := map[string]int{}
	for _, w := range want {
		bag[w]++
	}
	common := 0
	for _, w := range got {
		if bag[w] > 0 {
			bag[w]--
			common++
		}
	}
	if common == 0 {
		return 0, 0, 0
	}
	precision = float64(common) / float64(len(got))
	recall = float64(common) / float64(len(want))
	return precision, recall, 2 * precision * recall / (precision + recall)
}

// Marks removes what get_tab_content adds to a page's words: ⟨selector⟩ marks and
// Markdown link targets, so that they neither count as content nor hide it.
func Marks(md string) string {
	var b strings.Builder
	for i := 0; i < len(md); {
		switch {
		case strings.HasPrefix(md[i:], "⟨"):
			if j := strings.Index(md[i:], "⟩"); j > 0 {
				i += j + len("⟩")
				b.WriteByte(' ')
				continue
			}
		case md[i] == ']' && i+1 < len(md) && md[i+1] == '(':
			if j := strings.IndexByte(md[i:], ')'); j > 0 && !strings.ContainsAny(md[i:i+j], " \n") {
				i += j + 1
				b.WriteByte(' ')
				continue
			}
		}
		b.WriteByte(md[i])
		i++
	}
	return b.String()
}
