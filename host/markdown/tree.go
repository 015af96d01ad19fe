package markdown

import (
	"bytes"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The extractor builds its own light tree from html.Tokenizer instead of using
// html.Parse: on the 2 MB benchmark page the full HTML5 tree construction alone takes
// as long as this whole extraction (about 68 MB/s against the tokenizer's 250 MB/s on
// an idle machine, and under half that on a loaded one), which would leave the
// 20 MB/s target no margin. The builder below applies the implied-end-tag rules that
// matter for text (p, li, dt/dd, table rows and cells, headings, nested a) and
// otherwise trusts the markup; for picking and rendering the main text that is as
// good as the spec's tree, and real pages' errors are mostly the kinds handled here.

type node struct {
	parent, first, last, next *node

	text      string // text nodes
	class, id string
	a         atom.Atom // 0 for text nodes and unknown elements

	// measures, filled by prune()
	textLen, linkLen, commas int
	colspan, start           int32
	score                    float32

	// x holds what only a browser capture needs (selectors, links, form state);
	// nil for web_fetch, whose nodes stay small.
	x *nodeX

	isText       bool
	drop         bool // hidden, aria-hidden, display:none, or a boilerplate ARIA role
	mainRole     bool // role=main
	presentation bool // role=presentation/none (layout tables)
	scored       bool
	flags        uint8
}

const (
	hasMainOrArticle uint8 = 1 << iota
	hasH1
	hasBlockChild
	// hasSolidBlock: a block child other than <br>; a div of text between <br>s is
	// still a paragraph.
	hasSolidBlock
)

// maxDepth bounds the tree so that hostile nesting cannot make the recursive passes
// deep; elements beyond it are attached flat, as browsers do past their own limit.
const maxDepth = 256

// nodeArena hands out nodes from chunks: a 2 MB page has ~100k nodes, and one
// allocation each is a measurable share of the time and of the GC's work.
type nodeArena struct{ chunk []node }

func (ar *nodeArena) new() *node {
	if len(ar.chunk) == 0 {
		ar.chunk = make([]node, 1024)
	}
	n := &ar.chunk[0]
	ar.chunk = ar.chunk[1:]
	return n
}

func (n *node) appendChild(c *node) {
	c.parent = n
	if n.last != nil {
		n.last.next = c
	} else {
		n.first = c
	}
	n.last = c
}

// unlinked records one unlink so that it can be undone (see relink).
type unlinked struct{ p, prev, c *node }

// unlink removes c, whose previous sibling is prev, from p's children, and records
// the removal in log when there is one.
func unlink(p, prev, c *node, log *[]unlinked) {
	if log != nil {
		*log = append(*log, unlinked{p, prev, c})
	}
	if prev == nil {
		p.first = c.next
	} else {
		prev.next = c.next
	}
	if p.last == c {
		p.last = prev
	}
	c.parent, c.next = nil, nil
}

var voidElements = map[atom.Atom]bool{
	atom.Area: true, atom.Base: true, atom.Br: true, atom.Col: true, atom.Embed: true,
	atom.Hr: true, atom.Img: true, atom.Input: true, atom.Link: true, atom.Meta: true,
	atom.Param: true, atom.Source: true, atom.Track: true, atom.Wbr: true,
}

// closesP lists start tags that end an open <p> (HTML standard, "in body" mode).
var closesP = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Center: true, atom.Details: true, atom.Dialog: true, atom.Dir: true, atom.Div: true,
	atom.Dl: true, atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true,
	atom.Footer: true, atom.Form: true, atom.H1: true, atom.H2: true, atom.H3: true,
	atom.H4: true, atom.H5: true, atom.H6: true, atom.Header: true, atom.Hgroup: true,
	atom.Hr: true, atom.Li: true, atom.Dd: true, atom.Dt: true, atom.Main: true,
	atom.Menu: true, atom.Nav: true, atom.Ol: true, atom.P: true, atom.Pre: true,
	atom.Section: true, atom.Summary: true, atom.Table: true, atom.Ul: true,
}

func isHeading(a atom.Atom) bool {
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return true
	}
	return false
}

// scopeBoundary stops the search for an element to close implicitly, so that a <p>
// inside a table cell is not closed by a table outside it.
func scopeBoundary(a atom.Atom) bool {
	switch a {
	case atom.Table, atom.Td, atom.Th, atom.Caption, atom.Html, atom.Button,
		atom.Object, atom.Template, atom.Marquee, atom.Applet:
		return true
	}
	return false
}

type builder struct {
	arena nodeArena
	root  *node
	stack []*node
	title string

	// capture keeps every attribute a capture renders and gives unknown elements
	// (custom elements, <ferry-frame>) their names, so that their end tags close them.
	capture bool
	xs      []nodeX
	sels    []selScope  // capture only: the token stream's open elements (capture.go)
	attrs   [][2]string // capture only: captureAttrs's buffer
}

func (b *builder) top() *node { return b.stack[len(b.stack)-1] }

// closeIn pops to and including the nearest open element for which match is true,
// when one is found before an element for which stop is true.
func (b *builder) closeIn(match, stop func(atom.Atom) bool) {
	for i := len(b.stack) - 1; i > 0; i-- {
		a := b.stack[i].a
		if match(a) {
			b.stack = b.stack[:i]
			return
		}
		if stop(a) {
			return
		}
	}
}

func is(want ...atom.Atom) func(atom.Atom) bool {
	return func(a atom.Atom) bool {
		for _, w := range want {
			if a == w {
				return true
			}
		}
		return false
	}
}

var (
	isP       = is(atom.P)
	isLi      = is(atom.Li)
	isDtDd    = is(atom.Dt, atom.Dd)
	isCell    = is(atom.Td, atom.Th)
	isSection = is(atom.Thead, atom.Tbody, atom.Tfoot, atom.Tr, atom.Td, atom.Th)
	isA       = is(atom.A)
	isOption  = is(atom.Option)
	listStop  = func(a atom.Atom) bool { return scopeBoundary(a) || a == atom.Ol || a == atom.Ul }
	dlStop    = func(a atom.Atom) bool { return scopeBoundary(a) || a == atom.Dl }
	tableStop = func(a atom.Atom) bool { return a == atom.Table || a == atom.Html }
	rowStop   = func(a atom.Atom) bool { return a == atom.Tr || a == atom.Table || a == atom.Html }
	never     = func(atom.Atom) bool { return false }
)

func parseTree(src string) *builder { return parse(src, false) }

func parse(src string, capture bool) *builder {
	b := &builder{capture: capture}
	b.root = b.arena.new()
	b.root.a = atom.Html
	b.stack = append(b.stack, b.root)
	z := html.NewTokenizer(strings.NewReader(src))
	var inTitle bool
	off := 0 // where the current token starts in src
	for {
		tt := z.Next()
		raw := z.Raw()
		start := off
		off += len(raw)
		switch tt {
		case html.ErrorToken:
			return b
		case html.TextToken:
			var t string
			if end := start + len(raw); !inTitle && end <= len(src) && src[start:end] == string(raw) && literal(raw) {
				// Most text needs no unescaping: share src instead of copying, which
				// saves an allocation per text node.
				t = src[start:end]
			} else {
				t = string(z.Text())
			}
			if inTitle {
				if b.title == "" {
					b.title = collapse(t)
				}
				continue
			}
			if len(t) == 0 {
				continue
			}
			// Adjacent text tokens (split by comments) stay separate nodes: joining
			// them would copy the text again for every comment, quadratic on a page
			// built to be slow.
			n := b.arena.new()
			n.isText = true
			n.text = t
			b.top().appendChild(n)
		case html.StartTagToken, html.SelfClosingTagToken:
			a, hasAttr := tagAtom(raw), bytes.IndexByte(raw, '=') > 0 || bytes.Contains(raw, []byte("hidden"))
			if a == atom.Title && !b.inSVG() {
				inTitle = tt == html.StartTagToken
				continue
			}
			b.implyEnds(a)
			n := b.arena.new()
			n.a = a
			var name string
			if b.capture {
				// Boolean attributes (checked, selected, disabled) have no "=".
				hasAttr = true
				// A known element's name is its atom's (no copy); the tokenizer's
				// TagName copies and can be read only once per token.
				if a != 0 {
					name = a.String()
				} else {
					nb, _ := z.TagName()
					name = string(nb)
					b.ext(n).tag = name
				}
			}
			if b.capture && off <= len(src) {
				// The extension writes its attributes in one plain form (k='v' or a
				// bare k): read them from src, sharing its memory, and leave the
				// tokenizer's copies for anything else.
				var ok bool
				if b.attrs, ok = captureAttrs(src[start:off], b.attrs[:0]); ok {
					for _, kv := range b.attrs {
						setAttr(n, kv[0], kv[1])
						setCaptureAttr(b, n, kv[0], kv[1])
					}
					hasAttr = false
				}
			}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				setAttr(n, k, v)
				if b.capture {
					setCaptureAttr(b, n, k, v)
				}
			}
			if b.capture && tt == html.StartTagToken {
				b.openSel(name, n)
			}
			b.top().appendChild(n)
			if tt == html.StartTagToken && !voidElements[a] && len(b.stack) < maxDepth {
				b.stack = append(b.stack, n)
			}
		case html.EndTagToken:
			a := tagAtom(raw)
			if b.capture {
				if a != 0 {
					b.closeSel(a.String())
				} else {
					name, _ := z.TagName()
					b.closeSel(string(name))
				}
			}
			switch a {
			case atom.Title:
				if inTitle {
					inTitle = false
					continue
				}
			case atom.Br: // </br> is a <br> to browsers
				n := b.arena.new()
				n.a = atom.Br
				b.top().appendChild(n)
				continue
			case 0:
				if b.capture {
					b.closeUnknown(raw)
				}
				continue
			case atom.Body, atom.Html:
				// Content after </body> still belongs to the body; an unknown
				// element's end tag has no atom to match, so it is ignored.
				continue
			}
			b.closeIn(is(a), never)
		}
	}
}

// tagAtom reads the tag name from a start or end tag's raw text. The tokenizer's
// TagName would do, but it copies the name on every call: one allocation per tag,
// a third of all the extractor's allocations on a large page.
func tagAtom(raw []byte) atom.Atom {
	i := 1
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	var buf [16]byte
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '/' || c == '>' {
			break
		}
		if n == len(buf) {
			return 0 // longer than any known element name
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return atom.Lookup(buf[:n])
}

// literal reports whether the tokenizer's text for raw is raw itself.
func literal(raw []byte) bool {
	return bytes.IndexByte(raw, '&') < 0 && bytes.IndexByte(raw, '\r') < 0 && bytes.IndexByte(raw, 0) < 0
}

func (b *builder) inSVG() bool {
	for _, n := range b.stack {
		if n.a == atom.Svg {
			return true
		}
	}
	return false
}

func (b *builder) implyEnds(a atom.Atom) {
	if closesP[a] {
		b.closeIn(isP, scopeBoundary)
	}
	switch {
	case a == atom.Li:
		b.closeIn(isLi, listStop)
	case a == atom.Dt || a == atom.Dd:
		b.closeIn(isDtDd, dlStop)
	case a == atom.Tr:
		b.closeIn(is(atom.Tr), tableStop)
	case a == atom.Td || a == atom.Th:
		b.closeIn(isCell, rowStop)
	case a == atom.Thead || a == atom.Tbody || a == atom.Tfoot:
		b.closeIn(isSection, tableStop)
	case a == atom.A:
		b.closeIn(isA, never)
	case a == atom.Option:
		b.closeIn(isOption, never)
	case isHeading(a):
		if isHeading(b.top().a) {
			b.stack = b.stack[:len(b.stack)-1]
		}
	}
}

func setAttr[T string | []byte](n *node, k, v T) {
	switch string(k) {
	case "class":
		n.class = string(v)
	case "id":
		n.id = string(v)
	case "role":
		switch role := strings.ToLower(strings.TrimSpace(string(v))); {
		case role == "main":
			n.mainRole = true
		case role == "presentation" || role == "none":
			n.presentation = true
		case dropRoles[role]:
			n.drop = true
		}
	case "style":
		if styleHides(v) {
			n.drop = true
		}
	case "hidden":
		n.drop = true
	case "aria-hidden":
		if strings.EqualFold(strings.TrimSpace(string(v)), "true") {
			n.drop = true
		}
	case "colspan":
		if c, err := strconv.Atoi(strings.TrimSpace(string(v))); err == nil && c > 1 {
			n.colspan = int32(min(c, 100))
		}
	case "start":
		if c, err := strconv.Atoi(strings.TrimSpace(string(v))); err == nil && c > -1e9 && c < 1e9 {
			n.start = int32(c)
		}
	}
}

func styleHides[T string | []byte](v T) bool {
	s := strings.ReplaceAll(strings.ToLower(string(v)), " ", "")
	return strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden")
}

// captureAttrs reads a start tag's attributes (tag is its raw text) when they are
// all in the form the extension writes: ` k='v'` (or ` k="v"`) with k in [a-z0-9-] and v free of
// entities, carriage returns and NULs, or a bare ` k`; no key twice. The values are
// substrings of tag. ok is false for anything else, which the tokenizer then reads.
func captureAttrs(tag string, out [][2]string) (_ [][2]string, ok bool) {
	i := 1
	for i < len(tag) && tag[i] != ' ' && tag[i] != '>' {
		switch tag[i] {
		case '/', '\t', '\n', '\r', '\f', 0:
			return out, false
		}
		i++
	}
	for {
		if i >= len(tag) {
			return out, false
		}
		if tag[i] == '>' {
			return out, i == len(tag)-1
		}
		if tag[i] != ' ' {
			return out, false
		}
		i++
		ks := i
		for i < len(tag) && (tag[i] >= 'a' && tag[i] <= 'z' || tag[i] >= '0' && tag[i] <= '9' || tag[i] == '-') {
			i++
		}
		if i == ks || i >= len(tag) {
			return out, false
		}
		k, v := tag[ks:i], ""
		if tag[i] == '=' {
			if i+1 >= len(tag) || tag[i+1] != '\'' && tag[i+1] != '"' {
				return out, false
			}
			j := strings.IndexByte(tag[i+2:], tag[i+1])
			if j < 0 {
				return out, false
			}
			v = tag[i+2 : i+2+j]
			if strings.IndexByte(v, '&') >= 0 || strings.IndexByte(v, '\r') >= 0 || strings.IndexByte(v, 0) >= 0 {
				return out, false
			}
			i += 2 + j + 1
		}
		for _, kv := range out {
			if kv[0] == k {
				return out, false
			}
		}
		out = append(out, [2]string{k, v})
	}
}
