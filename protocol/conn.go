package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Handler answers one request or notification from the peer. For a notification the
// result is discarded. Returning an *Error chooses the JSON-RPC error the peer sees.
type Handler func(ctx context.Context, method string, params json.RawMessage) (any, error)

// DefaultCallTimeout bounds a request to the peer when the caller's context has no
// deadline of its own.
const DefaultCallTimeout = 30 * time.Second

// Conn is one JSON-RPC 2.0 session over native-messaging frames. Incoming requests
// run concurrently, each in its own goroutine; writes are serialized so frames never
// interleave. The Conn can also send its own requests and wait for the answers.
type Conn struct {
	r          io.Reader
	w          io.Writer
	handler    Handler
	log        zerolog.Logger
	inLimit    uint32
	frameLimit int

	wmu sync.Mutex // one frame (or one run of chunk frames) at a time

	pmu     sync.Mutex
	pending map[string]chan *Message
	closed  bool

	nextID   atomic.Int64
	nextSeq  atomic.Int64
	inflight sync.WaitGroup
}

// Option configures a Conn.
type Option func(*Conn)

// WithLogger sets where the Conn reports dropped and malformed traffic.
func WithLogger(l zerolog.Logger) Option { return func(c *Conn) { c.log = l } }

// WithOutboundFrameLimit changes the largest frame this side writes (tests use a small
// one to exercise chunking).
func WithOutboundFrameLimit(n int) Option { return func(c *Conn) { c.frameLimit = n } }

// NewConn makes a Conn that reads frames from r and writes them to w.
func NewConn(r io.Reader, w io.Writer, h Handler, opts ...Option) *Conn {
	c := &Conn{
		r: r, w: w, handler: h,
		log:        zerolog.Nop(),
		inLimit:    MaxInboundFrame,
		frameLimit: MaxOutboundFrame,
		pending:    map[string]chan *Message{},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Serve reads until the peer closes the stream or the stream breaks. It then waits
// for every request already started to finish and answer, and fails the requests this
// side is still waiting on. A clean end of stream returns nil; a broken one (bad
// length, truncated frame) returns the framing error after telling the peer.
func (c *Conn) Serve(ctx context.Context) error {
	// Notifications are handled one after another in the order they arrived (a
	// later update must never be overtaken by an earlier one), on their own
	// goroutine so that a slow one does not hold up reading responses.
	notes := make(chan *Message, 256)
	notesDone := make(chan struct{})
	go func() {
		defer close(notesDone)
		for msg := range notes {
			c.handle(ctx, msg)
		}
	}()
	err := c.readLoop(ctx, notes)
	close(notes)
	<-notesDone
	c.inflight.Wait()
	c.failPending(errors.New("connection closed"))
	if err == io.EOF {
		return nil
	}
	return err
}

func (c *Conn) readLoop(ctx context.Context, notes chan<- *Message) error {
	for {
		data, err := ReadFrame(c.r, c.inLimit)
		if err != nil {
			if err != io.EOF {
				// The stream cannot be resynchronised after a bad length or a short
				// read, so say why once and stop reading.
				c.send(&Message{JSONRPC: "2.0", ID: json.RawMessage("null"),
					Error: Errorf(CodeParseError, "closing connection: %v", err)})
			}
			return err
		}
		if msg := fastResponse(data); msg != nil {
			c.deliver(msg)
			continue
		}
		msg, perr := DecodeMessage(data)
		if perr != nil {
			c.log.Warn().Int("code", perr.Code).Str("error", perr.Message).Msg("rejected message")
			// A malformed response is only logged: answering a response could start
			// two peers replying to each other forever.
			if msg != nil && msg.Method == "" && msg.ID != nil {
				continue
			}
			id := json.RawMessage("null")
			if msg != nil && msg.ID != nil {
				id = msg.ID
			}
			c.send(&Message{JSONRPC: "2.0", ID: id, Error: perr})
			continue
		}
		switch {
		case msg.IsResponse():
			c.deliver(msg)
		case msg.IsNotification():
			c.inflight.Add(1)
			notes <- msg
		default:
			c.inflight.Add(1)
			go c.handle(ctx, msg)
		}
	}
}

func (c *Conn) handle(ctx context.Context, msg *Message) {
	defer c.inflight.Done()
	result, err := c.invoke(ctx, msg)
	if msg.IsNotification() {
		if err != nil {
			c.log.Warn().Str("method", msg.Method).Err(err).Msg("notification failed")
		}
		return
	}
	reply := &Message{JSONRPC: "2.0", ID: msg.ID}
	if err != nil {
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			c.log.Error().Str("method", msg.Method).Err(err).Msg("request failed")
			rpcErr = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		reply.Error = rpcErr
	} else {
		raw, merr := json.Marshal(result)
		if merr != nil {
			reply.Error = Errorf(CodeInternalError, "result of %s could not be encoded: %v", msg.Method, merr)
		} else {
			reply.Result = raw
		}
	}
	c.send(reply)
}

// invoke shields the connection from a handler's panic: one bad request must not take
// down every other caller's work.
func (c *Conn) invoke(ctx context.Context, msg *Message) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error().Str("method", msg.Method).Interface("panic", p).Msg("handler panicked")
			err = Errorf(CodeInternalError, "internal error in %s", msg.Method)
		}
	}()
	return c.handler(ctx, msg.Method, msg.Params)
}

func (c *Conn) deliver(msg *Message) {
	key := string(msg.ID)
	c.pmu.Lock()
	ch, ok := c.pending[key]
	delete(c.pending, key)
	c.pmu.Unlock()
	if !ok {
		c.log.Warn().RawJSON("id", msg.ID).Msg("response to no pending request")
		return
	}
	ch <- msg
}

func (c *Conn) failPending(err error) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.closed = true
	for key, ch := range c.pending {
		ch <- &Message{JSONRPC: "2.0", Error: &Error{Code: CodeCancelled, Message: err.Error()}}
		delete(c.pending, key)
	}
}

// Call sends a request to the peer and decodes its result into result (which may be
// nil). It gives up when ctx ends, or after DefaultCallTimeout if ctx has no deadline.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	rawParams, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding params of %s: %w", method, err)
	}
	id := json.RawMessage(strconv.FormatInt(c.nextID.Add(1), 10))
	ch := make(chan *Message, 1)
	c.pmu.Lock()
	if c.closed {
		c.pmu.Unlock()
		return fmt.Errorf("%s: connection closed", method)
	}
	c.pending[string(id)] = ch
	c.pmu.Unlock()
	if err := c.send(&Message{JSONRPC: "2.0", ID: id, Method: method, Params: rawParams}); err != nil {
		c.forget(id)
		return err
	}
	select {
	case reply := <-ch:
		if reply.Error != nil {
			return reply.Error
		}
		if result != nil {
			return json.Unmarshal(reply.Result, result)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("%s: no answer from the peer: %w", method, ctx.Err())
	}
}

func (c *Conn) forget(id json.RawMessage) {
	c.pmu.Lock()
	delete(c.pending, string(id))
	c.pmu.Unlock()
}

// Notify sends a notification to the peer.
func (c *Conn) Notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding params of %s: %w", method, err)
	}
	return c.send(&Message{JSONRPC: "2.0", Method: method, Params: raw})
}

func (c *Conn) send(m *Message) error {
	data, err := encode(m)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	id := "c" + strconv.FormatInt(c.nextSeq.Add(1), 10)
	frames := SplitOutbound(data, id, c.frameLimit)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for _, f := range frames {
		if err := WriteFrame(c.w, f); err != nil {
			c.log.Error().Err(err).Msg("writing frame")
			return fmt.Errorf("writing frame: %w", err)
		}
	}
	return nil
}

// encode serializes m. A successful response is assembled by hand: its result was
// marshalled a moment ago by this package, and json.Marshal would scan and copy a
// multi-megabyte result once more only to validate it.
func encode(m *Message) ([]byte, error) {
	if m.Method != "" || m.Error != nil || m.Result == nil {
		return json.Marshal(m)
	}
	b := make([]byte, 0, len(m.Result)+len(m.ID)+32)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, m.ID...)
	b = append(b, `,"result":`...)
	b = append(b, m.Result...)
	return append(b, '}'), nil
}

// fastResponseMin is the size from which a response's envelope is read by
// fastResponse rather than decoded: below it, decoding costs nothing worth saving.
const fastResponseMin = 64 << 10

// fastResponse reads the envelope of a large successful response,
// {"jsonrpc":"2.0","id":N,"result":…} with its members in any order, without
// decoding the result: the result is only delimited (strings are skipped with a
// byte search) and handed to Call, whose json.Unmarshal into the caller's value
// is then the one full decode of a multi-megabyte browser answer. Anything else
// (a request, an error, a member it does not expect, malformed JSON around the
// result) returns nil and goes through DecodeMessage. A result that is not valid
// JSON fails in Call's Unmarshal.
func fastResponse(data []byte) *Message {
	if len(data) < fastResponseMin {
		return nil
	}
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil
	}
	var m Message
	i++
	for {
		i = skipWS(data, i)
		if i >= len(data) || data[i] != '"' {
			return nil
		}
		end := skipString(data, i)
		if end < 0 {
			return nil
		}
		key := data[i+1 : end-1]
		i = skipWS(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil
		}
		i = skipWS(data, i+1)
		vend := skipValue(data, i)
		if vend < 0 {
			return nil
		}
		val := data[i:vend]
		switch string(key) {
		case "jsonrpc":
			if string(val) != `"2.0"` || m.JSONRPC != "" {
				return nil
			}
			m.JSONRPC = "2.0"
		case "id":
			if m.ID != nil || !validID(val) || val[0] == '"' || string(val) == "null" {
				return nil // string ids are rare and may need unescaping: the slow path
			}
			m.ID = json.RawMessage(val)
		case "result":
			if m.Result != nil {
				return nil
			}
			m.Result = json.RawMessage(val)
		default:
			return nil
		}
		i = skipWS(data, vend)
		if i >= len(data) {
			return nil
		}
		if data[i] == ',' {
			i++
			continue
		}
		if data[i] != '}' || skipWS(data, i+1) != len(data) {
			return nil
		}
		break
	}
	if m.JSONRPC == "" || m.ID == nil || m.Result == nil {
		return nil
	}
	return &m
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string starting at b[i] ('"'),
// or -1. Only quotes and the backslashes before them are looked at (validity is
// Unmarshal's), so the search runs at memchr speed.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		k := i
		for k > 0 && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
		i++ // an escaped quote
	}
}

// skipValue returns the index just past the JSON value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	// A number, true, false or null: up to the next delimiter.
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
