package browser

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite testdata/*.md from the converter's output")

var selectorComment = regexp.MustCompile(`^<!-- selector: (.+?) -->`)

// Golden captures: a whole page whose main content is picked (navigation, asides
// and footer left out; headings, links, a table, nested lists, a card link, code),
// a form read by selector (every kind of control with its value and state), and a
// page with an inlined shadow root, a same-origin <ferry-frame> and a cross-origin
// iframe. A capture whose first line is <!-- selector: S --> is converted as the
// extension's answer to a call with that selector.
func TestConvertGolden(t *testing.T) {
	pages, _ := filepath.Glob("testdata/*.html")
	if len(pages) == 0 {
		t.Fatal("no golden captures")
	}
	for _, page := range pages {
		name := strings.TrimSuffix(filepath.Base(page), ".html")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			sel := ""
			if m := selectorComment.FindSubmatch(src); m != nil {
				sel = string(m[1])
			}
			md, used := Convert(string(src), sel)
			got := "used_selector: " + used + "\n\n" + md + "\n"
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
				t.Errorf("%s differs from the conversion:\n--- got ---\n%s\n--- want ---\n%s", golden, got, want)
			}
		})
	}
}

// benchCapture builds a capture of about size bytes as the extension sends it:
// every addressable element with its data-ferry-sel, form controls with values, a
// site header and navigation, sections of prose, lists, tables and cards.
func benchCapture(size int) string {
	var b strings.Builder
	b.Grow(size + 4096)
	b.WriteString(`<body data-ferry-sel="body"><header data-ferry-sel="header"><nav data-ferry-sel="#nav"><ul>`)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, `<li><a href="/c/%d" data-ferry-sel="#nav li:nth-child(%d) > a">Category %d</a></li>`, i, i+1, i)
	}
	b.WriteString(`</ul></nav><form data-ferry-sel="#search"><input name="q" value="ferry" data-ferry-sel="#q"><button data-ferry-sel="#go">Search</button></form></header><main data-ferry-sel="#main">`)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `
<section data-ferry-sel="#s%d"><h2 data-ferry-sel="#s%d > h2">Section %d: crossing the strait</h2>
<p data-ferry-sel="#s%d > p:nth-of-type(1)">The ferry left the harbour at <strong>six o'clock</strong>, carrying %d passengers, a dozen cars and a <a href="/cargo/%d" data-ferry-sel="#s%d a.cargo">cargo of apples</a> bound for the islands, where the market opens early.</p>
<p data-ferry-sel="#s%d > p:nth-of-type(2)">Weather reports said the wind would rise by noon; the captain, however, kept to the timetable, as she has done for <em>twenty-three years</em>.</p>
<ul data-ferry-sel="#s%d > ul"><li>Departures every hour</li><li>Tickets <a href="/tickets" data-ferry-sel="#s%d li a">online</a></li><li>Bicycles travel free</li></ul>
<table data-ferry-sel="#s%d table"><thead><tr><th>Port</th><th>Departs</th></tr></thead><tbody><tr><td>North quay</td><td>07:10</td></tr><tr><td>Island pier</td><td>08:05</td></tr></tbody></table>
<product-card data-ferry-sel="#s%d product-card"><div><h3>Kayak %d</h3><button data-ferry-sel="#s%d product-card >>> button">Add to cart</button></div></product-card>
<label>Quantity <input type="number" name="qty%d" value="1" data-ferry-sel="#qty%d"></label> <select name="size%d" data-ferry-sel="#size%d"><option>S</option><option selected>M</option><option>L</option></select>
</section>`, i, i, i, i, 100+i, i, i, i, i, i, i, i, i, i, i, i, i, i)
	}
	b.WriteString(`</main><footer data-ferry-sel="footer"><p>© Ferry</p></footer></body>`)
	return b.String()
}

func BenchmarkConvert(b *testing.B) {
	page := benchCapture(2 << 20)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		Convert(page, "")
	}
}

func BenchmarkConvertSelector(b *testing.B) {
	page := benchCapture(2 << 20)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		Convert(page, "#main")
	}
}

func TestBenchCaptureConverts(t *testing.T) {
	md, used := Convert(benchCapture(16<<10), "")
	if used != "#main" {
		t.Errorf("used_selector %q, want #main", used)
	}
	for _, want := range []string{"## Section 0: crossing the strait ⟨#s0 > h2⟩", "[cargo of apples](/cargo/0) bound", "[button text=\"Add to cart\"]⟨#s0 product-card >>> button⟩", "[select name=size0 value=M options=[\"S\",\"M\",\"L\"]]⟨#size0⟩", "| Port | Departs |"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, noise := range []string{"Category 3", "© Ferry", "#search"} {
		if strings.Contains(md, noise) {
			t.Errorf("kept %q from outside the main content", noise)
		}
	}
	if t.Failed() {
		t.Log(md[:min(len(md), 3000)])
	}
}

// FuzzConvert: any input converts without panicking, in both modes, to valid UTF-8.
func FuzzConvert(f *testing.F) {
	pages, _ := filepath.Glob("testdata/*.html")
	for _, p := range pages {
		b, _ := os.ReadFile(p)
		f.Add(string(b))
	}
	f.Add(benchCapture(4 << 10))
	f.Add(`<ferry-frame><x-a data-ferry-sel="⟨"><a href="(x)">[</a></x-a></ferry-frame></ferry-frame><select><option selected>`)
	f.Add("<p data-ferry-sel=\"p\xff\">\xffbad</p><textarea>\x00</textarea><input type=checkbox checked>")
	f.Fuzz(func(t *testing.T, src string) {
		for _, sel := range []string{"", "#x"} {
			md, used := Convert(src, sel)
			if !utf8.ValidString(md) || !utf8.ValidString(used) {
				t.Fatalf("invalid UTF-8 from %q", src)
			}
		}
	})
}

// A capture's relative selectors (">step", ">>>rest") are rebuilt against the
// nearest enclosing element that carries one, following the capture's own nesting.
func TestConvertRelativeSelectors(t *testing.T) {
	page := `<body><main sel='#m'><section sel='>.s2'><h2 sel='>h2'>Title</h2>` +
		`<p>text</p><div><table sel='>div > table'><tr><td>one</td></tr></table></div><input sel='>input' name=q value='it&#39;s'><br>` +
		`<x-card sel='.card'><button sel='>>>button'>Buy</button></x-card></section>` +
		`<form sel='>form'><select sel='>select'><option>A</option></select></form></main></body>`
	md, used := Convert(page, "")
	for _, want := range []string{
		"## Title ⟨#m > .s2 > h2⟩",
		"⟨#m > .s2 > div > table⟩",
		`[input name=q value="it's"]⟨#m > .s2 > input⟩`,
		`[button text=Buy]⟨.card >>> button⟩`,
		"⟨#m > form⟩",
		"⟨#m > form > select⟩",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
	if used != "#m" {
		t.Errorf("used_selector %q, want #m", used)
	}
	// A selector longer than MaxMarkedSelector is left unmarked: a long path costs
	// more to read than the snapshot's ref that reaches the same element.
	long := `<body><main sel='#m'><section sel='>section:nth-of-type(2) > div:nth-of-type(3)'><h2 sel='>h2'>Deep</h2></section></main></body>`
	if md, _ := Convert(long, ""); !strings.Contains(md, "## Deep") || strings.Contains(md, "nth-of-type") {
		t.Errorf("a long selector was marked:\n%s", md)
	}
}
