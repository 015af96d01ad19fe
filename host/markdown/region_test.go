package markdown

import (
	"strings"
	"testing"
)

func prosePara(word string, n int) string {
	return strings.Repeat("<p>The "+word+" crossing, which takes forty minutes, was calm today, and the passengers, who were many, enjoyed it.</p>", n)
}

// get_tab_content's pick never drops the article: a lead paragraph scored apart
// from the rest grows to the block holding both; two columns of text that score
// alike make the whole page the content, with the likeliest region named.
func TestCaptureMainChoice(t *testing.T) {
	nav := `<nav sel='nav'><ul sel='>ul'><li><a href='/'>Home</a></li><li><a href='/news'>News</a></li></ul></nav>`
	split := `<body>` + nav + `<div sel='#story'><div sel='.lead'><p>` + strings.Repeat("Lead words of the story, with a comma, and more. ", 8) + `</p></div>` +
		`<div sel='#rest'><div sel='>div'><section sel='>section'><div sel='>div'>` + prosePara("middle", 3) + `</div></section></div><div sel='.more'>` + prosePara("closing", 3) + `</div></div></div>` +
		`<footer sel='footer'><p>© the harbour office</p></footer></body>`
	c := ConvertCapture(split, "")
	if c.Main != "" || !strings.Contains(c.Markdown, "Lead words") || !strings.Contains(c.Markdown, "middle crossing") || !strings.Contains(c.Markdown, "closing crossing") {
		t.Errorf("split article: selector %q, main %q, why %q:\n%s", c.Selector, c.Main, c.Why, c.Markdown)
	}
	if strings.Contains(c.Markdown, "harbour office") {
		t.Errorf("the grown pick took the footer too:\n%s", c.Markdown)
	}

	columns := `<body>` + nav + `<div sel='#a'><div sel='>div'>` + prosePara("eastern", 6) + `</div></div><div sel='#b'><div sel='>div'>` + prosePara("western", 6) + `</div></div></body>`
	c = ConvertCapture(columns, "")
	if c.Selector != "body" || c.Main == "" || c.Why == "" || !strings.Contains(c.Markdown, "eastern crossing") || !strings.Contains(c.Markdown, "western crossing") {
		t.Errorf("two alike columns: selector %q, main %q, why %q:\n%s", c.Selector, c.Main, c.Why, c.Markdown)
	}

	article := `<body>` + nav + `<article sel='article'><h1 sel='h1'>Storm</h1>` + prosePara("stormy", 6) + `</article></body>`
	c = ConvertCapture(article, "")
	if c.Selector != "article" || c.Main != "" || strings.Contains(c.Markdown, "Home") {
		t.Errorf("a plain article: selector %q, main %q:\n%s", c.Selector, c.Main, c.Markdown)
	}
}

func TestUntracked(t *testing.T) {
	for in, want := range map[string]string{
		"/a?utm_source=x&utm_medium=y":     "/a",
		"/a?id=3&utm_campaign=z#top":       "/a?id=3#top",
		"https://x.test/?fbclid=1&q=ferry": "https://x.test/?q=ferry",
		"/plain?q=1":                       "/plain?q=1",
		"/frag#utm_source=x":               "/frag#utm_source=x",
	} {
		if got := untracked(in); got != want {
			t.Errorf("untracked(%q) = %q, want %q", in, got, want)
		}
	}
}

// A capture carries no class or id: the names its selectors give are read as a
// page's would be, so a footer longer than the article is not the main content.
func TestCaptureNamesFromSelectors(t *testing.T) {
	article := `<div sel='#story'>` + prosePara("harbour", 6) + `</div>`
	footer := `<div sel='#footer'>` + prosePara("legal", 4) + `</div>`
	c := ConvertCapture(`<body>`+article+footer+`</body>`, "")
	if strings.Contains(c.Markdown, "legal crossing") || !strings.Contains(c.Markdown, "harbour crossing") {
		t.Errorf("selector %q main %q:\n%s", c.Selector, c.Main, c.Markdown)
	}
	for sel, want := range map[string][2]string{
		"#footer": {"footer", ""}, "div.newsletter.box": {"", "newsletter box"}, "#m > .s2": {"", "s2"},
		"main > p:nth-of-type(2)": {"", ""}, "a#x.y[href]": {"x", "y"},
	} {
		if id, cls := selNames(sel); id != want[0] || cls != want[1] {
			t.Errorf("selNames(%q) = %q, %q; want %q, %q", sel, id, cls, want[0], want[1])
		}
	}
}
