package markdown

// The main-region choice of get_tab_content (capture.go): what a rendered page
// shows as its main content, picked on the capture's own tree. web_fetch reads
// articles with go-readability instead (extract.go); a capture is not handed to it
// because Readability rewrites the document it reads (it drops the form controls and
// the selectors the agent acts on) and is an order of magnitude slower on a large
// DOM than this one pass over the tree.

import (
	"strings"

	"golang.org/x/net/html/atom"
)

func findFirst(n *node, match func(*node) bool) *node {
	for c := n.first; c != nil; c = c.next {
		if c.isText {
			continue
		}
		if match(c) {
			return c
		}
		if f := findFirst(c, match); f != nil {
			return f
		}
	}
	return nil
}

// ---- pruning ----

var dropTags = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: false, atom.Canvas: true, atom.Iframe: true,
	atom.Object: true, atom.Embed: true, atom.Audio: true, atom.Video: true,
	atom.Map: true, atom.Head: true, atom.Link: true, atom.Meta: true, atom.Base: true,
	atom.Button: true, atom.Input: true, atom.Select: true, atom.Textarea: true,
	atom.Option: true, atom.Datalist: true, atom.Nav: true, atom.Aside: true,
	atom.Footer: true, atom.Dialog: true, atom.Menu: true, atom.Img: true,
	atom.Picture: true, atom.Source: true, atom.Track: true, atom.Param: true,
	atom.Frameset: true, atom.Noframes: true,
}

var dropRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "complementary": true,
	"search": true, "dialog": true, "alertdialog": true, "menu": true, "menubar": true,
	"toolbar": true, "tablist": true, "tooltip": true,
}

// hiddenClasses are whole class names (not tokens: "hidden-xs" is a responsive
// layout class, not a hidden element) that CSS frameworks use to hide content or to
// keep it for screen readers only ("Skip to content").
var hiddenClasses = map[string]bool{
	"hidden": true, "hide": true, "d-none": true, "sr-only": true, "visually-hidden": true,
	"visuallyhidden": true, "screen-reader-text": true, "offscreen": true, "is-hidden": true,
}

func dropHard(n *node, inContent bool) bool {
	if dropTags[n.a] || n.drop {
		return true
	}
	switch n.a {
	case atom.Header:
		// A page's header goes; an article's own header holds its title and byline.
		if !inContent {
			return true
		}
	case atom.Form:
		// ASP.NET and similar wrap the whole page in one <form>; only a form that is
		// a form (search boxes, sign-ups) is dropped.
		if !wrapsContent(n) {
			return true
		}
	}
	return hiddenByClass(n)
}

func hiddenByClass(n *node) bool {
	if n.class != "" {
		for _, c := range strings.Fields(n.class) {
			if hiddenClasses[strings.ToLower(c)] {
				return true
			}
		}
	}
	return false
}

func wrapsContent(form *node) bool {
	paragraphs := 0
	var scan func(*node) bool
	scan = func(n *node) bool {
		for c := n.first; c != nil; c = c.next {
			switch c.a {
			case atom.Main, atom.Article:
				return true
			case atom.P:
				if paragraphs++; paragraphs >= 3 {
					return true
				}
			}
			if scan(c) {
				return true
			}
		}
		return false
	}
	return scan(form)
}

// noiseTokens are class/id words that name boilerplate. They are matched as whole
// tokens of the class and id ("ad" in "ad-slot", not in "header" or "read-more").
var noiseTokens = map[string]bool{
	"nav": true, "navbar": true, "navigation": true, "menu": true, "sidebar": true,
	"breadcrumb": true, "breadcrumbs": true, "footer": true, "masthead": true,
	"cookie": true, "cookies": true, "consent": true, "gdpr": true,
	"ad": true, "ads": true, "advert": true, "adverts": true, "advertisement": true,
	"adsbygoogle": true, "sponsor": true, "sponsored": true, "promo": true,
	"newsletter": true, "subscribe": true, "share": true, "sharing": true,
	"social": true, "related": true, "recommended": true, "popup": true, "modal": true,
	"banner": true, "comments": true, "comment": true, "disqus": true, "toc": true,
	"skip": true, "pagination": true, "pager": true, "widget": true, "signup": true,
	"login": true, "outbrain": true, "taboola": true, "paywall": true, "toolbar": true,
	// Portuguese, Italian, German and French names of a footer.
	"rodape": true, "piede": true, "fusszeile": true, "pied": true,
}

// noiseSubstrings catch the same words inside compound names ("cookieBanner",
// "newsletterSignup") where they cannot be mistaken for anything else.
var noiseSubstrings = []string{"cookie", "advert", "sponsor", "taboola", "outbrain",
	"newsletter", "sidebar", "consent", "breadcrumb", "adsbygoogle", "social", "rodape"}

var positiveTokens = map[string]bool{
	"article": true, "body": true, "content": true, "entry": true, "main": true,
	"post": true, "text": true, "blog": true, "story": true, "prose": true,
	"markdown": true, "doc": true, "docs": true, "documentation": true,
}

var negativeTokens = map[string]bool{
	"meta": true, "footnote": true, "hidden": true, "widget": true, "extra": true,
	"aside": true, "more": true, "tags": true, "author": true,
}

// classTokens calls f with each lower-case word of the class and id attributes until
// f returns true.
func classTokens(n *node, f func(string) bool) bool {
	var buf [48]byte
	for _, s := range [2]string{n.class, n.id} {
		i := 0
		for i < len(s) {
			for i < len(s) && !isAlnum(s[i]) {
				i++
			}
			j := i
			for j < len(s) && isAlnum(s[j]) {
				j++
			}
			if j > i && j-i <= len(buf) {
				t := buf[:0]
				for k := i; k < j; k++ {
					c := s[k]
					if c >= 'A' && c <= 'Z' {
						c += 'a' - 'A'
					}
					t = append(t, c)
				}
				if f(string(t)) {
					return true
				}
			}
			i = j
		}
	}
	return false
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func noisy(n *node) bool {
	if n.class == "" && n.id == "" {
		return false
	}
	if classTokens(n, func(t string) bool { return noiseTokens[t] }) {
		return true
	}
	for _, s := range [2]string{n.class, n.id} {
		if s == "" {
			continue
		}
		l := strings.ToLower(s)
		for _, w := range noiseSubstrings {
			if strings.Contains(l, w) {
				return true
			}
		}
	}
	return false
}

// softPrune drops blocks whose class or id names them as boilerplate, unless the block
// holds the page's main content: it contains <main>, <article> or the <h1>, or more
// than 30% of the page's text (a wrapper named "page has-sidebar", say). It collects
// the <main> and top-level <article> elements that remain on the way.
func (ch *chooser) softPrune(n *node, inArticle bool) {
	var prev *node
	for c := n.first; c != nil; {
		next := c.next
		if c.isText {
			prev, c = c, next
			continue
		}
		if noisy(c) && !protectedBlock(c, ch.total) {
			for p := c.parent; p != nil; p = p.parent {
				p.textLen -= c.textLen
				p.linkLen -= c.linkLen
				p.commas -= c.commas
			}
			unlink(n, prev, c, ch.log)
			c = next
			continue
		}
		switch {
		case c.a == atom.Main || c.mainRole:
			ch.mains = append(ch.mains, c)
		case c.a == atom.Article && !inArticle:
			// Articles inside an article are its comments or embeds.
			ch.articles = append(ch.articles, c)
		}
		ch.softPrune(c, inArticle || c.a == atom.Article)
		prev, c = c, next
	}
}

type chooser struct {
	total           int
	mains, articles []*node
	log             *[]unlinked // nil unless the caller will undo the pruning
}

func protectedBlock(n *node, total int) bool {
	switch n.a {
	case atom.Body, atom.Html, atom.Main, atom.Article, atom.H1:
		return true
	}
	return n.mainRole || n.flags&(hasMainOrArticle|hasH1) != 0 || n.textLen*10 > total*3
}

// ---- measuring and choosing ----

func isBlock(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.Footer,
		atom.Aside, atom.Nav, atom.Figure, atom.Figcaption, atom.Address, atom.Details,
		atom.Summary, atom.Dl, atom.Dt, atom.Dd, atom.Hgroup, atom.Fieldset, atom.Legend,
		atom.Caption, atom.Center, atom.Form, atom.Body, atom.Html, atom.Tr, atom.Td,
		atom.Th, atom.Li, atom.Hr, atom.Ul, atom.Ol, atom.Table, atom.Pre,
		atom.Blockquote, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6,
		atom.Thead, atom.Tbody, atom.Tfoot, atom.Br:
		return true
	}
	return false
}

// pruner says which elements prune drops (the main-region choice's dropHard, a
// capture's dropCaptured, a whole page's dropNever) and where it records the
// removals when they are to be undone. drop is told whether the element is inside
// an article or main region.
type pruner struct {
	drop func(*node) bool
	log  *[]unlinked
	// hard drops with dropHard, which needs to know whether the element is inside
	// the content (an article's own <header> stays).
	hard bool
}

// prune drops what is never content (dropHard) and measures what stays, in one
// post-order pass: text length, link text length, commas, and flags for <main>,
// <article>, <h1> and block children.
func prune(n *node, inContent bool, p pruner) {
	n.textLen, n.linkLen, n.commas, n.flags = 0, 0, 0, 0
	var prev *node
	for c := n.first; c != nil; {
		next := c.next
		if c.isText {
			l, cm := textStats(c.text)
			n.textLen += l
			n.commas += cm
			prev, c = c, next
			continue
		}
		if p.hard && dropHard(c, inContent) || !p.hard && p.drop(c) {
			unlink(n, prev, c, p.log)
			c = next
			continue
		}
		prune(c, inContent || c.a == atom.Article || c.a == atom.Main || c.mainRole, p)
		n.textLen += c.textLen
		n.linkLen += c.linkLen
		n.commas += c.commas
		n.flags |= c.flags & (hasMainOrArticle | hasH1)
		switch {
		case c.a == atom.Main || c.a == atom.Article || c.mainRole:
			n.flags |= hasMainOrArticle
		case c.a == atom.H1:
			n.flags |= hasH1
		}
		if isBlock(c.a) {
			n.flags |= hasBlockChild
			if c.a != atom.Br {
				n.flags |= hasSolidBlock
			}
		}
		prev, c = c, next
	}
	if n.a == atom.A {
		n.linkLen = n.textLen
	}
}

// textStats counts the bytes of s that are not white space, and its commas (Latin,
// and the full-width and ideographic ones of CJK text).
func textStats(s string) (length, commas int) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r', '\f':
		case ',':
			length++
			commas++
		case 0xEF: // ，U+FF0C is EF BC 8C
			length++
			if i+2 < len(s) && s[i+1] == 0xBC && s[i+2] == 0x8C {
				commas++
			}
		case 0xE3: // 、U+3001 is E3 80 81
			length++
			if i+2 < len(s) && s[i+1] == 0x80 && s[i+2] == 0x81 {
				commas++
			}
		default:
			length++
		}
	}
	return length, commas
}

func linkDensity(n *node) float64 {
	if n.textLen <= 0 {
		return 0
	}
	return float64(n.linkLen) / float64(n.textLen)
}

// choice is the main region picked, with how sure the pick is.
type choice struct {
	roots []*node
	// share is the part of the page's content text (what is left after
	// navigation, asides and boilerplate-named blocks are set aside) the roots hold.
	share float64
	// rival is the score of the best candidate outside the roots as a share of the
	// winner's (0 when the page's own markup, <main> or <article>, decided).
	rival float64
}

func chooseMain(body *node, log *[]unlinked) choice {
	ch := &chooser{total: body.textLen, log: log}
	ch.softPrune(body, false)
	total := body.textLen
	if total <= 0 {
		return choice{roots: []*node{body}, share: 1}
	}
	mains, articles := ch.mains, ch.articles
	substantial := func(n *node) bool { return n.textLen*4 >= total || n.textLen >= 500 }
	all := prose(body)
	of := func(roots []*node, rival float64) choice {
		n := 0
		for _, r := range roots {
			n += prose(r)
		}
		if all == 0 {
			return choice{roots: roots, share: 1, rival: rival}
		}
		return choice{roots: roots, share: min(1, float64(n)/float64(all)), rival: rival}
	}

	if m := largest(mains); m != nil && substantial(m) {
		return of([]*node{m}, 0)
	}
	if a := largest(articles); a != nil && substantial(a) {
		sum := 0
		for _, x := range articles {
			sum += x.textLen
		}
		if len(articles) > 1 && a.textLen*2 < sum {
			// A listing of several articles: keep them all, in order.
			return of([]*node{commonAncestor(articles)}, 0)
		}
		return of([]*node{a}, 0)
	}
	roots, cands := scoreMain(body)
	c := grow(of(roots, 0), body, all, of)
	c.rival = rivalOf(c.roots, cands)
	return c
}

// coverShare is the part of the page's prose a scored pick is grown to hold.
// Measured on Readability's test pages (tests/corpus) in Chromium: the scored
// pick alone lost most of four articles; grown to 0.7 it loses none, and a
// higher share only costs tokens (0.8: 1% more, 0.9: 3%).
const coverShare = 0.7

// grow widens a scored pick that holds too little of the page's prose to the
// nearest enclosing block that holds enough: an article whose text the scoring
// found only part of (a lead paragraph, one of several text columns) is read
// whole, without the navigation and footers around it.
func grow(c choice, body *node, all int, of func([]*node, float64) choice) choice {
	if c.share >= coverShare || len(c.roots) == 0 {
		return c
	}
	n := c.roots[0]
	if len(c.roots) > 1 {
		n = n.parent
	}
	for n != nil && n != body {
		if float64(prose(n)) >= coverShare*float64(all) {
			return of([]*node{n}, c.rival)
		}
		n = n.parent
	}
	return c
}

// prose is the length of the text of n's paragraphs: blocks of running text (not
// lists of links, not headings), which is what an article is made of, and the text
// written straight into n beside its blocks (an article of text and <br>s around a
// figure), which is a paragraph too.
func prose(n *node) int { return proseOf(n, true) }

// paragraphs is prose without the loose text: only blocks of running text.
func paragraphs(n *node) int { return proseOf(n, false) }

func proseOf(n *node, withLoose bool) int {
	sum := 0
	for c := n.first; c != nil; c = c.next {
		if c.isText || !isBlock(c.a) && !isHeading(c.a) && !paragraphLike(c) {
			continue
		}
		if paragraphLike(c) {
			if c.textLen >= 25 && linkDensity(c) < 0.5 {
				sum += c.textLen
			}
			continue
		}
		sum += proseOf(c, withLoose)
	}
	if !withLoose {
		return sum
	}
	if l, _, links := loose(n); l >= 25 && links*2 < l {
		sum += l
	}
	return sum
}

// loose measures the text of n that no block child holds: its text nodes and
// inline elements (length, commas, link text).
func loose(n *node) (length, commas, links int) {
	if n.flags&hasSolidBlock == 0 {
		return 0, 0, 0 // n is a paragraph itself, measured whole
	}
	for c := n.first; c != nil; c = c.next {
		switch {
		case c.isText:
			l, cm := textStats(c.text)
			length += l
			commas += cm
		case !isBlock(c.a) && !isHeading(c.a) && !paragraphLike(c):
			length += c.textLen
			commas += c.commas
			links += c.linkLen
		}
	}
	return length, commas, links
}

func largest(ns []*node) *node {
	var best *node
	for _, n := range ns {
		if best == nil || n.textLen > best.textLen {
			best = n
		}
	}
	return best
}

func commonAncestor(ns []*node) *node {
	depth := func(n *node) int {
		d := 0
		for ; n.parent != nil; n = n.parent {
			d++
		}
		return d
	}
	a := ns[0]
	for _, b := range ns[1:] {
		da, db := depth(a), depth(b)
		for ; da > db; da-- {
			a = a.parent
		}
		for ; db > da; db-- {
			b = b.parent
		}
		for a != b {
			a, b = a.parent, b.parent
		}
	}
	return a
}

// finalScore is a candidate's score discounted by its share of link text.
func finalScore(n *node) float64 { return float64(n.score) * (1 - linkDensity(n)) }

func paragraphLike(n *node) bool {
	switch n.a {
	case atom.P, atom.Pre, atom.Td, atom.Blockquote, atom.Dd:
		return true
	case atom.Div, atom.Section, atom.Span, 0:
		// Text written straight into a div is a paragraph in all but name, lines
		// broken with <br> or not.
		return n.flags&hasSolidBlock == 0
	}
	return false
}

func classWeight(n *node) float64 {
	w := 0.0
	if classTokens(n, func(t string) bool { return positiveTokens[t] }) {
		w += 25
	}
	if classTokens(n, func(t string) bool { return negativeTokens[t] }) {
		w -= 25
	}
	return w
}

func initialScore(n *node) float64 {
	s := classWeight(n)
	switch n.a {
	case atom.Div, atom.Article, atom.Main, atom.Section:
		s += 5
	case atom.Pre, atom.Td, atom.Blockquote:
		s += 3
	case atom.Address, atom.Ol, atom.Ul, atom.Dl, atom.Dd, atom.Dt, atom.Li, atom.Form:
		s -= 3
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Th:
		s -= 5
	}
	return s
}

// scoreMain is a small version of Readability's scoring: every paragraph-like block
// of some length gives points (one, one per comma, one per 100 bytes up to three) to
// its parent, half to its grandparent and a third to the level above; a candidate's
// score is then discounted by its share of link text. The best candidate is kept
// with those of its siblings that score close to it or are prose paragraphs, so that
// content split over sibling blocks is not cut.
func scoreMain(body *node) (keep, cands []*node) {
	add := func(n *node, s float64) {
		if n == nil {
			return
		}
		if !n.scored {
			n.scored = true
			n.score = float32(initialScore(n))
			cands = append(cands, n)
		}
		n.score += float32(s)
	}
	// give scores a paragraph's points to its container p, half to the block
	// above and a third to the one above that.
	give := func(p *node, s float64) {
		add(p, s)
		if p != body && p.parent != nil {
			add(p.parent, s/2)
			if p.parent != body && p.parent.parent != nil {
				add(p.parent.parent, s/3)
			}
		}
	}
	var walk func(*node)
	walk = func(n *node) {
		for c := n.first; c != nil; c = c.next {
			if c.isText {
				continue
			}
			if paragraphLike(c) && c.textLen >= 25 {
				give(c.parent, 1+float64(c.commas)+min(float64(c.textLen)/100, 3))
			} else if l, cm, links := loose(c); l >= 25 && links*2 < l {
				// Text straight in a block beside other blocks: a paragraph of
				// the block, as Readability wraps it in a <p> of its own.
				give(c, 1+float64(cm)+min(float64(l)/100, 3))
			}
			walk(c)
		}
	}
	walk(body)

	final := finalScore
	var top *node
	for _, c := range cands {
		if top == nil || final(c) > final(top) {
			top = c
		}
	}
	if top == nil || top == body || top.parent == nil {
		return []*node{body}, cands
	}

	threshold := max(10, final(top)*0.2)
	parent := top.parent
	for s := parent.first; s != nil; s = s.next {
		if s.isText {
			continue
		}
		ok := s == top || s.scored && final(s) >= threshold
		if !ok && s.a == atom.P {
			ld := linkDensity(s)
			ok = s.textLen > 80 && ld < 0.25 || s.textLen > 0 && ld == 0 && endsSentence(s)
		}
		if !ok && isHeading(s.a) {
			// A section heading belongs to the block after it.
			if nx := nextElement(s); nx != nil && (nx == top || nx.scored && final(nx) >= threshold) {
				ok = true
			}
		}
		if ok {
			keep = append(keep, s)
		}
	}
	return keep, cands
}

// rivalOf is the best score among the candidates that are no part of the roots
// nor hold them (a second article, a long comment thread, another column of
// text), as a share of the best score within the roots.
func rivalOf(roots, cands []*node) float64 {
	within := func(n *node) bool {
		for ; n != nil; n = n.parent {
			for _, r := range roots {
				if n == r {
					return true
				}
			}
		}
		return false
	}
	holds := func(n *node) bool {
		for _, r := range roots {
			for p := r.parent; p != nil; p = p.parent {
				if p == n {
					return true
				}
			}
		}
		return false
	}
	best, rival := 0.0, 0.0
	for _, c := range cands {
		f := finalScore(c)
		switch {
		case within(c):
			best = max(best, f)
		case !holds(c):
			rival = max(rival, f)
		}
	}
	if best <= 0 {
		return 0
	}
	return rival / best
}

func nextElement(n *node) *node {
	for s := n.next; s != nil; s = s.next {
		if !s.isText {
			return s
		}
	}
	return nil
}

func endsSentence(n *node) bool {
	t := strings.TrimSpace(innerText(n))
	return strings.HasSuffix(t, ".") || strings.HasSuffix(t, "。") || strings.HasSuffix(t, "!") || strings.HasSuffix(t, "?")
}

func innerText(n *node) string {
	var b strings.Builder
	var walk func(*node)
	walk = func(n *node) {
		for c := n.first; c != nil; c = c.next {
			if c.isText {
				b.WriteString(c.text)
			} else {
				walk(c)
			}
		}
	}
	walk(n)
	return b.String()
}

// collapse joins the words of s with single spaces.
func collapse(s string) string {
	r := renderer{}
	r.text(s)
	return strings.TrimSpace(string(r.inl))
}

// TruncateRunes keeps at most n code points of s (never splitting a character) and
// says whether it cut; n <= 0 means no limit. max_length of the content tools counts
// characters, not bytes.
func TruncateRunes(s string, n int) (string, bool) {
	if n <= 0 || len(s) <= n {
		return s, false
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos], true
		}
		i++
	}
	return s, false
}
