package control

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/ferryhq/ferry/protocol"
	"github.com/rs/zerolog"
)

// HelloMethod is the first request a client sends: {token}.
const HelloMethod = "control.hello"

// Handler answers one request or notification of an authenticated client. The peer
// lets it send notifications to that one client.
type Handler func(ctx context.Context, p *Peer, method string, params json.RawMessage) (any, error)

// What a client that has not presented the token may cost the host: one frame of at
// most MaxHelloFrame bytes (a hello is about a hundred), HelloTimeout to send it, and
// one of MaxPendingClients places. Everything larger waits until the token is
// accepted: a same-machine process that cannot read the token file must not make the
// host read, parse or hold anything big. MaxClients bounds every connection at once.
const (
	HelloTimeout      = 5 * time.Second
	MaxHelloFrame     = 4 << 10
	MaxPendingClients = 16
	MaxClients        = 64
)

// Options configure Listen.
type Options struct {
	DataDir string
	Info    Info // PID and Socket are filled in; StartedAt defaults to now
	Handle  Handler
	Log     zerolog.Logger
	// TouchEvery bounds how often activity rewrites the info file (default 2 s).
	TouchEvery time.Duration
	// HelloTimeout, MaxPending and MaxClients replace the bounds above (tests).
	HelloTimeout time.Duration
	MaxPending   int
	MaxClients   int
}

// Server is one host's listening control socket.
type Server struct {
	opts  Options
	l     net.Listener
	token string
	sock  string

	mu      sync.Mutex
	info    Info
	written time.Time
	peers   map[*Peer]struct{}
	pending int // connections that have not yet presented the token
	closed  bool
	wg      sync.WaitGroup

	// Refusals are logged at most every refusalLogEvery, with a count, so that a
	// flood of clients cannot flood the log file (and rotate away what matters).
	refusedMu     sync.Mutex
	refused       int
	refusedLogged time.Time
}

const refusalLogEvery = 10 * time.Second

// noteRefusal logs why a client was refused, or counts it for the next line.
func (s *Server) noteRefusal(why string) {
	s.refusedMu.Lock()
	s.refused++
	now := time.Now()
	if now.Sub(s.refusedLogged) < refusalLogEvery {
		s.refusedMu.Unlock()
		return
	}
	n := s.refused
	s.refused, s.refusedLogged = 0, now
	s.refusedMu.Unlock()
	s.opts.Log.Warn().Str("reason", why).Int("refused", n).Msg("control: refused clients before the token (at most one line every 10 s)")
}

// Peer is one connected client.
type Peer struct {
	conn *protocol.Conn
	nc   net.Conn

	mu      sync.Mutex
	onClose []func()
	client  string // the name the client gave in control.hello
}

// Client is the name the client gave itself in control.hello ("ferry mcp", …), or "".
// A label only: every client of the socket is an outside agent to the host.
func (p *Peer) Client() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.client
}

// Notify sends a notification to this client only.
func (p *Peer) Notify(method string, params any) error { return p.conn.Notify(method, params) }

// OnClose runs f when the client goes away (or the server closes).
func (p *Peer) OnClose(f func()) {
	p.mu.Lock()
	p.onClose = append(p.onClose, f)
	p.mu.Unlock()
}

// Listen creates the socket, the token and the info file of this process and starts
// accepting clients. Files a crashed host left behind are cleaned first.
func Listen(opts Options) (*Server, error) {
	if opts.Handle == nil {
		return nil, errors.New("control: a handler is required")
	}
	if opts.TouchEvery == 0 {
		opts.TouchEvery = 2 * time.Second
	}
	if opts.HelloTimeout <= 0 {
		opts.HelloTimeout = HelloTimeout
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = MaxPendingClients
	}
	if opts.MaxClients <= 0 {
		opts.MaxClients = MaxClients
	}
	dir := Dir(opts.DataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// A folder created earlier with a looser mode (or by an older umask) is tightened:
	// the folder is what keeps other users away from the socket.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	List(opts.DataDir) // removes what dead hosts left
	pid := os.Getpid()
	sock, tokenPath, _ := paths(opts.DataDir, pid)
	if runtime.GOOS != "windows" && len(sock) > 100 { // sun_path's limit; pipes have none
		return nil, fmt.Errorf("control socket path %s is too long for a Unix socket (%d bytes; at most about 100): use a shorter FERRY_HOME", sock, len(sock))
	}
	os.Remove(sock) // a previous process with our pid is gone, or we would not have its pid
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(b)
	if err := writeFileAtomic(tokenPath, []byte(token+"\n")); err != nil {
		return nil, fmt.Errorf("writing the control token: %w", err)
	}
	l, err := listen(sock)
	if err != nil {
		os.Remove(tokenPath)
		return nil, err
	}
	info := opts.Info
	// The listener's own address: the socket path, or on Windows the pipe's name.
	info.PID, info.Socket = pid, l.Addr().String()
	now := time.Now().UTC()
	if info.StartedAt.IsZero() {
		info.StartedAt = now
	}
	info.LastActive = now
	s := &Server{opts: opts, l: l, token: token, sock: sock, info: info, peers: map[*Peer]struct{}{}}
	if err := s.writeInfo(); err != nil {
		l.Close()
		removeFiles(opts.DataDir, pid)
		return nil, fmt.Errorf("writing the control info: %w", err)
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Info is what the info file says now.
func (s *Server) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *Server) writeInfo() error {
	s.mu.Lock()
	info := s.info
	s.written = time.Now()
	s.mu.Unlock()
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	_, _, path := paths(s.opts.DataDir, info.PID)
	return writeFileAtomic(path, b)
}

// Touch records activity (a browser frame, a client request): clients pick the most
// recently active host by default. The file is rewritten at most every TouchEvery.
func (s *Server) Touch() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	now := time.Now()
	s.info.LastActive = now.UTC()
	due := now.Sub(s.written) >= s.opts.TouchEvery
	s.mu.Unlock()
	if due {
		if err := s.writeInfo(); err != nil {
			s.opts.Log.Warn().Err(err).Msg("control: updating the info file")
		}
	}
}

// Close stops listening, disconnects every client and removes the files.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	peers := make([]*Peer, 0, len(s.peers))
	for p := range s.peers {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	err := s.l.Close()
	for _, p := range peers {
		p.nc.Close()
	}
	removeFiles(s.opts.DataDir, s.info.PID)
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.opts.Log.Warn().Err(err).Msg("control: accept")
			}
			return
		}
		p := &Peer{nc: nc}
		if reason := s.admit(p); reason != "" {
			// Said inline, with a short deadline: a refused client gets no goroutine.
			s.noteRefusal(reason)
			nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			writeMessage(nc, &protocol.Message{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: protocol.Errorf(protocol.CodeBusy, "%s; try again shortly", reason)})
			nc.Close()
			continue
		}
		go s.serve(p)
	}
}

// admit counts p in, or says why there is no room for it.
func (s *Server) admit(p *Peer) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return "the host is shutting down"
	case len(s.peers) >= s.opts.MaxClients:
		return fmt.Sprintf("too many clients (%d) are connected to this host", len(s.peers))
	case s.pending >= s.opts.MaxPending:
		return fmt.Sprintf("too many clients (%d) are connecting without having presented the token", s.pending)
	}
	s.peers[p] = struct{}{}
	s.pending++
	return ""
}

func (s *Server) serve(p *Peer) {
	nc := p.nc
	authed := false
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		nc.Close()
		s.mu.Lock()
		delete(s.peers, p)
		if !authed {
			s.pending--
		}
		s.mu.Unlock()
		p.mu.Lock()
		fs := p.onClose
		p.onClose = nil
		p.mu.Unlock()
		for _, f := range fs {
			f()
		}
	}()
	err := s.hello(p, func() {
		// Counted out before the answer goes, so that a client that has it
		// never finds its own place still taken.
		authed = true
		s.mu.Lock()
		s.pending--
		s.mu.Unlock()
	})
	var he *HelloError
	switch {
	case errors.As(err, &he) && he.Silent:
		// A client that hung up without a word: the liveness check of `ferry run`
		// and `ferry mcp` looking for hosts does exactly that.
		return
	case err != nil:
		s.noteRefusal(err.Error())
		return
	}
	s.Touch()
	// Nothing is chunked on the socket: the client is a Go program that reads frames
	// up to protocol.MaxInboundFrame, not Chrome with its 1 MiB limit.
	p.conn = protocol.NewConn(nc, nc, func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		return s.handle(ctx, p, method, params)
	}, protocol.WithLogger(s.opts.Log), protocol.WithOutboundFrameLimit(protocol.MaxInboundFrame))
	if err := p.conn.Serve(ctx); err != nil && !errors.Is(err, net.ErrClosed) {
		s.opts.Log.Debug().Err(err).Msg("control: client connection ended")
	}
}

// hello is the whole of a connection before the token is accepted: one frame, read
// under a deadline and a small size limit, that must be control.hello with the right
// token. It is answered here, before the connection reaches protocol.Conn (and its
// 64 MiB frames, its goroutine per request); anything else is answered with
// protocol.CodeUnauthorized and the connection closed.
func (s *Server) hello(p *Peer, accepted func()) error {
	nc := p.nc
	nc.SetReadDeadline(time.Now().Add(s.opts.HelloTimeout))
	id, token, client, err := readHello(nc)
	nc.SetWriteDeadline(time.Now().Add(s.opts.HelloTimeout))
	defer nc.SetWriteDeadline(time.Time{})
	reply := &protocol.Message{JSONRPC: "2.0", ID: id}
	if err == nil && subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
		err = &HelloError{Message: "unauthorized: wrong control token"}
	}
	if err != nil {
		var he *HelloError
		if errors.As(err, &he) && !he.Silent {
			reply.Error = protocol.Errorf(protocol.CodeUnauthorized, "%s (the token is in %s)", he.Message, Dir(s.opts.DataDir))
			writeMessage(nc, reply)
		}
		return err
	}
	nc.SetReadDeadline(time.Time{})
	p.mu.Lock()
	p.client = client
	p.mu.Unlock()
	accepted()
	reply.Result, _ = json.Marshal(s.Info())
	return writeMessage(nc, reply)
}

func writeMessage(w io.Writer, m *protocol.Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return protocol.WriteFrame(w, b)
}

// HelloError is why a first frame was not a valid control.hello. Silent: the stream
// broke (ended, timed out), so there is nobody to answer.
type HelloError struct {
	Message string
	Silent  bool
}

func (e *HelloError) Error() string { return e.Message }

// ReadHello reads a client's first frame and returns the id and token of its
// control.hello. It never reads more than 4 + MaxHelloFrame bytes: a longer
// declared length is refused from the 4-byte prefix alone, before any allocation.
// The returned id is the request's, for the answer (null when there is none).
func ReadHello(r io.Reader) (id json.RawMessage, token string, err error) {
	id, token, _, err = readHello(r)
	return id, token, err
}

// readHello is ReadHello that also returns the name the client gave itself (cut to
// 64 bytes): a label for its audit rows, never a scope.
func readHello(r io.Reader) (id json.RawMessage, token, client string, err error) {
	id = json.RawMessage("null")
	data, err := protocol.ReadFrame(r, MaxHelloFrame)
	if err != nil {
		var fe *protocol.FrameSizeError
		if errors.As(err, &fe) {
			return id, "", "", &HelloError{Message: fmt.Sprintf("unauthorized: the first frame (%d bytes) is over the %d bytes allowed before %s {token}", fe.Length, MaxHelloFrame, HelloMethod)}
		}
		if errors.Is(err, protocol.ErrEmptyFrame) {
			return id, "", "", &HelloError{Message: "unauthorized: an empty frame; send " + HelloMethod + " {token} first"}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return id, "", "", &HelloError{Message: "unauthorized: no " + HelloMethod + " {token} in time"}
		}
		return id, "", "", &HelloError{Message: "no hello: " + err.Error(), Silent: true}
	}
	msg, perr := protocol.DecodeMessage(data)
	if perr != nil {
		if msg != nil && msg.ID != nil {
			id = msg.ID
		}
		return id, "", "", &HelloError{Message: "unauthorized: " + perr.Message}
	}
	if msg.ID != nil {
		id = msg.ID
	}
	if !msg.IsRequest() || msg.Method != HelloMethod {
		what := "a response"
		if msg.Method != "" {
			what = fmt.Sprintf("%q", msg.Method)
		}
		if len(what) > 80 {
			what = what[:80] + "…"
		}
		return id, "", "", &HelloError{Message: fmt.Sprintf("unauthorized: send %s {token} first, not %s", HelloMethod, what)}
	}
	var hp struct {
		Token  string `json:"token"`
		Client string `json:"client"`
	}
	if err := json.Unmarshal(msg.Params, &hp); err != nil || hp.Token == "" {
		return id, "", "", &HelloError{Message: "unauthorized: " + HelloMethod + " needs {token}"}
	}
	return id, hp.Token, cut(hp.Client, 64), nil
}

func (s *Server) handle(ctx context.Context, p *Peer, method string, params json.RawMessage) (any, error) {
	if method == HelloMethod {
		return s.Info(), nil // already accepted; a repeat is harmless
	}
	s.Touch()
	return s.opts.Handle(ctx, p, method, params)
}
