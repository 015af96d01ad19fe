// Package markdown turns HTML into the Markdown the model reads: the article of a
// fetched page (web_fetch, through go-readability) and the browser's capture of a
// rendered page with its ⟨selector⟩ marks (get_tab_content, whose main content is
// picked in region.go). Both are written by one renderer on one tree, so a page
// reads the same whichever tool fetched it.
package markdown

import (
	"bytes"
	"cmp"
	"errors"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Document is the main text of an HTML page.
type Document struct {
	Title     string // the article's title (Readability's choice of <title>, og:title, <h1>…)
	Byline    string // the author line, when the page names one
	Published string // RFC 3339, when the page's metadata gives a publication time
	Markdown  string
	// Whole is true when no article was found and Markdown is the whole page's text.
	Whole bool
}

// maxReadableElements bounds the documents given to Readability, whose passes over
// a page grow faster than its size; a larger page is read whole.
const maxReadableElements = 150_000

// Extract finds the article of an HTML page with go-readability (Mozilla
// Readability's algorithm: scoring of paragraphs and their ancestors, clutter such
// as navigation, share bars, comments and ads removed, siblings of the best block
// joined) and renders it as Markdown with the same writer as get_tab_content:
// headings as #, lists, tables, fenced code, link text without the target. base is
// the page's URL (nil when unknown). A page where Readability finds no article, or
// only a fragment of a page made of something else, or that it cannot parse (nesting
// deeper than the HTML parser's 512 open elements), is rendered whole, scripts,
// styles, hidden elements and form controls left out.
func Extract(src string, base *url.URL) Document {
	if !utf8.ValidString(src) {
		src = strings.ToValidUTF8(src, "\uFFFD")
	}
	a, err := readable(src, base)
	page := parseTree(src)
	body := findFirst(page.root, func(n *node) bool { return n.a == atom.Body })
	if body == nil {
		body = page.root
	}
	doc := Document{Title: page.title}
	if err == nil {
		doc.Title = cmp.Or(collapse(a.Title()), doc.Title)
		doc.Byline = collapse(a.Byline())
		if t, err := a.PublishedTime(); err == nil && !t.IsZero() {
			doc.Published = t.UTC().Format(time.RFC3339)
		}
	}
	if doc.Title == "" {
		if h1 := findFirst(body, func(n *node) bool { return n.a == atom.H1 }); h1 != nil {
			doc.Title = collapse(innerText(h1))
		}
	}
	prune(body, false, pruner{drop: dropNever})
	if err == nil && a.Node != nil {
		var b bytes.Buffer
		if html.Render(&b, a.Node) == nil {
			art := parseTree(b.String())
			prune(art.root, false, pruner{drop: dropNever})
			// A page that is not an article (a listing, a form, an index) can leave
			// Readability with a paragraph of it: then the page is worth more whole.
			if n := art.root.textLen; n > 0 && (n >= 500 || n*5 >= body.textLen) {
				doc.Markdown = render(art.root)
				return doc
			}
		}
	}
	doc.Markdown, doc.Whole = render(body), true
	return doc
}

// readable runs Readability over the page, its comments taken out first and the
// text around them joined: they are no content, and a page built of them (200,000
// between as many letters) would make its passes slow.
func readable(src string, base *url.URL) (readability.Article, error) {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		return readability.Article{}, err
	}
	nodes := 0
	var strip func(*html.Node)
	strip = func(n *html.Node) {
		var run *html.Node // the text node that adjacent text joins
		var b strings.Builder
		flush := func() {
			if run != nil && b.Len() > 0 {
				run.Data += b.String()
			}
			run = nil
			b.Reset()
		}
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			switch {
			case c.Type == html.CommentNode:
				n.RemoveChild(c)
			case c.Type == html.TextNode && run != nil:
				b.WriteString(c.Data)
				n.RemoveChild(c)
			case c.Type == html.TextNode:
				run = c
				nodes++
			default:
				flush()
				nodes++
				strip(c)
			}
			c = next
		}
		flush()
	}
	strip(doc)
	if nodes > 3*maxReadableElements {
		return readability.Article{}, errTooLarge
	}
	p := readability.NewParser()
	p.MaxElemsToParse = maxReadableElements
	return p.ParseAndMutate(doc, base)
}

var errTooLarge = errors.New("too many nodes for Readability")

func render(root *node) string {
	r := &renderer{}
	r.walk(root)
	r.flush()
	return strings.TrimSpace(string(r.out))
}

// dropNever is what no rendering of a page shows: scripts, styles, metadata,
// media and embeds, form controls, and what the markup hides.
func dropNever(n *node) bool {
	switch n.a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Canvas,
		atom.Iframe, atom.Object, atom.Embed, atom.Audio, atom.Video, atom.Map, atom.Head,
		atom.Link, atom.Meta, atom.Base, atom.Button, atom.Input, atom.Select, atom.Textarea,
		atom.Option, atom.Datalist, atom.Img, atom.Picture, atom.Source, atom.Track,
		atom.Param, atom.Frameset, atom.Noframes, atom.Dialog:
		return true
	}
	return n.drop || hiddenByClass(n)
}

// markdownOf renders a whole HTML document or fragment as Markdown (what Extract
// writes for a page without an article).
func markdownOf(src string) string {
	if !utf8.ValidString(src) {
		src = strings.ToValidUTF8(src, "\uFFFD")
	}
	b := parseTree(src)
	prune(b.root, false, pruner{drop: dropNever})
	return render(b.root)
}
