package model

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t testing.TB, r io.Reader) ([]sseEvent, error) {
	s := newSSEReader(r)
	var out []sseEvent
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSE(t *testing.T) {
	in := ": comment\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\n" + // CRLF, no space after colon
		"data: {\"x\":1}\n\n" + // no event name
		"id: 7\nretry: 100\nunknown: z\n\n" + // no data: nothing dispatched
		"event: b\rdata: cr only\r\r" +
		"data: last without blank line"
	for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in))} {
		evs, err := readAll(t, r)
		if err != nil {
			t.Fatal(err)
		}
		want := []sseEvent{{Event: "a", Data: []byte("one\ntwo")}, {Data: []byte(`{"x":1}`)}, {Event: "b", Data: []byte("cr only")}, {Data: []byte("last without blank line")}}
		if len(evs) != len(want) {
			t.Fatalf("%q", evs)
		}
		for i := range want {
			if evs[i].Event != want[i].Event || !bytes.Equal(evs[i].Data, want[i].Data) {
				t.Fatalf("event %d: %q, want %q", i, evs[i], want[i])
			}
		}
	}
}

// TestSSEErrorField: llama.cpp's server reports a failure mid-stream in an
// "error:" field, which must reach the decoder as an event of its own.
func TestSSEErrorField(t *testing.T) {
	in := "data: {\"a\":1}\n\nerror: {\"code\":500,\"message\":\"boom\"}\n\ndata: [DONE]\n\n"
	evs, err := readAll(t, iotest.OneByteReader(strings.NewReader(in)))
	if err != nil || len(evs) != 3 {
		t.Fatalf("%q %v", evs, err)
	}
	if string(evs[1].Error) != `{"code":500,"message":"boom"}` || len(evs[1].Data) != 0 || evs[0].Error != nil || evs[2].Error != nil {
		t.Fatalf("%q", evs)
	}
}

func TestSSELineTooLong(t *testing.T) {
	r := io.MultiReader(strings.NewReader("data: "), bytes.NewReader(bytes.Repeat([]byte("x"), maxSSELine+10)))
	if _, err := readAll(t, r); !errors.Is(err, errSSELineTooLong) {
		t.Fatalf("%v", err)
	}
}

// FuzzSSE checks that any input parses without panicking, and that events written
// in the format parse back to themselves however the bytes are cut.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("event: x\ndata: y\n\n"), "name", "payload")
	f.Add([]byte("data: a\r\n\r\ndata: b\r\r: c\n"), "", "{\"k\":\"v\"}")
	f.Add([]byte("\r\n\n\r"), "message_start", "")
	f.Fuzz(func(t *testing.T, raw []byte, name, payload string) {
		readAll(t, bytes.NewReader(raw))
		readAll(t, iotest.HalfReader(bytes.NewReader(raw)))
		if strings.ContainsAny(name+payload, "\r\n") || strings.HasPrefix(name, " ") || strings.HasPrefix(payload, " ") {
			return
		}
		var b bytes.Buffer
		if name != "" {
			b.WriteString("event: " + name + "\n")
		}
		b.WriteString("data: " + payload + "\n\n: keep-alive\n\n")
		evs, err := readAll(t, iotest.OneByteReader(&b))
		if err != nil || len(evs) != 1 || evs[0].Event != name || string(evs[0].Data) != payload {
			t.Fatalf("%q %q → %q %v", name, payload, evs, err)
		}
	})
}
