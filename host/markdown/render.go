package markdown

import (
	"bytes"
	"strconv"
	"strings"

	"golang.org/x/net/html/atom"
)

// renderer writes Markdown. Inline text accumulates, whitespace collapsed, until a
// block boundary flushes it as one block, prefixed by the open containers (list
// items, block quotes).
type renderer struct {
	out      []byte
	inl      []byte
	space    bool // white space seen since the last inline byte
	stack    []container
	lastList bool // the last block written was inside a list

	// capture renders a browser capture: links with their targets, form controls
	// with their state, and ⟨selector⟩ marks (capture.go).
	capture  bool
	marks    []mark
	skipMark string // the selector the whole rendering is reported under
}

type container struct {
	first, rest string // prefix of a block's first line, and of every later line
	used        bool   // first has been written
	list        bool
}

func (r *renderer) walkChildren(n *node) {
	for c := n.first; c != nil; c = c.next {
		r.walk(c)
	}
}

func (r *renderer) walk(n *node) {
	if n.isText {
		r.text(n.text)
		return
	}
	if r.capture && r.walkCapture(n) {
		return
	}
	r.element(n)
}

func (r *renderer) element(n *node) {
	switch n.a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		r.flush()
		r.walkChildren(n)
		if t := r.takeBytes(); len(t) > 0 {
			for i, c := range t {
				if c == '\n' {
					t[i] = ' '
				}
			}
			r.block("######"[:n.a.String()[1]-'0']+" ", t, false)
		}
	case atom.Ul, atom.Ol:
		r.flush()
		num := 1
		if n.start != 0 {
			num = int(n.start)
		}
		for c := n.first; c != nil; c = c.next {
			if c.a != atom.Li || c.isText {
				r.walk(c)
				continue
			}
			marker := "- "
			if n.a == atom.Ol {
				marker = strconv.Itoa(num) + ". "
				num++
			}
			r.stack = append(r.stack, container{first: marker, rest: strings.Repeat(" ", len(marker)), list: true})
			r.walkChildren(c)
			r.flush()
			r.stack = r.stack[:len(r.stack)-1]
		}
		r.flush()
	case atom.Blockquote:
		r.flush()
		r.stack = append(r.stack, container{first: "> ", rest: "> "})
		r.walkChildren(n)
		r.flush()
		r.stack = r.stack[:len(r.stack)-1]
	case atom.Pre:
		r.flush()
		code := strings.TrimRight(strings.TrimPrefix(preText(n), "\n"), " \t\n")
		if code != "" {
			fence := "```"
			for strings.Contains(code, fence) {
				fence += "`"
			}
			r.block("", []byte(fence+"\n"+code+"\n"+fence), true)
		}
	case atom.Table:
		r.flush()
		if !r.table(n) {
			r.walkChildren(n)
			r.flush()
		}
	case atom.Br:
		r.inl = trimRightSpace(r.inl)
		r.inl = append(r.inl, '\n')
		r.space = false
	case atom.Hr:
		r.flush()
	case atom.A:
		if n.textLen <= 4 && permalinkSymbol(innerText(n)) {
			return // the ¶ or # anchors docs generators put after headings
		}
		r.walkChildren(n)
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt:
		r.inlineCode(n)
	default:
		if isBlock(n.a) {
			r.flush()
			r.walkChildren(n)
			r.flush()
			return
		}
		r.walkChildren(n)
	}
}

func permalinkSymbol(s string) bool {
	switch strings.TrimSpace(s) {
	case "¶", "#", "§", "🔗", "∞":
		return true
	}
	return false
}

// text appends s with runs of white space (including no-break and ideographic
// spaces) collapsed to one space, and NUL bytes dropped.
func (r *renderer) text(s string) {
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			r.space = true
			i++
			continue
		case c == 0:
			i++
			continue
		case c == 0xC2 && i+1 < len(s) && s[i+1] == 0xA0:
			r.space = true
			i += 2
			continue
		case c == 0xE3 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2] == 0x80:
			r.space = true
			i += 3
			continue
		}
		if r.space {
			if len(r.inl) > 0 && r.inl[len(r.inl)-1] != '\n' {
				r.inl = append(r.inl, ' ')
			}
			r.space = false
		}
		j := i + 1
		for j < len(s) {
			d := s[j]
			if d == ' ' || d == '\t' || d == '\n' || d == '\r' || d == '\f' || d == 0 || d == 0xC2 || d == 0xE3 {
				break
			}
			j++
		}
		r.inl = append(r.inl, s[i:j]...)
		i = j
	}
}

func (r *renderer) inlineCode(n *node) {
	if n.flags&hasBlockChild != 0 {
		r.walkChildren(n) // <code> misused around blocks: render the blocks
		return
	}
	if r.space && len(r.inl) > 0 && r.inl[len(r.inl)-1] != '\n' {
		r.inl = append(r.inl, ' ')
	}
	r.space = false
	start := len(r.inl)
	r.inl = append(r.inl, '`')
	r.walkChildren(n)
	if len(r.inl) <= start || r.inl[start] != '`' {
		return // a block deeper inside flushed the line; nothing left to close
	}
	if len(r.inl) == start+1 {
		r.inl = r.inl[:start]
		return
	}
	if i := strings.IndexByte(string(r.inl[start+1:]), '`'); i >= 0 {
		// Code holding a backtick is left unmarked rather than mis-fenced.
		copy(r.inl[start:], r.inl[start+1:])
		r.inl = r.inl[:len(r.inl)-1]
		return
	}
	r.inl = append(r.inl, '`')
}

// takeBytes returns the pending inline text, trimmed, and clears the pending state;
// the bytes stay valid until the next inline write.
func (r *renderer) takeBytes() []byte {
	t := bytes.TrimSpace(r.inl)
	r.inl = r.inl[:0]
	r.space = false
	return t
}

func (r *renderer) flush() {
	if len(r.inl) == 0 {
		r.space = false
		return
	}
	if t := r.takeBytes(); len(t) > 0 {
		r.block("", t, false)
	}
}

func (r *renderer) inList() bool {
	for _, c := range r.stack {
		if c.list {
			return true
		}
	}
	return false
}

// block writes one block, lead (a heading's #s) before its first line. Blocks are
// separated by a blank line, except consecutive blocks inside a list, which stay
// tight.
func (r *renderer) block(lead string, t []byte, verbatim bool) {
	inList := r.inList()
	if len(r.out) > 0 {
		r.out = append(r.out, '\n')
		if !(inList && r.lastList) {
			// The blank line carries the prefixes of the containers already under
			// way: the first block of a quote is separated from the text above it
			// by a plain blank line, not by a ">" line.
			mark := len(r.out)
			for _, c := range r.stack {
				if c.used {
					r.out = append(r.out, c.rest...)
				}
			}
			r.out = r.out[:mark+len(trimRightSpace(r.out[mark:]))]
			r.out = append(r.out, '\n')
		}
	}
	r.lastList = inList
	cont := false
	if len(r.marks) > 0 {
		cont = r.writeMarks()
	}
	r.lines(lead, t, verbatim, cont)
}

// lines writes t line by line under the open containers' prefixes, lead before the
// first; cont continues a block already begun (its first prefixes used).
func (r *renderer) lines(lead string, t []byte, verbatim, cont bool) {
	first := true
	for len(t) > 0 || first {
		line := t
		if i := bytes.IndexByte(t, '\n'); i >= 0 {
			line, t = t[:i], t[i+1:]
		} else {
			t = nil
		}
		if !verbatim {
			line = bytes.TrimSpace(line)
		}
		if !first || cont {
			r.out = append(r.out, '\n')
		}
		for i := range r.stack {
			c := &r.stack[i]
			if first && !c.used {
				r.out = append(r.out, c.first...)
				c.used = true
			} else {
				r.out = append(r.out, c.rest...)
			}
		}
		if first {
			r.out = append(r.out, lead...)
		}
		r.out = append(r.out, line...)
		first = false
	}
}

func trimRightSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func preText(n *node) string {
	var b strings.Builder
	var walk func(*node)
	walk = func(n *node) {
		for c := n.first; c != nil; c = c.next {
			switch {
			case c.isText:
				b.WriteString(strings.ReplaceAll(c.text, "\x00", ""))
			case c.a == atom.Br:
				b.WriteByte('\n')
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return strings.ReplaceAll(b.String(), "\r\n", "\n")
}

// table renders a data table as a Markdown table and reports false for a layout
// table (one column, nested tables, huge cells), which is rendered as blocks instead.
func (r *renderer) table(t *node) bool {
	if t.presentation {
		return false
	}
	var caption *node
	var rows []*node
	for c := t.first; c != nil; c = c.next {
		switch c.a {
		case atom.Caption:
			caption = c
		case atom.Tr:
			rows = append(rows, c)
		case atom.Thead, atom.Tbody, atom.Tfoot:
			for rc := c.first; rc != nil; rc = rc.next {
				if rc.a == atom.Tr {
					rows = append(rows, rc)
				}
			}
		}
	}
	if len(rows) == 0 {
		return false
	}
	cols, hasTh := 0, false
	var cells [][]string
	for _, row := range rows {
		var line []string
		for c := row.first; c != nil; c = c.next {
			if c.a != atom.Td && c.a != atom.Th {
				continue
			}
			if c.a == atom.Th {
				hasTh = true
			}
			if c.textLen > 2000 || findFirst(c, func(n *node) bool { return n.a == atom.Table }) != nil {
				return false
			}
			line = append(line, r.cellText(c))
			for k := int32(1); k < c.colspan; k++ {
				line = append(line, "")
			}
		}
		cols = max(cols, len(line))
		cells = append(cells, line)
	}
	if cols < 2 || len(rows) < 2 && !hasTh {
		return false
	}
	if caption != nil {
		r.walkChildren(caption)
		r.flush()
	}
	var b strings.Builder
	for i, line := range cells {
		b.WriteString("|")
		for k := 0; k < cols; k++ {
			cell := ""
			if k < len(line) {
				cell = line[k]
			}
			b.WriteString(" ")
			b.WriteString(cell)
			b.WriteString(" |")
		}
		if i == 0 {
			b.WriteString("\n|")
			for k := 0; k < cols; k++ {
				b.WriteString(" --- |")
			}
		}
		if i < len(cells)-1 {
			b.WriteString("\n")
		}
	}
	r.block("", []byte(b.String()), true)
	return true
}

func (r *renderer) cellText(c *node) string {
	sub := &renderer{capture: r.capture, skipMark: r.skipMark}
	sub.walkChildren(c)
	sub.flush()
	// Blocks inside a cell (paragraphs, list items) become one line.
	out := make([]byte, 0, len(sub.out)+8)
	space := false
	for _, b := range sub.out {
		switch b {
		case '\n':
			space = true
			continue
		case '|':
			if space {
				out = append(out, ' ')
				space = false
			}
			out = append(out, '\\', '|')
			continue
		}
		if space {
			if len(out) > 0 && out[len(out)-1] != ' ' {
				out = append(out, ' ')
			}
			space = false
		}
		out = append(out, b)
	}
	return string(out)
}
