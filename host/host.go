// Package host is Ferry's brain: the process a browser starts through native
// messaging. It puts the rooms together (the toolbox, the method table, the line to
// the person) and serves the extension's connection; it answers host.hello,
// host.info and host.ping itself. Every other method lives beside the room it
// exposes and is registered here.
package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/agent"
	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/pageactions"
	"github.com/ferryhq/ferry/host/toolbox"
	"github.com/ferryhq/ferry/host/uiconn"
	"github.com/ferryhq/ferry/host/workspace"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// SettingLogLevel is the least severe level the host's log writes.
const SettingLogLevel = "log.level"

func init() {
	config.Register(config.Setting{
		Key:         SettingLogLevel,
		Description: "the least severe log level written: debug, info, warn or error",
		Default:     "info",
		Validate:    config.OneOf("debug", "info", "warn", "error"),
	})
}

// Host is one running host: its database, its methods and its connection.
type Host struct {
	DB      *storage.DB
	DataDir string
	Log     zerolog.Logger
	Methods *protocol.Mux
	Caller  string // the extension origin that started us, when a browser did
	// Tools is the registry and its audit log; Close must run before the database
	// closes, or queued audit rows are lost.
	Tools *toolbox.Toolbox

	started time.Time
	now     func() time.Time

	ui uiconn.Link // the extension's connection while Serve runs
}

// New prepares a host over an open database and registers every method it answers.
func New(db *storage.DB, dataDir string, log zerolog.Logger) (*Host, error) {
	h := &Host{DB: db, DataDir: dataDir, Log: log, Methods: protocol.NewMux(), now: time.Now}
	h.started = h.now()
	tb, err := toolbox.Open(db, log, &h.ui)
	if err != nil {
		return nil, err
	}
	h.Tools = tb
	mux := h.Methods
	registerFirst(mux, func(p helloParams) { logHello(h.Log, p) })
	protocol.Handle(mux, "host.info", h.info, protocol.Outside)
	// The tool pipeline caches its policy for a second: a change applies to the next call.
	config.RegisterMethods(mux, db, tb.Settings.Refresh)
	toolbox.RegisterMethods(mux, tb)
	model.RegisterMethods(mux, db)
	agent.RegisterMethods(mux, tb.Agent)
	pageactions.RegisterMethods(mux, tb.Pages)
	uiconn.RegisterMethods(mux, &h.ui, log)
	workspace.RegisterMethods(mux, db, tb.Settings, log)
	return h, nil
}

// Close writes what the host still holds in memory (queued audit rows). The caller
// closes the database after it.
func (h *Host) Close() error { return h.Tools.Close() }

// Conn is the extension's connection while Serve runs (nil otherwise), for sending
// requests to the extension.
func (h *Host) Conn() *protocol.Conn { return h.ui.Conn() }

// Serve speaks the protocol over r and w until the peer closes r. Requests already
// running when the stream ends are finished and answered before Serve returns.
func (h *Host) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	conn := protocol.NewConn(r, w, h.Methods.Dispatch, protocol.WithLogger(h.Log))
	defer h.attach(conn)()
	return conn.Serve(ctx)
}

// attach makes conn the extension's connection until the returned detach is called.
func (h *Host) attach(conn *protocol.Conn) (detach func()) {
	ui, detachUI := h.ui.Attach(conn)
	// Confirmations and ask_user go to the extension while it is connected.
	// A page action's own page may answer its confirmation too (host/pageactions).
	h.Tools.Registry.SetUI(h.Tools.Pages.WrapUI(h.Tools.Agent.WrapUI(ui)))
	return func() {
		h.Tools.Registry.SetUI(nil)
		detachUI()
	}
}

// Launcher serves the extension's connection from the first moment of the process.
// host.hello and host.ping need nothing but the binary and are answered at once;
// the database opens and migrates and the host is built beside those first replies
// (by the start function, which calls Ready), and every other request waits for
// that. The browser's first reply then costs the process start and no more.
type Launcher struct {
	log   zerolog.Logger
	first *protocol.Mux
	start func()
	once  sync.Once
	ready chan struct{} // closed by Ready
	host  *Host
}

// startDelay bounds how long a connection that asks nothing leaves the host unbuilt.
const startDelay = 20 * time.Millisecond

// NewLauncher returns a Launcher whose host is not ready yet. start, when not nil,
// builds the host and calls Ready; the Launcher runs it once, in the background, as
// soon as its first reply is made, a request needs the host, or startDelay has
// passed, whichever comes first: on a busy machine the first reply does not share
// the processor with the database. With a nil start the caller builds the host itself.
func NewLauncher(log zerolog.Logger, start func()) *Launcher {
	l := &Launcher{log: log, first: protocol.NewMux(), start: start, ready: make(chan struct{})}
	registerFirst(l.first, func(p helloParams) {
		// Whether an info line is written is a setting: the line waits for it.
		go func() {
			<-l.ready
			logHello(l.host.Log, p)
		}()
	})
	return l
}

func (l *Launcher) kick() {
	if l.start != nil {
		l.once.Do(func() { go l.start() })
	}
}

// Ready hands the built host over; it is called once.
func (l *Launcher) Ready(h *Host) {
	l.host = h
	close(l.ready)
}

// Serve is Host.Serve for a host that may still be on its way.
func (l *Launcher) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	attached := make(chan struct{})
	conn := protocol.NewConn(r, w, func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		if l.first.Has(method) {
			defer l.kick() // the reply is made: its write is all that is left
			return l.first.Dispatch(ctx, method, params)
		}
		l.kick()
		select {
		case <-attached:
		case <-ctx.Done():
			return nil, protocol.Errorf(protocol.CodeCancelled, "%s: the host stopped before it was ready", method)
		}
		return l.host.Methods.Dispatch(ctx, method, params)
	}, protocol.WithLogger(l.log))
	defer time.AfterFunc(startDelay, l.kick).Stop()
	stop, detached := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(detached)
		select {
		case <-l.ready:
		case <-stop:
			return
		}
		detach := l.host.attach(conn)
		close(attached)
		<-stop
		detach()
	}()
	err := conn.Serve(ctx)
	close(stop)
	<-detached
	return err
}

type helloParams struct {
	Protocol      int    `json:"protocol"`
	Client        string `json:"client,omitempty"`
	ClientVersion string `json:"client_version,omitempty"`
}

// registerFirst registers the methods that need nothing but the binary: host.hello
// and host.ping, which a Launcher answers before the database is open. logged hears
// of every successful hello.
func registerFirst(mux *protocol.Mux, logged func(helloParams)) {
	protocol.Handle(mux, "host.hello", func(ctx context.Context, p helloParams) (any, error) {
		if p.Protocol == 0 {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: host.hello needs the client's protocol number")
		}
		if p.Protocol != buildinfo.Protocol {
			return nil, mismatch(p)
		}
		logged(p)
		return map[string]any{"name": "ferry", "version": buildinfo.Version, "protocol": buildinfo.Protocol}, nil
	}, protocol.Outside)
	protocol.Handle(mux, "host.ping", ping, protocol.Outside)
}

func logHello(log zerolog.Logger, p helloParams) {
	log.Info().Str("client", p.Client).Str("client_version", p.ClientVersion).Msg("hello")
}

func mismatch(p helloParams) error {
	who := p.Client
	if who == "" {
		who = "the client"
	}
	var fix string
	if p.Protocol > buildinfo.Protocol {
		fix = "update the ferry host: install the newer ferry binary, then run `ferry install`"
	} else {
		fix = "update the Ferry extension to the version that matches ferry " + buildinfo.Version
	}
	return &protocol.Error{
		Code: protocol.CodeProtocolMismatch,
		Message: fmt.Sprintf("protocol mismatch: %s speaks protocol %d but ferry %s speaks protocol %d; %s",
			who, p.Protocol, buildinfo.Version, buildinfo.Protocol, fix),
		Data: map[string]int{"host_protocol": buildinfo.Protocol, "client_protocol": p.Protocol},
	}
}

func (h *Host) info(ctx context.Context, _ struct{}) (any, error) {
	return map[string]any{
		"name":           "ferry",
		"version":        buildinfo.Version,
		"protocol":       buildinfo.Protocol,
		"data_dir":       h.DataDir,
		"database_path":  h.DB.Path(),
		"database_bytes": h.DB.Size(),
		"schema_version": storage.SchemaVersion(),
		"log_path":       storage.LogPath(h.DataDir),
		"pid":            os.Getpid(),
		"caller":         h.Caller,
		"started_at":     h.started.UTC().Format(time.RFC3339Nano),
		"uptime_ms":      h.now().Sub(h.started).Milliseconds(),
	}, nil
}

// pingUnit is repeated to build a ping payload of a requested size. It holds the
// characters that stress chunking: a quote and a backslash (escaped in JSON) and a
// three-byte character (a chunk must never split it). 16 bytes.
const pingUnit = "0123456789\"\\\u2713."

// PingPayload is the payload host.ping returns for a size: exactly size bytes of UTF-8,
// pingUnit repeated and padded with 'x'.
func PingPayload(size int) string {
	return strings.Repeat(pingUnit, size/len(pingUnit)) + strings.Repeat("x", size%len(pingUnit))
}

type pingParams struct {
	Payload json.RawMessage `json:"payload,omitempty"`
	Size    int             `json:"size,omitempty"`
	DelayMS int             `json:"delay_ms,omitempty"`
}

func ping(ctx context.Context, p pingParams) (any, error) {
	if p.Size < 0 || p.Size > protocol.MaxInboundFrame {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: size must be between 0 and %d", protocol.MaxInboundFrame)
	}
	if p.DelayMS < 0 || p.DelayMS > 60000 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: delay_ms must be between 0 and 60000")
	}
	if p.DelayMS > 0 {
		select {
		case <-time.After(time.Duration(p.DelayMS) * time.Millisecond):
		case <-ctx.Done():
			return nil, protocol.Errorf(protocol.CodeCancelled, "ping cancelled: %v", ctx.Err())
		}
	}
	if p.Size > 0 {
		return map[string]any{"payload": PingPayload(p.Size)}, nil
	}
	if p.Payload == nil {
		return map[string]any{"payload": nil}, nil
	}
	// The payload was checked when the request was read: it goes back as it came,
	// not encoded once more.
	reply := make(protocol.Verbatim, 0, len(p.Payload)+len(`{"payload":}`))
	reply = append(reply, `{"payload":`...)
	reply = append(reply, p.Payload...)
	return append(reply, '}'), nil
}
