package markdown

import (
	"math/rand"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// An unknown element's end tag ends its selector scope: a relative selector
// after it is relative to the enclosing element again.
func TestCaptureUnknownElementEndsSelScope(t *testing.T) {
	c := ConvertCapture(`<body><div sel='#a'><x-y sel='>x-y'><p>in</p></x-y><table sel='>table'><tr><td>one</td></tr></table></div></body>`, "body")
	if !strings.Contains(c.Markdown, "⟨#a > table⟩") {
		t.Fatalf("want the table marked #a > table:\n%s", c.Markdown)
	}
}

// captureAttrs reads what the tokenizer reads, whenever it takes a tag.
func TestCaptureAttrsMatchTokenizer(t *testing.T) {
	parts := []string{" ", "a", "b", "-", "=", "'", "\"", "&", "x", ">", "/", "\n", "\r", "\t", "A", "0", "sel", "href", "<", "\x00", "é"}
	r := rand.New(rand.NewSource(1))
	taken := 0
	for range 100_000 {
		var sb strings.Builder
		sb.WriteString("<div")
		for j := r.Intn(12); j > 0; j-- {
			sb.WriteString(parts[r.Intn(len(parts))])
		}
		sb.WriteString(">")
		tag := sb.String()
		got, ok := captureAttrs(tag, nil)
		if !ok {
			continue
		}
		taken++
		z := html.NewTokenizer(strings.NewReader(tag + "x"))
		if tt := z.Next(); tt != html.StartTagToken || len(z.Raw()) != len(tag) {
			t.Fatalf("%q: the tokenizer reads %v %q", tag, tt, z.Raw())
		}
		var want [][2]string
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			if k == nil {
				break
			}
			want = append(want, [2]string{string(k), string(v)})
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q: captureAttrs %q, the tokenizer %q", tag, got, want)
		}
	}
	if taken < 1000 {
		t.Fatalf("only %d tags taken", taken)
	}
}
