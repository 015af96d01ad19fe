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
			prune(art.root, false, pruner{drop: dropInArticle})
			// A page that is not an article (a listing, a form, an index) can leave
			// Readability with a paragraph of it: then the page is worth more whole.
			// A short article holding most of the page's running text is the page's
			// article all the same (a news brief among long menus and footers).
			if n := art.root.textLen; n > 0 && (n >= 500 || n*5 >= body.textLen || paragraphs(art.root)*2 >= paragraphs(body)) {
				if trimEdges(art.root) {
					prune(art.root, false, pruner{drop: dropInArticle})
				}
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
				if c.Type == html.ElementNode {
					namesFromSel(c)
				}
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
	// The classes say what Readability kept: a footer or a newsletter box
	// (trimEdges).
	p.KeepClasses = true
	return p.ParseAndMutate(doc, base)
}

// leafBlocks lists in document order the elements of n that hold text and no
// block: paragraphs, headings, list items, table cells, text written into a div.
func leafBlocks(n *node, out []*node) []*node {
	for c := n.first; c != nil; c = c.next {
		if c.isText || c.textLen == 0 || !isBlock(c.a) && !isHeading(c.a) {
			// Text and inline elements beside blocks are their parent's loose text,
			// never cut.
			continue
		}
		if isHeading(c.a) || !holdsBlock(c) {
			out = append(out, c)
			continue
		}
		out = leafBlocks(c, out)
	}
	return out
}

// holdsBlock says whether n has a child block other than a line break.
func holdsBlock(n *node) bool {
	for c := n.first; c != nil; c = c.next {
		if !c.isText && c.a != atom.Br && (isBlock(c.a) || isHeading(c.a)) {
			return true
		}
	}
	return false
}

// maxTrimmed bounds the share of an article's text trimEdges may take off: past
// it the links are the article (a list of sources, a page of links).
const maxTrimmed = 0.3

// trimEdges takes off what Readability keeps around an article's text: before it,
// links (a breadcrumb, a section name); after it, a run of links under a label of
// its own ("You may also like…" and its list of other stories) or of short links
// (tags, share buttons). A run of longer links that the text itself introduces
// ("…the offers not to miss:") is the article's. Measured on the tuning half of
// tests/corpus, these were most of the text web_fetch kept beyond the articles.
//
// It reports whether it cut anything; the measures of root's ancestors of what it
// cut are then stale until the caller prunes again.
func trimEdges(root *node) bool {
	leaves := leafBlocks(root, nil)
	budget := int(maxTrimmed * float64(root.textLen))
	links := func(n *node) bool { return linkDensity(n) >= 0.5 }
	var cut []*node
	i := 0
	for ; i < len(leaves) && links(leaves[i]) && !isHeading(leaves[i].a) && budget >= leaves[i].textLen; i++ {
		budget -= leaves[i].textLen
		cut = append(cut, leaves[i])
	}
	// The trailing run of links and headings: cut from its first heading (or
	// the label just before it), or whole when its links are all short.
	j := len(leaves)
	for j > i && (links(leaves[j-1]) || isHeading(leaves[j-1].a)) {
		j--
	}
	from := -1
	for k := j; k < len(leaves); k++ {
		if isHeading(leaves[k].a) {
			from = k
			break
		}
	}
	if from < 0 && j > i && j < len(leaves) && label(leaves[j-1]) {
		from = j - 1
	}
	if from < 0 && j < len(leaves) {
		runText := 0
		for _, n := range leaves[j:] {
			runText += n.textLen
		}
		if runText <= 25*(len(leaves)-j) {
			from = j
		}
	}
	if from >= 0 {
		runText := 0
		for _, n := range leaves[from:] {
			runText += n.textLen
		}
		if runText <= budget {
			cut = append(cut, leaves[from:]...)
		}
	}
	// A block named as boilerplate (a footer, a newsletter box, related links)
	// that Readability kept beside the text, up to half of it.
	cut = appendNamed(cut, root, root.textLen/2)
	// Captions say what a photo shows and who took it, beside the text rather
	// than in it: the benchmark's readers left every one out of the articles.
	cut = appendAll(cut, root, atom.Figcaption)
	for _, n := range cut {
		remove(n)
	}
	return len(cut) > 0
}

// label is a short line that names what follows rather than says something: no
// sentence's end ("You may also like..." trails off into what follows; one full
// stop ends a sentence), no colon that would make what follows part of the text.
func label(n *node) bool {
	if isHeading(n.a) {
		return true
	}
	if n.textLen > 60 {
		return false
	}
	t := strings.TrimSpace(innerText(n))
	if strings.HasSuffix(t, "..") || strings.HasSuffix(t, "…") {
		return true
	}
	return t != "" && !strings.HasSuffix(t, ".") && !strings.HasSuffix(t, ":") && !strings.HasSuffix(t, "。") && !strings.HasSuffix(t, "：")
}

// keptBoilerplate are the class and id words of blocks Readability keeps that
// are never an article's text. Fewer than noisy's: a "share" or "comments" class
// wraps an article's body on enough sites (Readability's test pages) to cost more
// than it saves, and "paywall" marks the very paragraphs of the article a
// subscriber reads.
var keptBoilerplate = map[string]bool{
	"footer": true, "rodape": true, "piede": true, "fusszeile": true,
	"newsletter": true, "subscribe": true, "signup": true, "related": true,
	"recommended": true, "outbrain": true, "taboola": true, "sponsored": true,
	"advertisement": true, "promo": true,
	"cookie": true, "consent": true,
}

// appendNamed appends the blocks of n whose class or id names them as
// boilerplate (keptBoilerplate), each holding at most limit bytes of text and no heading
// of the first rank.
func appendNamed(out []*node, n *node, limit int) []*node {
	for c := n.first; c != nil; c = c.next {
		if c.isText {
			continue
		}
		if classTokens(c, func(t string) bool { return keptBoilerplate[t] }) && c.textLen <= limit && c.flags&hasH1 == 0 && c.a != atom.H1 {
			out = append(out, c)
			continue
		}
		out = appendNamed(out, c, limit)
	}
	return out
}

// appendAll appends n's descendants of kind a (not those inside them).
func appendAll(out []*node, n *node, a atom.Atom) []*node {
	for c := n.first; c != nil; c = c.next {
		if c.a == a && !c.isText {
			out = append(out, c)
		} else if !c.isText {
			out = appendAll(out, c, a)
		}
	}
	return out
}

// remove takes n out of its parent.
func remove(n *node) {
	p := n.parent
	if p == nil {
		return
	}
	var prev *node
	for c := p.first; c != nil && c != n; c = c.next {
		prev = c
	}
	unlink(p, prev, n, nil)
}

// namesFromSel gives an element of a capture, which carries no class or id
// attribute, the id and classes its selector names (the last step of sel:
// "#footer", "div.newsletter"), so that Readability weighs a capture by the names
// it weighs a page by. A page's own class and id stay.
func namesFromSel(n *html.Node) {
	var sel string
	for _, a := range n.Attr {
		switch a.Key {
		case "class", "id":
			return
		case CaptureSelectorAttr, CaptureSelectorAttrLong:
			sel = a.Val
		}
	}
	if sel == "" {
		return
	}
	id, classes := selNames(sel)
	if id != "" {
		n.Attr = append(n.Attr, html.Attribute{Key: "id", Val: id})
	}
	if classes != "" {
		n.Attr = append(n.Attr, html.Attribute{Key: "class", Val: classes})
	}
}

// selNames reads the id and the classes (space-separated) that the last step of a
// CSS selector names: "#footer", "div.newsletter.box", "#m > .s2".
func selNames(sel string) (id, classes string) {
	if i := strings.LastIndexAny(sel, " >"); i >= 0 {
		sel = sel[i+1:]
	}
	if i := strings.IndexAny(sel, "[:"); i >= 0 {
		sel = sel[:i]
	}
	var cs []string
	for sel != "" {
		j := strings.IndexAny(sel[1:], "#.") + 1
		if j == 0 {
			j = len(sel)
		}
		switch part := sel[:j]; part[0] {
		case '#':
			id = part[1:]
		case '.':
			cs = append(cs, part[1:])
		}
		sel = sel[j:]
	}
	return id, strings.Join(cs, " ")
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

// dropInArticle is dropNever for Readability's article, whose classes it keeps
// only for trimEdges to read: a class that hides a block on the page ("hidden",
// revealed by the page's script) does not hide what Readability chose to keep.
func dropInArticle(n *node) bool {
	if hiddenByClass(n) {
		return n.drop || dropNever(&node{a: n.a})
	}
	return dropNever(n)
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
