package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

func frame(payload string) []byte { return AppendFrame(nil, []byte(payload)) }

func header(n uint32) []byte { return binary.NativeEndian.AppendUint32(nil, n) }

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name    string
		input   []byte
		limit   uint32
		want    []string
		wantErr error
	}{
		{"clean EOF with no frames", nil, 100, nil, io.EOF},
		{"one frame then clean EOF", frame(`{"a":1}`), 100, []string{`{"a":1}`}, io.EOF},
		{"two frames", append(frame(`1`), frame(`"two"`)...), 100, []string{`1`, `"two"`}, io.EOF},
		{"EOF inside the header", []byte{5, 0}, 100, nil, ErrTruncatedHeader},
		{"EOF inside the body", append(header(10), "abc"...), 100, nil, ErrTruncatedBody},
		{"EOF right after the header", header(3), 100, nil, ErrTruncatedBody},
		{"zero length", header(0), 100, nil, ErrEmptyFrame},
		{"frame at the limit", frame(strings.Repeat("x", 100)), 100, []string{strings.Repeat("x", 100)}, io.EOF},
		{"truncated after a good frame", append(frame(`1`), 9), 100, []string{`1`}, ErrTruncatedHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bytes.NewReader(tt.input)
			var got []string
			var err error
			for {
				var f []byte
				if f, err = ReadFrame(r, tt.limit); err != nil {
					break
				}
				got = append(got, string(f))
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("frames = %q, want %q", got, tt.want)
			}
		})
	}
}

// countingReader fails the test if anything past the header is read: an oversize
// length must be refused before the body is touched.
type countingReader struct {
	r    io.Reader
	read int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

func TestReadFrameRefusesOversizeBeforeReading(t *testing.T) {
	for _, n := range []uint32{MaxInboundFrame + 1, 0xFFFFFFFF} {
		cr := &countingReader{r: io.MultiReader(bytes.NewReader(header(n)), strings.NewReader(strings.Repeat("x", 1<<16)))}
		_, err := ReadFrame(cr, MaxInboundFrame)
		var se *FrameSizeError
		if !errors.As(err, &se) || se.Length != n {
			t.Fatalf("length %d: error = %v, want FrameSizeError", n, err)
		}
		if cr.read != 4 {
			t.Fatalf("length %d: read %d bytes, want only the 4-byte header", n, cr.read)
		}
		if !strings.Contains(err.Error(), "exceeds") {
			t.Fatalf("error message %q does not say what is wrong", err)
		}
	}
}

func TestReadFrameLargeDeclaredButShortBody(t *testing.T) {
	// 60 MiB declared, 10 bytes sent: a truncation error, not a 60 MiB allocation.
	in := append(header(60<<20), "0123456789"...)
	if _, err := ReadFrame(bytes.NewReader(in), MaxInboundFrame); !errors.Is(err, ErrTruncatedBody) {
		t.Fatalf("error = %v, want ErrTruncatedBody", err)
	}
}

func TestWriteFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	payloads := []string{`{}`, strings.Repeat("é", 3000), `{"jsonrpc":"2.0"}`}
	for _, p := range payloads {
		if err := WriteFrame(&buf, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range payloads {
		got, err := ReadFrame(&buf, MaxInboundFrame)
		if err != nil || string(got) != p {
			t.Fatalf("got %q, %v; want %q", got, err, p)
		}
	}
	if _, err := ReadFrame(&buf, MaxInboundFrame); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(frame(`{"jsonrpc":"2.0","id":1,"method":"host.ping"}`))
	f.Add([]byte{1, 0})
	f.Add(header(0))
	f.Add(append(header(1<<30), 'x'))
	f.Add(append(frame("a"), frame("bc")...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		var out []byte
		for {
			// A small limit keeps the fuzzer's memory bounded whatever it declares.
			f, err := ReadFrame(r, 4096)
			if err != nil {
				break
			}
			if len(f) == 0 || len(f) > 4096 {
				t.Fatalf("frame of %d bytes escaped the limits", len(f))
			}
			out = AppendFrame(out, f)
		}
		// Whatever was accepted must be exactly a prefix of the input.
		if !bytes.HasPrefix(data, out) {
			t.Fatalf("re-encoded frames are not a prefix of the input")
		}
	})
}

func BenchmarkWriteFrame(b *testing.B) {
	for _, size := range []int{64, 64 << 10, 900 << 10} {
		payload := bytes.Repeat([]byte("x"), size)
		b.Run(byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := WriteFrame(io.Discard, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReadFrame(b *testing.B) {
	for _, size := range []int{64, 64 << 10, 900 << 10, 8 << 20} {
		data := frame(strings.Repeat("x", size))
		b.Run(byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			r := bytes.NewReader(data)
			for b.Loop() {
				r.Reset(data)
				if _, err := ReadFrame(r, MaxInboundFrame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10:
		return strconv.Itoa(n>>10) + "KiB"
	default:
		return strconv.Itoa(n) + "B"
	}
}
