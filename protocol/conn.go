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
// run concurrently, each on a goroutine of its own while it runs; writes are serialized so frames never
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

	// Requests run on workers: a worker done with one waits a while for the next
	// (work) instead of exiting, so that the stack the first request grew serves the
	// next ones. A fresh goroutine per request grew its stack from nothing each time
	// (encoding/json's decoding goes deep), and that copying was a third of the cost
	// of a small request.
	work chan *Message
	idle atomic.Int32
	done chan struct{} // closed when the stream has ended: idle workers exit
}

// maxIdleWorkers bounds the workers waiting for a request; more concurrent requests
// still each get one, and the workers beyond this number exit when done.
const maxIdleWorkers = 16

// workerIdle is how long a worker waits for the next request before it exits.
const workerIdle = 30 * time.Second

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
		work:       make(chan *Message),
		done:       make(chan struct{}),
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
	close(c.done)
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
			select {
			case c.work <- msg: // an idle worker took it
			default:
				go c.worker(ctx, msg)
			}
		}
	}
}

// worker handles msg, then the requests idle workers are handed, until it has
// waited workerIdle for one, enough others are waiting, or the stream has ended.
func (c *Conn) worker(ctx context.Context, msg *Message) {
	var timer *time.Timer
	for {
		c.handle(ctx, msg)
		if c.idle.Add(1) > maxIdleWorkers {
			c.idle.Add(-1)
			return
		}
		if timer == nil {
			timer = time.NewTimer(workerIdle)
		} else {
			timer.Reset(workerIdle)
		}
		select {
		case msg = <-c.work:
			c.idle.Add(-1)
		case <-timer.C:
			c.idle.Add(-1)
			return
		case <-c.done:
			c.idle.Add(-1)
			timer.Stop()
			return
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
	if err == nil {
		frame, merr := appendResponse(newFrame(), msg.ID, result)
		if merr == nil {
			c.write(frame)
			return
		}
		err = Errorf(CodeInternalError, "result of %s could not be encoded: %v", msg.Method, merr)
	}
	var rpcErr *Error
	if !errors.As(err, &rpcErr) {
		c.log.Error().Str("method", msg.Method).Err(err).Msg("request failed")
		rpcErr = &Error{Code: CodeInternalError, Message: err.Error()}
	}
	c.send(&Message{JSONRPC: "2.0", ID: msg.ID, Error: rpcErr})
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
	id := json.RawMessage(strconv.FormatInt(c.nextID.Add(1), 10))
	frame, err := appendRequest(newFrame(), id, method, params)
	if err != nil {
		return fmt.Errorf("encoding params of %s: %w", method, err)
	}
	ch := make(chan *Message, 1)
	c.pmu.Lock()
	if c.closed {
		c.pmu.Unlock()
		return fmt.Errorf("%s: connection closed", method)
	}
	c.pending[string(id)] = ch
	c.pmu.Unlock()
	if err := c.write(frame); err != nil {
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
	frame, err := appendRequest(newFrame(), nil, method, params)
	if err != nil {
		return fmt.Errorf("encoding params of %s: %w", method, err)
	}
	return c.write(frame)
}

// send writes a message that has no result or params of its own to encode (an error
// reply).
func (c *Conn) send(m *Message) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	return c.write(append(newFrame(), data...))
}

// write sends one message, built behind a frame header (newFrame): as one frame when
// it fits, else as chunk frames. Frames go out as they were built, not copied again.
func (c *Conn) write(frame []byte) error {
	frames := [][]byte{frame}
	if len(frame)-frameHeader <= c.frameLimit {
		putFrameHeader(frame)
	} else {
		id := "c" + strconv.FormatInt(c.nextSeq.Add(1), 10)
		frames = chunkFrames(frame[frameHeader:], id, c.frameLimit)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for _, f := range frames {
		if _, err := c.w.Write(f); err != nil {
			c.log.Error().Err(err).Msg("writing frame")
			return fmt.Errorf("writing frame: %w", err)
		}
	}
	return nil
}

// newFrame is an empty message with room for its frame header in front.
func newFrame() []byte { return make([]byte, frameHeader, 256) }

// Verbatim is a result that is already JSON, written into the reply as it is. A
// result of any other type is encoded with encoding/json, which also scans and
// copies a json.RawMessage to check it; a handler returns Verbatim only for bytes
// known to be valid JSON, such as params the connection has read (DecodeMessage
// checks them) or the output of json.Marshal.
type Verbatim []byte

// MarshalJSON lets a Verbatim inside another value encode as the JSON it holds.
func (v Verbatim) MarshalJSON() ([]byte, error) {
	if len(v) == 0 {
		return []byte("null"), nil
	}
	return v, nil
}

// appendResponse appends a success response. The result is encoded straight into
// dst, not into a buffer of its own that would then be copied.
func appendResponse(dst []byte, id json.RawMessage, result any) ([]byte, error) {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	dst, err := appendJSON(dst, result)
	return append(dst, '}'), err
}

// appendRequest appends a request, or a notification when id is nil.
func appendRequest(dst []byte, id json.RawMessage, method string, params any) ([]byte, error) {
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if id != nil {
		dst = append(dst, `"id":`...)
		dst = append(dst, id...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"method":`...)
	dst, _ = appendJSON(dst, method) // a string always encodes
	dst = append(dst, `,"params":`...)
	dst, err := appendJSON(dst, params)
	return append(dst, '}'), err
}

// appendJSON appends v as json.Marshal encodes it (a Verbatim as it is).
func appendJSON(dst []byte, v any) ([]byte, error) {
	if raw, ok := v.(Verbatim); ok && len(raw) > 0 {
		return append(dst, raw...), nil
	}
	buf := bytes.NewBuffer(dst)
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return dst, err
	}
	out := buf.Bytes()
	return out[:len(out)-1], nil // Encode ends the value with a newline
}
