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
	protocol.Handle(mux, "host.hello", h.hello)
	protocol.Handle(mux, "host.info", h.info)
	protocol.Handle(mux, "host.ping", h.ping)
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
	ui, detach := h.ui.Attach(conn)
	// Confirmations and ask_user go to the extension while it is connected.
	// A page action's own page may answer its confirmation too (host/pageactions).
	h.Tools.Registry.SetUI(h.Tools.Pages.WrapUI(h.Tools.Agent.WrapUI(ui)))
	defer func() {
		h.Tools.Registry.SetUI(nil)
		detach()
	}()
	return conn.Serve(ctx)
}

type helloParams struct {
	Protocol      int    `json:"protocol"`
	Client        string `json:"client,omitempty"`
	ClientVersion string `json:"client_version,omitempty"`
}

func (h *Host) hello(ctx context.Context, p helloParams) (any, error) {
	if p.Protocol == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: host.hello needs the client's protocol number")
	}
	if p.Protocol != buildinfo.Protocol {
		return nil, mismatch(p)
	}
	h.Log.Info().Str("client", p.Client).Str("client_version", p.ClientVersion).Msg("hello")
	return map[string]any{"name": "ferry", "version": buildinfo.Version, "protocol": buildinfo.Protocol}, nil
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

func (h *Host) ping(ctx context.Context, p pingParams) (any, error) {
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
