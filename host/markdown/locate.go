package markdown

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// locateArticle finds, in a capture's tree, the block that holds the article
// go-readability (Mozilla Readability's algorithm, web_fetch's extractor) reads out
// of the same capture. Readability's own output cannot be what get_tab_content
// renders: it rewrites the document and drops the selectors and controls the agent
// acts on. So its article is matched back by text: the capture's text nodes that
// Readability kept are marked, and the region is the deepest block holding nearly
// all of them. It returns nil when Readability finds no article, or one too small
// to be the page's (a listing or a form read as a paragraph), and the caller's own
// choice stands.
func locateArticle(src string, body *node) *node {
	a, err := readable(src, nil)
	if err != nil || a.Node == nil {
		return nil
	}
	var b bytes.Buffer
	if html.Render(&b, a.Node) != nil {
		return nil
	}
	art := parseTree(b.String())
	prune(art.root, false, pruner{drop: dropInArticle})
	if n := art.root.textLen; n < 500 && paragraphs(art.root)*2 < paragraphs(body) {
		return nil
	}
	keys := map[string]int{}
	var collect func(*node)
	collect = func(n *node) {
		for c := n.first; c != nil; c = c.next {
			if c.isText {
				if k := collapse(c.text); len(k) >= 8 {
					keys[k]++
				}
			} else {
				collect(c)
			}
		}
	}
	collect(art.root)
	if len(keys) == 0 {
		return nil
	}
	// matched holds, for each element, the length of its text nodes Readability
	// kept; the walk is post-order, so a parent's sum is its children's.
	matched := map[*node]int{}
	var mark func(*node) int
	mark = func(n *node) int {
		sum := 0
		for c := n.first; c != nil; c = c.next {
			if c.isText {
				if k := collapse(c.text); keys[k] > 0 {
					keys[k]--
					sum += len(k)
				}
				continue
			}
			sum += mark(c)
		}
		if sum > 0 {
			matched[n] = sum
		}
		return sum
	}
	total := mark(body)
	if total == 0 {
		return nil
	}
	n := body
	for {
		var next *node
		for c := n.first; c != nil; c = c.next {
			if !c.isText && float64(matched[c]) >= locateShare*float64(total) {
				next = c
				break
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	trimUnmatched(n, matched)
	return n
}

// titleBefore is the article's own heading when the located block does not hold
// it: Readability takes the title out of its article, and the agent reads a page
// by its headings. It is an <h1> just before n or before the block n opens (its
// parent's, when n is the parent's first block): one a page's header holds far
// away is the site's, not the article's, and the result's title says it anyway.
func titleBefore(body, n *node) *node {
	if n.a == atom.H1 || findFirst(n, func(c *node) bool { return c.a == atom.H1 }) != nil {
		return nil
	}
	for k := 0; k < 2 && n != nil && n != body; k++ {
		for s := n.parent.first; s != nil && s != n; s = s.next {
			if s.a == atom.H1 && nextElement(s) == n {
				return s
			}
		}
		n = n.parent
	}
	return nil
}

// locateShare is the part of Readability's article the located block must hold.
const locateShare = 0.9

// trimUnmatched takes out of the located block what holds text but none that
// Readability kept and whose class or id names it as boilerplate (a share bar, a
// newsletter box between paragraphs), keeping the form controls the agent may
// act on.
func trimUnmatched(n *node, matched map[*node]int) {
	var prev *node
	for c := n.first; c != nil; {
		next := c.next
		if c.isText {
			prev, c = c, next
			continue
		}
		if matched[c] == 0 && noisy(c) && !actionable(c) && strings.TrimSpace(innerText(c)) != "" {
			unlink(n, prev, c, nil)
			c = next
			continue
		}
		if matched[c] > 0 {
			trimUnmatched(c, matched)
		}
		prev, c = c, next
	}
}

// actionable are the controls a capture carries for the agent to act on.
func actionable(n *node) bool {
	switch n.a {
	case atom.Button, atom.Input, atom.Select, atom.Textarea, atom.Form, atom.Label:
		return true
	}
	return false
}
