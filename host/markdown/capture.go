package markdown

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/atom"
)

// This file renders what the browser extension captured of a rendered page (the
// browser tools' get_tab_content) with the same tree, main-content choice and
// Markdown writer as web_fetch, plus what an agent acting on the page needs: link
// targets, form controls with their state, and the short CSS selectors the capture
// put in data-ferry-sel, written as ⟨selector⟩ marks:
//
//   - a mark at the end of a line (a heading, a paragraph) addresses the element
//     that line renders: "## Pricing ⟨#pricing⟩";
//   - a mark right after a link or a form control addresses that element:
//     "[Buy now](/buy)⟨#buy⟩", "[input name=q value=\"shoes\"]⟨#q⟩";
//   - a line holding only a mark addresses the block that starts on the next line
//     (a section, list, table, form, frame …).
//
// ⟨ and ⟩ (U+27E8, U+27E9) almost never occur in page text, so a mark cannot be
// mistaken for content; a selector that contains either, a line break, or more than
// MaxMarkedSelector bytes is left unmarked rather than written ambiguously.

// CaptureSelectorAttr is the attribute in which a capture carries each element's
// short unique CSS selector; CaptureSelectorAttrLong is its older, longer name,
// still read. A value that starts with ">" is relative to the selector of the
// nearest enclosing element that carries one: ">step" stands for
// "<enclosing> > step" and ">>>rest" for "<enclosing> >>> rest" (a selector never
// starts with ">", so the two forms cannot be confused).
const (
	CaptureSelectorAttr     = "sel"
	CaptureSelectorAttrLong = "data-ferry-sel"
)

// selScope is an element open in a capture's token stream, with the full selector
// in force inside it (its own, or the one it inherits). It follows the tokens, not
// the tree the builder repairs, because the extension wrote relative selectors
// against the nesting of its own output.
type selScope struct {
	name string
	sel  string
}

// captureVoid are the elements the extension writes without an end tag.
func captureVoid(name string) bool {
	switch name {
	case "br", "hr", "img", "input", "wbr", "col":
		return true
	}
	return false
}

// enclosingSel is the full selector in force at the innermost open element.
func (b *builder) enclosingSel() string {
	if len(b.sels) == 0 {
		return ""
	}
	return b.sels[len(b.sels)-1].sel
}

// resolveSel turns a relative capture selector into a full one.
func (b *builder) resolveSel(v string) string {
	if !strings.HasPrefix(v, ">") {
		return v
	}
	enc := b.enclosingSel()
	if enc == "" {
		return "" // nothing to be relative to: leave the element unmarked
	}
	if rest, ok := strings.CutPrefix(v, ">>>"); ok {
		return enc + " >>> " + rest
	}
	return enc + " > " + v[1:]
}

// openSel records a start tag in the token stream: n's own selector, or the
// enclosing one.
func (b *builder) openSel(name string, n *node) {
	if captureVoid(name) {
		return
	}
	sel := b.enclosingSel()
	if n.x != nil && n.x.sel != "" {
		sel = n.x.sel
	}
	b.sels = append(b.sels, selScope{name: name, sel: sel})
}

// closeSel records an end tag: back to the enclosing element of that name, if
// one is open.
func (b *builder) closeSel(name string) {
	for i := len(b.sels) - 1; i >= 0; i-- {
		if b.sels[i].name == name {
			b.sels = b.sels[:i]
			return
		}
	}
}

// MaxMarkedSelector bounds the selectors written as marks: a long one (a path of
// nth-of-type steps through anonymous blocks) costs the model more to read than it
// saves, and browser_snapshot's refs reach those elements. On the corpus pages the
// marks over 32 bytes were a third of all the marks' tokens.
const MaxMarkedSelector = 32

// Capture is a captured page as Markdown.
type Capture struct {
	Markdown string
	// Selector addresses what was rendered: the capture's selector of the chosen
	// element (of their parent when several siblings were kept); "body" when the
	// whole page was rendered or nothing closer carries one.
	Selector string
	// Main is the region the main-content choice picked when the pick was too
	// unsure to cut the page to it and the whole page was rendered instead ("" when
	// Selector is the pick); Share is the part of the page's content text it holds.
	Main  string
	Share float64
	// Why says what made the pick unsure.
	Why string
}

// The main-content pick (grown to the block that holds most of the page's
// prose, region.go) is trusted to cut the page only when it holds at least
// minShare of the page's prose and no other candidate comes within maxRival of
// its score: otherwise the whole page is rendered, and the result names the pick
// (a few more tokens cost less than an article the agent never sees).
const (
	minShare = 0.5
	maxRival = 0.8
)

// ConvertCapture renders a capture's simplified HTML as Markdown with ⟨selector⟩
// marks. selector is the one the capture was taken with: the whole capture is then
// rendered, and its own element is not marked again. Without one the main content
// is chosen as web_fetch chooses it (navigation, asides, boilerplate-named blocks
// set aside first), and the chosen part is rendered whole, forms and navigation
// inside it included.
func ConvertCapture(src, selector string) Capture {
	if !utf8.ValidString(src) {
		src = strings.ToValidUTF8(src, "\uFFFD")
	}
	b := parse(src, true)
	body := captureBody(b.root)
	roots := []*node{body}
	sel := selector
	out := Capture{Share: 1}
	located := false
	if sel == "" {
		// The choice prunes boilerplate away first; undoing the removals afterwards
		// gives the chosen part back whole for rendering.
		var log []unlinked
		prune(body, false, pruner{hard: true, log: &log})
		c := chooseMain(body, &log)
		relink(log)
		roots, sel, out.Share = c.roots, rootSelector(c.roots, body), c.share
		switch {
		case sel == "body":
		case c.share < minShare:
			out.Why = "it holds " + strconv.Itoa(int(c.share*100+0.5)) + "% of the page's running text"
		case c.rival > maxRival:
			out.Why = "another part of the page scores " + strconv.Itoa(int(c.rival*100+0.5)) + "% as high"
		}
		// Readability's article, found back in the capture, is the region when
		// there is one: on the benchmark's pages it is right far more often than
		// the scoring above (tests/corpus, README). When it spans the whole body,
		// the scoring's pick is still named, as an unsure pick is.
		if n := locateArticle(src, body); n != nil {
			located = true
			if n == body && sel != "body" && out.Why == "" {
				out.Why = "the article reader finds the page's text spread over the whole page"
			}
			if n == body && out.Why != "" {
				out.Main = sel
			}
			roots, sel, out.Share = []*node{n}, rootSelector([]*node{n}, body), 1
			if h := titleBefore(body, n); h != nil {
				roots = []*node{h, n}
			}
			if n != body {
				out.Why = ""
			}
		} else if out.Why != "" {
			out.Main, roots, sel = sel, []*node{body}, "body"
		}
	}
	r := &renderer{capture: true, skipMark: sel}
	for _, n := range roots {
		prune(n, false, pruner{drop: dropCaptured})
		if located {
			trimEdges(n)
		}
		r.walk(n)
	}
	r.flush()
	out.Markdown, out.Selector = strings.TrimSpace(string(r.out)), sel
	return out
}

// nodeX is what a capture keeps of an element beyond what web_fetch needs.
type nodeX struct {
	tag                                    string // name of an element the atom table does not know
	sel, href, src, alt, value, typ, name  string
	placeholder, label, title              string
	hasValue, checked, selected, disabled  bool
	readonly, required, multiple, isHidden bool
}

func (b *builder) ext(n *node) *nodeX {
	if n.x == nil {
		if len(b.xs) == 0 {
			b.xs = make([]nodeX, 256)
		}
		n.x = &b.xs[0]
		b.xs = b.xs[1:]
	}
	return n.x
}

func setCaptureAttr[T string | []byte](b *builder, n *node, k, v T) {
	switch string(k) {
	case CaptureSelectorAttr, CaptureSelectorAttrLong:
		x := b.ext(n)
		x.sel = b.resolveSel(strings.TrimSpace(string(v)))
		// A capture carries no class or id attribute; its selector names them,
		// and the choice of the main region reads them (a "#footer", a
		// ".newsletter" is boilerplate).
		if n.class == "" && n.id == "" {
			n.id, n.class = selNames(x.sel)
		}
	case "href":
		b.ext(n).href = strings.TrimSpace(string(v))
	case "src":
		b.ext(n).src = strings.TrimSpace(string(v))
	case "alt":
		b.ext(n).alt = string(v)
	case "value":
		x := b.ext(n)
		x.value, x.hasValue = string(v), true
	case "type":
		b.ext(n).typ = strings.ToLower(strings.TrimSpace(string(v)))
	case "name":
		b.ext(n).name = string(v)
	case "placeholder":
		b.ext(n).placeholder = string(v)
	case "aria-label":
		b.ext(n).label = string(v)
	case "title":
		b.ext(n).title = string(v)
	case "checked":
		b.ext(n).checked = true
	case "selected":
		b.ext(n).selected = true
	case "disabled":
		b.ext(n).disabled = true
	case "readonly":
		b.ext(n).readonly = true
	case "required":
		b.ext(n).required = true
	case "multiple":
		b.ext(n).multiple = true
	case "hidden":
		b.ext(n).isHidden = true
	case "style":
		if styleHides(v) {
			b.ext(n).isHidden = true
		}
	}
}

// closeUnknown closes the nearest open element of an end tag's name, for the
// elements the atom table does not know (custom elements hosting shadow roots,
// <ferry-frame>), whose end tags web_fetch ignores.
func (b *builder) closeUnknown(raw []byte) {
	name := bytes.ToLower(bytes.TrimSpace(bytes.Trim(raw, "</>")))
	if i := bytes.IndexAny(name, " \t\n\r\f/"); i >= 0 {
		name = name[:i]
	}
	for i := len(b.stack) - 1; i > 0; i-- {
		if n := b.stack[i]; n.a == 0 && n.x != nil && n.x.tag == string(name) {
			b.stack = b.stack[:i]
			return
		}
	}
}

// relink undoes the removals in log, last first, which restores the tree exactly.
func relink(log []unlinked) {
	for i := len(log) - 1; i >= 0; i-- {
		u := log[i]
		u.c.parent = u.p
		if u.prev == nil {
			u.c.next = u.p.first
			u.p.first = u.c
		} else {
			u.c.next = u.prev.next
			u.prev.next = u.c
		}
		if u.c.next == nil {
			u.p.last = u.c
		}
	}
}

func captureBody(root *node) *node {
	for c := root.first; c != nil; c = c.next {
		switch c.a {
		case atom.Body:
			return c
		case atom.Html:
			for cc := c.first; cc != nil; cc = cc.next {
				if cc.a == atom.Body {
					return cc
				}
			}
			return c
		}
	}
	return root
}

func rootSelector(roots []*node, body *node) string {
	n := roots[0]
	if len(roots) > 1 {
		n = n.parent
	}
	for ; n != nil; n = n.parent {
		if n.x != nil && n.x.sel != "" {
			return n.x.sel
		}
		if n == body {
			break
		}
	}
	return "body"
}

// dropCaptured is what a capture never renders. The extension already left out
// hidden elements and scripts; this is the guard for what slips through.
func dropCaptured(n *node) bool {
	switch n.a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Head,
		atom.Link, atom.Meta, atom.Base, atom.Datalist, atom.Param, atom.Source,
		atom.Track, atom.Object, atom.Embed, atom.Canvas, atom.Audio, atom.Video, atom.Map:
		return true
	case atom.Input:
		if n.x != nil && n.x.typ == "hidden" {
			return true
		}
	}
	return n.x != nil && n.x.isHidden
}

type mark struct {
	sel   string
	depth int // containers open when the marked block began
	used  bool
}

func markable(sel string) string {
	if sel == "" || len(sel) > MaxMarkedSelector || strings.ContainsAny(sel, "⟨⟩\n\r") {
		return ""
	}
	return sel
}

// markedBlock lists the blocks that get a mark line of their own: the regions a
// call can be narrowed to and the forms and tables it acts on. Lists, figures,
// quotes and code are reached through the region or heading they sit under.
func markedBlock(a atom.Atom) bool {
	switch a {
	case atom.Section, atom.Article, atom.Main, atom.Nav, atom.Aside, atom.Header,
		atom.Footer, atom.Form, atom.Table, atom.Fieldset, atom.Details, atom.Dialog:
		return true
	}
	return false
}

// writeMarks writes the pending marks of the blocks about to start, each on its own
// line under the prefixes of the containers open when its block began, and says
// whether it wrote any.
func (r *renderer) writeMarks() bool {
	wrote := false
	for i := range r.marks {
		m := &r.marks[i]
		if m.used {
			continue
		}
		m.used = true
		if wrote {
			r.out = append(r.out, '\n')
		}
		for j := 0; j < m.depth && j < len(r.stack); j++ {
			c := &r.stack[j]
			if !c.used {
				r.out = append(r.out, c.first...)
				c.used = true
			} else {
				r.out = append(r.out, c.rest...)
			}
		}
		r.out = append(r.out, "⟨"...)
		r.out = append(r.out, m.sel...)
		r.out = append(r.out, "⟩"...)
		wrote = true
	}
	return wrote
}

func (r *renderer) appendMark(sel string) {
	if sel != "" {
		r.inl = append(r.inl, "⟨"...)
		r.inl = append(r.inl, sel...)
		r.inl = append(r.inl, "⟩"...)
	}
}

// trailMark ends the pending line with a mark, when there is a line.
func (r *renderer) trailMark(sel string) {
	if sel == "" || len(bytes.TrimSpace(r.inl)) == 0 {
		return
	}
	r.inl = append(trimRightSpace(r.inl), ' ')
	r.appendMark(sel)
	r.space = false
}

// spaceBefore writes the white space pending before an inline element.
func (r *renderer) spaceBefore() {
	if r.space && len(r.inl) > 0 && r.inl[len(r.inl)-1] != '\n' {
		r.inl = append(r.inl, ' ')
	}
	r.space = false
}

// walkCapture renders what a capture shows differently from web_fetch, and says
// whether it did.
func (r *renderer) walkCapture(n *node) bool {
	x := n.x
	if x == nil {
		x = &nodeX{}
	}
	sel := markable(x.sel)
	if sel == r.skipMark {
		sel = ""
	}
	switch n.a {
	case atom.Label:
		// Each label with its control on a line of its own, as forms are read.
		r.flush()
		r.walkChildren(n)
		r.flush()
		return true
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		r.flush()
		r.walkChildren(n)
		r.trailMark(sel)
		if t := r.takeBytes(); len(t) > 0 {
			for i, c := range t {
				if c == '\n' {
					t[i] = ' '
				}
			}
			r.block("######"[:n.a.String()[1]-'0']+" ", t, false)
		}
		return true
	case atom.P:
		// A paragraph is read, not acted on: its mark cost more tokens than any
		// call it served (the headings and the blocks around it are marked).
		r.flush()
		r.walkChildren(n)
		r.flush()
		return true
	case atom.A:
		r.link(n, x, sel)
		return true
	case atom.Img:
		if alt := collapse(x.alt); alt != "" {
			r.spaceBefore()
			r.inl = append(r.inl, "!["...)
			r.inl = append(r.inl, alt...)
			r.inl = append(r.inl, ']')
			// An image's address is kept when short: a CDN's long resizing URLs say
			// nothing a reader needs, and cost more than the alt text.
			if src := linkTarget(x.src); src != "" && len(src) <= maxImageSrc && (strings.HasPrefix(src, "http") || strings.HasPrefix(src, "/")) {
				r.inl = append(r.inl, '(')
				r.inl = append(r.inl, src...)
				r.inl = append(r.inl, ')')
			}
		}
		return true
	case atom.Input, atom.Button, atom.Select, atom.Textarea:
		if c := control(n, x); c != "" {
			r.spaceBefore()
			r.inl = append(r.inl, c...)
			r.appendMark(sel)
		}
		return true
	case atom.Option, atom.Optgroup:
		return true // rendered by their <select>
	case atom.Iframe:
		r.flush()
		line := "[iframe" + attr("src", linkTarget(x.src)) + " (another origin: not captured)]"
		if sel != "" {
			line += "⟨" + sel + "⟩"
		}
		r.block("", []byte(line), true)
		return true
	case 0:
		if x.tag == "ferry-frame" {
			r.flush()
			line := "[frame" + attr("src", linkTarget(x.src)) + "]"
			if sel != "" {
				line += "⟨" + sel + "⟩"
			}
			r.block("", []byte(line), true)
			r.walkChildren(n)
			r.flush()
			r.block("", []byte("[/frame]"), true)
			return true
		}
		return false
	}
	if sel != "" && markedBlock(n.a) {
		r.flush()
		i := len(r.marks)
		r.marks = append(r.marks, mark{sel: sel, depth: len(r.stack)})
		r.element(n)
		r.flush()
		r.marks = r.marks[:i]
		return true
	}
	return false
}

// link writes [text](target)⟨selector⟩; a link wrapped around blocks (a card) has
// its blocks rendered and the link written after them.
func (r *renderer) link(n *node, x *nodeX, sel string) {
	href := linkTarget(x.href)
	if strings.HasPrefix(href, "#") && n.textLen <= 4 && permalinkSymbol(innerText(n)) {
		return
	}
	if n.flags&hasBlockChild != 0 {
		r.walkChildren(n)
		if href != "" || sel != "" {
			r.spaceBefore()
			r.inl = append(r.inl, "[↗]"...)
			if href != "" {
				r.inl = append(r.inl, '(')
				r.inl = append(r.inl, href...)
				r.inl = append(r.inl, ')')
			}
			r.appendMark(sel)
		}
		return
	}
	if href == "" && sel == "" {
		r.walkChildren(n)
		return
	}
	r.spaceBefore()
	start := len(r.inl)
	r.inl = append(r.inl, '[')
	r.walkChildren(n)
	if len(r.inl) <= start || r.inl[start] != '[' {
		return // a block inside flushed the line
	}
	text := bytes.TrimSpace(r.inl[start+1:])
	if len(text) == 0 {
		label := collapse(x.label)
		if label == "" {
			label = collapse(x.title)
		}
		if label == "" {
			label = "link"
		}
		r.inl = append(r.inl[:start+1], label...)
	} else {
		r.inl = append(r.inl[:start+1], text...)
	}
	r.space = false
	r.inl = append(r.inl, ']')
	if href != "" {
		r.inl = append(r.inl, '(')
		r.inl = append(r.inl, href...)
		r.inl = append(r.inl, ')')
	}
	if followable(href) {
		// The target is the action: opening it needs no selector.
		return
	}
	r.appendMark(sel)
}

// followable says whether a link's target leads to another page, which opening
// the target reaches; a link without one, or to a place in this page, acts
// through the page's script and is clicked by its selector.
func followable(href string) bool {
	return href != "" && !strings.HasPrefix(href, "#")
}

// linkTarget is a link's target as written in Markdown: javascript: and data: URLs
// say nothing a reader can use, and white space or parentheses would end it early.
func linkTarget(href string) string {
	l := strings.ToLower(href)
	if href == "" || strings.HasPrefix(l, "javascript:") || strings.HasPrefix(l, "data:") || len(href) > 2048 {
		return ""
	}
	if strings.ContainsAny(href, " \t\n\r()<>") {
		href = strings.NewReplacer(" ", "%20", "\t", "", "\n", "", "\r", "", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace(href)
	}
	return untracked(href)
}

// trackingParams are query parameters that only tell a site where a click came
// from: a link reads the same without them, in fewer tokens.
var trackingParams = map[string]bool{
	"fbclid": true, "gclid": true, "dclid": true, "msclkid": true, "yclid": true, "mc_cid": true, "mc_eid": true,
	"_hsenc": true, "_hsmi": true, "igshid": true, "ncid": true, "cmpid": true, "icid": true, "intcmp": true,
	"ito": true, "ocid": true, "spm": true, "ref_src": true,
}

// untracked drops the tracking parameters of a link's query (utm_* and the
// others above), leaving the rest of it as written.
func untracked(href string) string {
	q := strings.IndexByte(href, '?')
	if q < 0 {
		return href
	}
	end := len(href)
	if h := strings.IndexByte(href[q:], '#'); h >= 0 {
		end = q + h
	}
	parts := strings.Split(href[q+1:end], "&")
	kept := parts[:0]
	for _, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if k == "" || strings.HasPrefix(strings.ToLower(k), "utm_") || trackingParams[strings.ToLower(k)] {
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == len(parts) {
		return href
	}
	out := href[:q]
	if len(kept) > 0 {
		out += "?" + strings.Join(kept, "&")
	}
	return out + href[end:]
}

// maxImageSrc bounds the image addresses written after their alt text.
const maxImageSrc = 100

// maxValue bounds a form value or option list written into a control.
const maxValue = 300

// attr writes " key=value", quoting the value unless it is a plain word; nothing
// for an empty value.
func attr(key, v string) string {
	if v == "" {
		return ""
	}
	if n := utf8.RuneCountInString(v); n > maxValue {
		v, _ = TruncateRunes(v, maxValue)
		v += "…"
	}
	plain := true
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			plain = false
			break
		}
	}
	if plain {
		return " " + key + "=" + v
	}
	return " " + key + "=" + strconv.Quote(v)
}

func boolAttr(name string, on bool) string {
	if on {
		return " " + name
	}
	return ""
}

// control writes a form control as [kind attributes]: its name, label, value and
// state, what a person sees and what an agent needs to fill it.
func control(n *node, x *nodeX) string {
	common := func() string {
		return attr("name", x.name) + attr("label", collapse(x.label)) + boolAttr("disabled", x.disabled) +
			boolAttr("readonly", x.readonly) + boolAttr("required", x.required)
	}
	switch n.a {
	case atom.Button:
		text := collapse(innerText(n))
		if text == "" {
			text = collapse(x.label)
		}
		if text == "" {
			text = collapse(x.title)
		}
		return "[button" + attr("text", text) + attr("name", x.name) + boolAttr("disabled", x.disabled) + "]"
	case atom.Textarea:
		v := x.value
		if !x.hasValue {
			v = innerText(n)
		}
		return "[textarea" + common() + attr("placeholder", collapse(x.placeholder)) + attr("value", v) + "]"
	case atom.Select:
		return selectControl(n, x, common())
	}
	typ := x.typ
	switch typ {
	case "", "text":
		typ = ""
	case "submit", "button", "reset", "image":
		text := x.value
		if text == "" {
			text = x.alt
		}
		if text == "" && typ != "image" {
			text = typ
		}
		return "[button" + attr("text", collapse(text)) + attr("name", x.name) + boolAttr("disabled", x.disabled) + "]"
	case "checkbox", "radio":
		return "[" + typ + common() + attr("value", x.value) + boolAttr("checked", x.checked) + "]"
	case "password":
		// The secret itself never goes to the model; that it is filled is enough.
		filled := ""
		if x.value != "" {
			filled = " filled"
		}
		return "[input type=password" + common() + filled + "]"
	case "file":
		return "[input type=file" + common() + boolAttr("multiple", x.multiple) + "]"
	}
	s := "[input"
	if typ != "" {
		s += attr("type", typ)
	}
	return s + common() + attr("placeholder", collapse(x.placeholder)) + attr("value", x.value) + "]"
}

// maxOptions bounds the options listed for a select (a country list has 250).
const maxOptions = 30

func selectControl(n *node, x *nodeX, common string) string {
	var opts, selected []string
	more := 0
	var walk func(*node)
	walk = func(p *node) {
		for c := p.first; c != nil; c = c.next {
			switch c.a {
			case atom.Option:
				text := collapse(innerText(c))
				if text == "" && c.x != nil {
					text = c.x.value
				}
				if c.x != nil && c.x.selected {
					selected = append(selected, text)
				}
				if len(opts) < maxOptions {
					opts = append(opts, strconv.Quote(text))
				} else {
					more++
				}
			case atom.Optgroup:
				walk(c)
			}
		}
	}
	walk(n)
	if len(selected) == 0 {
		switch {
		case x.hasValue:
			selected = []string{x.value}
		case !x.multiple && len(opts) > 0:
			s, _ := strconv.Unquote(opts[0]) // a single select shows its first option
			selected = []string{s}
		}
	}
	list := strings.Join(opts, ",")
	if more > 0 {
		list += ",…+" + strconv.Itoa(more) + " more"
	}
	s := "[select" + common + boolAttr("multiple", x.multiple)
	if len(selected) > 0 {
		s += attr("value", strings.Join(selected, ", "))
	}
	return s + " options=[" + list + "]]"
}
