package control

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferryhq/ferry/protocol"
	"github.com/rs/zerolog"
)

// HelloMethod is the first request a client sends: {token}.
const HelloMethod = "control.hello"

// Handler answers one request or notification of an authenticated client. The peer
// lets it send notifications to that one client.
type Handler func(ctx context.Context, p *Peer, method string, params json.RawMessage) (any, error)

// Options configure Listen.
type Options struct {
	DataDir string
	Info    Info // PID and Socket are filled in; StartedAt defaults to now
	Handle  Handler
	Log     zerolog.Logger
	// TouchEvery bounds how often activity rewrites the info file (default 2 s).
	TouchEvery time.Duration
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
	closed  bool
	wg      sync.WaitGroup
}

// Peer is one connected client.
type Peer struct {
	conn   *protocol.Conn
	nc     net.Conn
	authed atomic.Bool

	mu      sync.Mutex
	onClose []func()
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
		go s.serve(nc)
	}
}

func (s *Server) serve(nc net.Conn) {
	p := &Peer{nc: nc}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.peers[p] = struct{}{}
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		nc.Close()
		s.mu.Lock()
		delete(s.peers, p)
		s.mu.Unlock()
		p.mu.Lock()
		fs := p.onClose
		p.onClose = nil
		p.mu.Unlock()
		for _, f := range fs {
			f()
		}
	}()
	// Nothing is chunked on the socket: the client is a Go program that reads frames
	// up to protocol.MaxInboundFrame, not Chrome with its 1 MiB limit.
	p.conn = protocol.NewConn(nc, nc, func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		return s.handle(ctx, p, method, params)
	}, protocol.WithLogger(s.opts.Log), protocol.WithOutboundFrameLimit(protocol.MaxInboundFrame))
	if err := p.conn.Serve(ctx); err != nil && !errors.Is(err, net.ErrClosed) {
		s.opts.Log.Debug().Err(err).Msg("control: client connection ended")
	}
}

func (s *Server) handle(ctx context.Context, p *Peer, method string, params json.RawMessage) (any, error) {
	if method == HelloMethod {
		var hp struct {
			Token string `json:"token"`
		}
		_ = json.Unmarshal(params, &hp)
		if subtle.ConstantTimeCompare([]byte(hp.Token), []byte(s.token)) != 1 {
			s.opts.Log.Warn().Msg("control: a client presented a wrong token; disconnecting it")
			// Answer first, then hang up.
			time.AfterFunc(100*time.Millisecond, func() { p.nc.Close() })
			return nil, protocol.Errorf(protocol.CodeUnauthorized, "unauthorized: wrong control token")
		}
		p.authed.Store(true)
		s.Touch()
		return s.Info(), nil
	}
	if !p.authed.Load() {
		return nil, protocol.Errorf(protocol.CodeUnauthorized, "unauthorized: send %s {token} first (the token is in %s)", HelloMethod, Dir(s.opts.DataDir))
	}
	s.Touch()
	return s.opts.Handle(ctx, p, method, params)
}
