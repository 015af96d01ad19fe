package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// peer is the other end of a Conn under test: it writes raw frames and reads what the
// Conn answers, as the browser would.
type peer struct {
	t    *testing.T
	in   *io.PipeWriter // what the Conn reads
	out  *io.PipeReader // what the Conn writes
	done chan error
}

func startConn(t *testing.T, h Handler, opts ...Option) *peer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(inR, outW, h, opts...)
	p := &peer{t: t, in: inW, out: outR, done: make(chan error, 1)}
	go func() {
		err := c.Serve(context.Background())
		outW.Close()
		p.done <- err
	}()
	t.Cleanup(func() { inW.Close() })
	return p
}

func (p *peer) send(s string) {
	p.t.Helper()
	if err := WriteFrame(p.in, []byte(s)); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

func (p *peer) recv() map[string]any {
	p.t.Helper()
	f, err := ReadFrame(p.out, MaxInboundFrame)
	if err != nil {
		p.t.Fatalf("recv: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(f, &m); err != nil {
		p.t.Fatalf("recv: %s is not JSON: %v", f, err)
	}
	return m
}

func echo(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "echo":
		return params, nil
	case "sleep":
		var p struct{ MS int }
		json.Unmarshal(params, &p)
		time.Sleep(time.Duration(p.MS) * time.Millisecond)
		return p.MS, nil
	case "fail":
		return nil, errors.New("disk on fire")
	case "bad":
		return nil, Errorf(CodeInvalidParams, "invalid params: x is required")
	case "panic":
		panic("boom")
	}
	return nil, Errorf(CodeMethodNotFound, "method not found: %s", method)
}

func errCode(m map[string]any) int {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0
	}
	return int(e["code"].(float64))
}

func TestConnAnswersAndReportsErrors(t *testing.T) {
	p := startConn(t, echo)
	cases := []struct {
		send     string
		wantID   any
		wantCode int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}`, 1.0, 0},
		{`{"jsonrpc":"2.0","id":"s","method":"nope"}`, "s", CodeMethodNotFound},
		{`{"jsonrpc":"2.0","id":2,"method":"fail"}`, 2.0, CodeInternalError},
		{`{"jsonrpc":"2.0","id":3,"method":"bad"}`, 3.0, CodeInvalidParams},
		{`{"jsonrpc":"2.0","id":4,"method":"panic"}`, 4.0, CodeInternalError},
		{`not json`, nil, CodeParseError},
		{`{"jsonrpc":"1.0","id":5,"method":"echo"}`, 5.0, CodeInvalidRequest},
		{`[{"jsonrpc":"2.0","id":6,"method":"echo"}]`, nil, CodeInvalidRequest},
	}
	for _, c := range cases {
		p.send(c.send)
		m := p.recv()
		if m["id"] != c.wantID || errCode(m) != c.wantCode {
			t.Errorf("%s → %v; want id %v code %d", c.send, m, c.wantID, c.wantCode)
		}
	}
	// The connection survived all of that.
	p.send(`{"jsonrpc":"2.0","id":9,"method":"echo","params":[true]}`)
	if m := p.recv(); m["id"] != 9.0 || fmt.Sprint(m["result"]) != "[true]" {
		t.Fatalf("after errors: %v", m)
	}
}

func TestConnRunsRequestsConcurrently(t *testing.T) {
	p := startConn(t, echo)
	// The slow request is sent first; the fast one must not wait behind it.
	p.send(`{"jsonrpc":"2.0","id":1,"method":"sleep","params":{"MS":300}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"sleep","params":{"MS":1}}`)
	first, second := p.recv(), p.recv()
	if first["id"] != 2.0 || second["id"] != 1.0 {
		t.Fatalf("order = %v, %v; want the fast answer first", first["id"], second["id"])
	}
}

func TestConnNotificationsGetNoAnswer(t *testing.T) {
	p := startConn(t, echo)
	p.send(`{"jsonrpc":"2.0","method":"fail"}`)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`)
	if m := p.recv(); m["id"] != 1.0 {
		t.Fatalf("got %v; a notification must not be answered", m)
	}
}

func TestConnFinishesInFlightWorkOnEOF(t *testing.T) {
	p := startConn(t, echo)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"sleep","params":{"MS":200}}`)
	time.Sleep(20 * time.Millisecond)
	p.in.Close() // the browser went away
	if m := p.recv(); m["id"] != 1.0 || m["result"] != 200.0 {
		t.Fatalf("in-flight request answered %v", m)
	}
	if err := <-p.done; err != nil {
		t.Fatalf("Serve after clean EOF = %v, want nil", err)
	}
}

// Workers outlive their request to take the next one; many at once still each get
// one, and none is left behind when the stream ends.
func TestConnWorkersEndWithTheStream(t *testing.T) {
	before := runtime.NumGoroutine()
	p := startConn(t, echo)
	const n = 3 * maxIdleWorkers
	for i := range n {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"sleep","params":{"MS":100}}`, i))
	}
	for range n {
		if m := p.recv(); m["result"] != 100.0 {
			t.Fatalf("got %v", m)
		}
	}
	for i := range 5 { // answered by the idle workers
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":[%d]}`, i, i))
		if m := p.recv(); fmt.Sprint(m["result"]) != fmt.Sprintf("[%d]", i) {
			t.Fatalf("got %v", m)
		}
	}
	p.in.Close()
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("%d goroutines after the stream ended, %d before it began", g, before)
	}
}

func TestConnStopsOnBrokenStream(t *testing.T) {
	for name, raw := range map[string][]byte{
		"oversize length": header(MaxInboundFrame + 1),
		"zero length":     header(0),
	} {
		t.Run(name, func(t *testing.T) {
			p := startConn(t, echo)
			go p.in.Write(raw)
			m := p.recv()
			if errCode(m) != CodeParseError || !strings.Contains(fmt.Sprint(m["error"]), "closing connection") {
				t.Fatalf("got %v; want a parse error saying the connection closes", m)
			}
			if err := <-p.done; err == nil {
				t.Fatal("Serve returned nil for a broken stream")
			}
		})
	}
	t.Run("truncated body", func(t *testing.T) {
		p := startConn(t, echo)
		go func() { p.in.Write(append(header(50), "short"...)); p.in.Close() }()
		p.recv()
		if err := <-p.done; !errors.Is(err, ErrTruncatedBody) {
			t.Fatalf("Serve = %v, want ErrTruncatedBody", err)
		}
	})
}

func TestConnChunksLargeAnswers(t *testing.T) {
	big := strings.Repeat("ab\"✓", 2000)
	h := func(ctx context.Context, method string, params json.RawMessage) (any, error) { return big, nil }
	p := startConn(t, h, WithOutboundFrameLimit(1024))
	p.send(`{"jsonrpc":"2.0","id":1,"method":"big"}`)
	var frames [][]byte
	for {
		f, err := ReadFrame(p.out, MaxInboundFrame)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
		var m struct{ Params chunkParams }
		json.Unmarshal(f, &m)
		if m.Params.Index == m.Params.Count-1 {
			break
		}
	}
	var reply struct {
		ID     int
		Result string
	}
	joined := reassembleAny(t, frames, 1024)
	if err := json.Unmarshal([]byte(joined), &reply); err != nil || reply.ID != 1 || reply.Result != big {
		t.Fatalf("reassembled reply wrong: %v", err)
	}
}

func reassembleAny(t *testing.T, frames [][]byte, limit int) string {
	var sb strings.Builder
	for _, f := range frames {
		if len(f) > limit {
			t.Fatalf("frame of %d bytes over %d", len(f), limit)
		}
		var m struct{ Params chunkParams }
		if err := json.Unmarshal(f, &m); err != nil {
			t.Fatal(err)
		}
		sb.WriteString(m.Params.Data)
	}
	return sb.String()
}

func TestConnCallsThePeer(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(inR, outW, echo)
	go c.Serve(context.Background())
	defer inW.Close()

	// The fake browser answers every request with its method name, out of order.
	go func() {
		var reqs []map[string]any
		for {
			f, err := ReadFrame(outR, MaxInboundFrame)
			if err != nil {
				return
			}
			var m map[string]any
			json.Unmarshal(f, &m)
			if m["method"] == "never" {
				continue
			}
			reqs = append(reqs, m)
			if len(reqs) == 2 {
				for i := len(reqs) - 1; i >= 0; i-- {
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": reqs[i]["id"], "result": reqs[i]["method"]})
					WriteFrame(inW, b)
				}
			}
			if len(reqs) == 3 {
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": reqs[2]["id"], "error": map[string]any{"code": -32601, "message": "no tabs here"}})
				WriteFrame(inW, b)
			}
		}
	}()

	var wg sync.WaitGroup
	results := make([]string, 2)
	for i, method := range []string{"tabs.list", "tabs.open"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Call(context.Background(), method, map[string]int{"n": i}, &results[i]); err != nil {
				t.Errorf("%s: %v", method, err)
			}
		}()
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	if results[0] != "tabs.list" || results[1] != "tabs.open" {
		t.Fatalf("results = %v", results)
	}
	err := c.Call(context.Background(), "tabs.fail", nil, nil)
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || rpcErr.Message != "no tabs here" {
		t.Fatalf("error response = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Call(ctx, "never", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered call = %v, want a deadline error", err)
	}
}

func TestConnHandlesNotificationsInOrder(t *testing.T) {
	var mu sync.Mutex
	var got []int
	h := func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		var p struct{ N int }
		json.Unmarshal(params, &p)
		n := p.N
		if n%7 == 0 {
			time.Sleep(time.Millisecond) // a slow one must not be overtaken
		}
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
		return nil, nil
	}
	p := startConn(t, h)
	for i := 0; i < 200; i++ {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"update","params":{"n":%d}}`, i))
	}
	p.in.Close()
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
	for i, n := range got {
		if n != i {
			t.Fatalf("notification %d handled at position %d: %v", n, i, got[:i+1])
		}
	}
	if len(got) != 200 {
		t.Fatalf("%d of 200 notifications handled", len(got))
	}
}
