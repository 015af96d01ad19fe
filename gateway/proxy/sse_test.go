package proxy

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	in := "\n: keep-alive\n\nevent: message_start\ndata: {\"a\":1}\n\ndata: x\r\ndata: y\r\n\r\ndata: [DONE]"
	r := newSSEReader(strings.NewReader(in))
	var got []string
	for {
		ev, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.name+"|"+string(ev.data)+"|"+string(ev.raw))
	}
	want := []string{
		"||: keep-alive\n\n",
		"message_start|{\"a\":1}|event: message_start\ndata: {\"a\":1}\n\n",
		"|x\ny|data: x\r\ndata: y\r\n\r\n",
		"|[DONE]|data: [DONE]\n",
	}
	if strings.Join(got, "\n---\n") != strings.Join(want, "\n---\n") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// TestSSEReaderCutEvent: a stream cut inside an event gives the events before
// it and then io.ErrUnexpectedEOF, never the half event.
func TestSSEReaderCutEvent(t *testing.T) {
	for _, tail := range []string{`data: {"choices":[{"delta":{"content":"hal`, "data: {\"a\":\n", "event: content_block_delta\ndata: {\"x\""} {
		r := newSSEReader(strings.NewReader("data: {\"a\":1}\n\n" + tail))
		ev, err := r.next()
		if err != nil || string(ev.data) != `{"a":1}` {
			t.Fatalf("%q: the whole event: %v %q", tail, err, ev.data)
		}
		if ev, err := r.next(); err != io.ErrUnexpectedEOF {
			t.Fatalf("%q: after the cut: %v, %q", tail, err, ev.raw)
		}
	}
}

func TestSSEReaderLongLineAndLimit(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	r := newSSEReader(strings.NewReader("data: " + long + "\n\n"))
	ev, err := r.next()
	if err != nil || string(ev.data) != long {
		t.Fatalf("long line: %v, %d bytes", err, len(ev.data))
	}
	r = newSSEReader(strings.NewReader("data: " + strings.Repeat("y", maxEvent+10) + "\n\n"))
	if _, err := r.next(); !errors.Is(err, errEventTooLarge) {
		t.Fatalf("huge event: %v", err)
	}
}

func FuzzSSEReader(f *testing.F) {
	f.Add("event: a\ndata: b\n\ndata: c\n\n")
	f.Add("data: x\r\n\r\n:\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		r := newSSEReader(strings.NewReader(s))
		var total strings.Builder
		for i := 0; i < 10000; i++ {
			ev, err := r.next()
			if err != nil {
				break
			}
			total.Write(ev.raw)
		}
		// What is passed on is never more than what came in (plus the newline
		// the last line may lack).
		if total.Len() > len(s)+1 {
			t.Fatalf("%d bytes out of %d in", total.Len(), len(s))
		}
	})
}
