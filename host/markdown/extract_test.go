package markdown

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite testdata/*.md from the extractor's output")

// Golden pages through go-readability and the Markdown writer: a news article
// (<article> among navigation, sidebar, ads, share bar, comments and footers; the
// byline and the heading that repeats the title go to their own fields), a Sphinx
// docs page without <main> or <article> (a table, code, nested lists), a short
// Chinese page with <main> (under Readability's 500 characters, so its retry without
// the clutter filters keeps the sidebar).
func TestExtractGolden(t *testing.T) {
	pages, _ := filepath.Glob("testdata/*.html")
	if len(pages) == 0 {
		t.Fatal("no golden pages")
	}
	for _, page := range pages {
		name := strings.TrimSuffix(filepath.Base(page), ".html")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			doc := Extract(string(src), nil)
			got := "title: " + doc.Title + "\n\n" + doc.Markdown + "\n"
			golden := strings.TrimSuffix(page, ".html") + ".md"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the extraction:\n--- got ---\n%s\n--- want ---\n%s", golden, got, want)
			}
		})
	}
}

func TestExtractCases(t *testing.T) {
	for _, tc := range []struct{ name, html, want string }{
		{"empty", "", ""},
		{"text only", "just text", "just text"},
		{"whitespace", "<p>  a \n\t b&nbsp;&nbsp;c\u3000d </p>", "a b c d"},
		{"br", "<p>line one<br>line two<br/><br>three</p>", "line one\nline two\n\nthree"},
		{"headings", "<h1>A</h1><h2>B</h2><h6>F</h6><p>x</p>", "# A\n\n## B\n\n###### F\n\nx"},
		{"ordered start", `<ol start="3"><li>c</li><li>d</li></ol>`, "3. c\n4. d"},
		{"nested lists", "<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul><p>after</p>", "- a\n  - b\n- c\n\nafter"},
		{"implied ends", "<ul><li>one<li>two</ul><p>p1<p>p2", "- one\n- two\n\np1\n\np2"},
		{"blockquote", "<blockquote><p>q1</p><p>q2</p></blockquote>", "> q1\n>\n> q2"},
		{"pre keeps spaces", "<pre>a  b\n  c</pre>", "```\na  b\n  c\n```"},
		{"pre with fence", "<pre>```\nx\n```</pre>", "````\n```\nx\n```\n````"},
		{"inline code", "<p>run <code>go  test</code> now</p>", "run `go test` now"},
		{"table with colspan and pipe", "<table><tr><th>a</th><th>b</th><th>c</th></tr><tr><td colspan=2>x|y</td><td>z</td></tr></table>",
			"| a | b | c |\n| --- | --- | --- |\n| x\\|y |  | z |"},
		{"layout table", "<table><tr><td><p>only cell</p></td></tr></table>", "only cell"},
		{"hidden", `<p hidden>h</p><p aria-hidden="true">a</p><p style="DISPLAY : none">s</p><p class="sr-only">r</p><p class="hidden-xs">shown</p>`, "shown"},
		{"entities", "<p>&lt;tag&gt; &amp; &eacute; &#x1F6A2;</p>", "<tag> & é 🚢"},
		{"script text never shown", "<p>a</p><script>if (a < b) document.write('<p>x</p>')</script><p>b</p>", "a\n\nb"},
		{"page wrapped in a form", `<form id="aspnetForm"><div><h1>T</h1><p>one.</p><p>two.</p><p>three.</p></div></form>`, "# T\n\none.\n\ntwo.\n\nthree."},
		{"h1 outside article", "<h1>Title</h1><article><p>" + strings.Repeat("Body text. ", 60) + "</p></article>", "# Title\n\n" + strings.TrimSpace(strings.Repeat("Body text. ", 60))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := markdownOf(tc.html); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// Without <main> or <article>, the prose block wins over a link-heavy block of
// similar size.
func TestExtractScoring(t *testing.T) {
	prose := strings.Repeat("<p>The crossing, which takes forty minutes, was calm today, and the passengers, who were many, enjoyed it.</p>", 6)
	links := strings.Repeat(`<p><a href="/x">Another story about ferries and harbours and boats</a></p>`, 12)
	doc := Extract(`<html><body><div id="a">`+links+`</div><div id="b"><h2>Calm</h2>`+prose+`</div></body></html>`, nil)
	if strings.Contains(doc.Markdown, "Another story") || !strings.HasPrefix(doc.Markdown, "## Calm\n\nThe crossing") {
		t.Errorf("chose the wrong block:\n%s", doc.Markdown)
	}
}

func TestExtractDeepNesting(t *testing.T) {
	src := strings.Repeat("<div>", 100000) + "deep" + strings.Repeat("</div>", 100000)
	// Deeper than the HTML parser's 512 open elements: Readability cannot read it,
	// and the page is rendered whole.
	if doc := Extract(src, nil); doc.Markdown != "deep" || !doc.Whole {
		t.Errorf("got %+v", doc)
	}
}

func FuzzExtract(f *testing.F) {
	pages, _ := filepath.Glob("testdata/*.html")
	for _, p := range pages {
		b, _ := os.ReadFile(p)
		f.Add(string(b))
	}
	for _, s := range []string{
		"", "<", "</", "<p", "<table><tr><td colspan=99999999999>x", "<pre>\x00</pre>",
		"<ul><li><ol><li>", "<title>t", "<svg><title>x</title></svg><p>y", "\xff\xfe<p>bad utf8 \xc3</p>",
		"<code>`</code>", "<h1><h2>x</h1></h2>", "<a><a><a>x", "<table><caption>c</caption></table>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		doc := Extract(src, nil)
		if !utf8.ValidString(doc.Markdown) || !utf8.ValidString(doc.Title) {
			t.Fatalf("invalid UTF-8 out of %q", src)
		}
		if strings.ContainsRune(doc.Markdown, 0) {
			t.Fatalf("NUL in output of %q", src)
		}
	})
}

// Inputs shaped to make a naive implementation quadratic must stay fast.
func TestExtractAdversarialSizes(t *testing.T) {
	for name, src := range map[string]string{
		"comments between text": strings.Repeat("x<!---->", 200000),
		"unclosed formatting":   strings.Repeat("<b><i>x", 50000),
		"nested forms":          strings.Repeat("<form><p>", 20000),
		"nested tables":         strings.Repeat("<table><tr><td>", 5000),
		"many end tags":         "<div>" + strings.Repeat("</span>", 200000),
	} {
		start := time.Now()
		Extract(src, nil)
		limit := 5 * time.Second
		if raceEnabled {
			limit *= 5
		}
		if el := time.Since(start); el > limit {
			t.Errorf("%s: %s for %d bytes", name, el, len(src))
		}
	}
}

// A page that is no article (a link list, a form) loses none of its list; an
// article's byline and publication time travel in their own fields.
func TestExtractWholeAndMetadata(t *testing.T) {
	list := `<html><head><title>Index</title></head><body><nav><a href="/">Home</a></nav><h1>Ferry timetables</h1>
<ul><li><a href="/n">North quay</a></li><li><a href="/s">South pier</a></li><li><a href="/i">Island</a></li></ul>
<form><label>Search <input name=q></label></form><footer>Harbour office</footer></body></html>`
	doc := Extract(list, nil)
	if doc.Title != "Index" {
		t.Errorf("list page: title %q", doc.Title)
	}
	for _, want := range []string{"Ferry timetables", "- North quay", "- South pier", "- Island"} {
		if !strings.Contains(doc.Markdown, want) {
			t.Errorf("list page lacks %q:\n%s", want, doc.Markdown)
		}
	}
	article := `<html><head><title>Storm closes the strait</title><meta property="article:published_time" content="2026-03-12T08:30:00+01:00"></head>
<body><article><h1>Storm closes the strait</h1><p class="byline">By Mara Quint</p>` +
		strings.Repeat("<p>The ferry stayed at the quay, and the passengers, who had waited since dawn, went home again.</p>", 8) + `</article></body></html>`
	doc = Extract(article, nil)
	if doc.Whole || doc.Byline != "By Mara Quint" || doc.Published != "2026-03-12T07:30:00Z" || strings.Contains(doc.Markdown, "Mara") {
		t.Errorf("article: whole %v, byline %q, published %q:\n%s", doc.Whole, doc.Byline, doc.Published, doc.Markdown)
	}
}
