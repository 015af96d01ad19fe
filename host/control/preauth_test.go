//go:build unix

package control

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/protocol"
	"github.com/rs/zerolog"
)

func listenBounded(t *testing.T, opts Options) *Server {
	t.Helper()
	opts.DataDir, opts.Handle, opts.Log = t.TempDir(), echo, zerolog.Nop()
	s, err := Listen(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// refusal reads what the server says to a connection it refuses, and checks that it
// then hangs up.
func refusal(t *testing.T, nc net.Conn) *protocol.Error {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := protocol.ReadFrame(nc, protocol.MaxInboundFrame)
	if err != nil {
		t.Fatalf("no answer before the hang-up: %v", err)
	}
	var m protocol.Message
	if err := json.Unmarshal(f, &m); err != nil || m.Error == nil {
		t.Fatalf("answer %s is not an error", f)
	}
	if _, err := protocol.ReadFrame(nc, protocol.MaxInboundFrame); err != io.EOF {
		t.Fatalf("the connection stayed open after the refusal: %v", err)
	}
	return m.Error
}

func dialRaw(t *testing.T, s *Server) net.Conn {
	t.Helper()
	nc, err := net.Dial("unix", s.Info().Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// A client that never says hello is cut off at the deadline, told why.
func TestHelloDeadline(t *testing.T) {
	s := listenBounded(t, Options{HelloTimeout: 200 * time.Millisecond})
	nc := dialRaw(t, s)
	if e := refusal(t, nc); e.Code != protocol.CodeUnauthorized || !strings.Contains(e.Message, "in time") {
		t.Fatalf("refusal %+v", e)
	}
}

// A declared length over the pre-auth limit is refused from its prefix: the answer
// comes although not one byte of the body was sent.
func TestPreAuthFrameLimit(t *testing.T) {
	s := listenBounded(t, Options{})
	nc := dialRaw(t, s)
	hdr := binary.NativeEndian.AppendUint32(nil, 60<<20)
	if _, err := nc.Write(hdr); err != nil {
		t.Fatal(err)
	}
	if e := refusal(t, nc); e.Code != protocol.CodeUnauthorized || !strings.Contains(e.Message, "62914560 bytes") || !strings.Contains(e.Message, "4096") {
		t.Fatalf("refusal %+v", e)
	}
	// A hello that fits is still welcome on a new connection.
	if _, err := DialInfo(context.Background(), s.opts.DataDir, s.Info()); err != nil {
		t.Fatal(err)
	}
}

// Connections that have not presented the token are few; past the cap a new one is
// told so at once, while authenticated clients are unaffected.
func TestConnectionCaps(t *testing.T) {
	s := listenBounded(t, Options{MaxPending: 3, MaxClients: 5, HelloTimeout: time.Minute})
	ctx := context.Background()
	authed, err := DialInfo(ctx, s.opts.DataDir, s.Info())
	if err != nil {
		t.Fatal(err)
	}
	defer authed.Close()
	var idle []net.Conn
	for range 3 {
		idle = append(idle, dialRaw(t, s))
	}
	// The server counts a connection when it accepts it; wait until it has all three.
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.pending == 3 })
	if e := refusal(t, dialRaw(t, s)); e.Code != protocol.CodeBusy || !strings.Contains(e.Message, "without having presented the token") {
		t.Fatalf("fourth pending client: %+v", e)
	}
	// The authenticated client still works.
	if err := authed.Call(ctx, "x.y", nil, nil); err != nil {
		t.Fatalf("authenticated client while the pending places are full: %v", err)
	}
	// One goes away: there is room again, and a hello gets through.
	idle[0].Close()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.pending == 2 })
	second, err := DialInfo(ctx, s.opts.DataDir, s.Info())
	if err != nil {
		t.Fatalf("a hello after a place was freed: %v", err)
	}
	defer second.Close()
	// Five connections in all (two authenticated, two pending, one more pending):
	// the sixth is refused by the overall cap.
	dialRaw(t, s)
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.peers) == 5 })
	if e := refusal(t, dialRaw(t, s)); e.Code != protocol.CodeBusy || !strings.Contains(e.Message, "too many clients (5)") {
		t.Fatalf("sixth client: %+v", e)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// countingReader counts what ReadHello takes from the stream.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadHello(t *testing.T) {
	frame := func(s string) []byte { return protocol.AppendFrame(nil, []byte(s)) }
	cases := []struct {
		in      []byte
		token   string
		id      string
		message string // part of the refusal; "" for a token
	}{
		{frame(`{"jsonrpc":"2.0","id":7,"method":"control.hello","params":{"token":"abc"}}`), "abc", "7", ""},
		{frame(`{"jsonrpc":"2.0","id":"x","method":"tools.list"}`), "", `"x"`, `not "tools.list"`},
		{frame(`{"jsonrpc":"2.0","method":"control.hello","params":{"token":"abc"}}`), "", "null", "send control.hello"},
		{frame(`{"jsonrpc":"2.0","id":1,"method":"control.hello","params":{}}`), "", "1", "needs {token}"},
		{frame(`{"jsonrpc":"2.0","id":1,"method":"control.hello","params":{"token":5}}`), "", "1", "needs {token}"},
		{frame(`not json`), "", "null", "parse error"},
		{frame(`{"jsonrpc":"2.0","id":1,"result":{}}`), "", "1", "a response"},
		{binary.NativeEndian.AppendUint32(nil, MaxHelloFrame+1), "", "null", "over the 4096 bytes"},
		{binary.NativeEndian.AppendUint32(nil, 0), "", "null", "empty frame"},
	}
	for _, c := range cases {
		id, token, err := ReadHello(bytes.NewReader(c.in))
		var he *HelloError
		switch {
		case c.message == "" && (err != nil || token != c.token):
			t.Errorf("%q: token %q, %v", c.in, token, err)
		case c.message != "" && (!errors.As(err, &he) || !strings.Contains(he.Message, c.message) || he.Silent):
			t.Errorf("%q: %v, want a refusal saying %q", c.in, err, c.message)
		case string(id) != c.id:
			t.Errorf("%q: id %s, want %s", c.in, id, c.id)
		}
	}
	// A stream that ends is nobody to answer.
	for _, in := range [][]byte{nil, {1, 0}, frame(`{"jsonrpc"`)[:8]} {
		_, _, err := ReadHello(bytes.NewReader(in))
		var he *HelloError
		if !errors.As(err, &he) || !he.Silent {
			t.Errorf("%q: %v, want a silent end", in, err)
		}
	}
}

// FuzzReadHello: whatever a client sends first, the pre-auth reader never panics,
// never takes more than one small frame from the stream, and accepts only a
// well-formed control.hello request with a string token.
func FuzzReadHello(f *testing.F) {
	f.Add(protocol.AppendFrame(nil, []byte(`{"jsonrpc":"2.0","id":1,"method":"control.hello","params":{"token":"t"}}`)))
	f.Add(protocol.AppendFrame(nil, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools.call","params":{"name":"x"}}`)))
	f.Add(protocol.AppendFrame(nil, []byte(`[{"jsonrpc":"2.0"}]`)))
	f.Add(binary.NativeEndian.AppendUint32(nil, 60<<20))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &countingReader{r: bytes.NewReader(data)}
		id, token, err := ReadHello(r)
		if r.n > 4+MaxHelloFrame {
			t.Fatalf("read %d bytes before the token", r.n)
		}
		if !json.Valid(id) {
			t.Fatalf("id %q is not JSON", id)
		}
		if err == nil {
			var m struct {
				Method string `json:"method"`
				Params struct {
					Token string `json:"token"`
				} `json:"params"`
			}
			if json.Unmarshal(data[4:r.n], &m) != nil || m.Method != HelloMethod || m.Params.Token != token || token == "" {
				t.Fatalf("accepted %q as a hello with token %q", data[:r.n], token)
			}
		}
	})
}
