package control

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ferryhq/ferry/host/toolbox"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/protocol"
)

// SettingAllowedTools lists the tools outside agents (socket clients, `ferry mcp`)
// may call at all: the pipeline enforces it on every call they make, directly or
// through the runs they start.
const SettingAllowedTools = tools.SettingAllowedTools

// DefaultAllowedTools is everything except the risky tools.
const DefaultAllowedTools = tools.DefaultAllowedTools

// Names clients give themselves in control.hello. They label the audit rows; the
// scope is an outside agent's whatever a client says.
const (
	ClientMCP = "ferry mcp"
	ClientRun = "ferry run"
)

// Allowed parses a mcp.allowed_tools value into a predicate over tool names.
func Allowed(value string) func(names ...string) bool { return tools.OutsideRule(value) }

// Local is what a socket client reaches of the host it talks to.
type Local struct {
	Methods *protocol.Mux    // the host's method table
	Tools   *toolbox.Toolbox // its registry, audit log, agent and settings
}

// HostHandler answers socket clients from the host's one method table: the methods
// registered as protocol.Outside, and no other. The socket decides who the client
// is, never the client, once, here: every call and run it starts carries an outside
// agent's scope (mcp.allowed_tools, enforced in the pipeline), the caller "mcp" for
// `ferry mcp` and "socket" otherwise, no origin, its own session, and the peer that
// hears its runs' events (a run is cancelled when its client goes away).
func HostHandler(h Local) Handler {
	return func(ctx context.Context, p *Peer, method string, params json.RawMessage) (any, error) {
		if !h.Methods.IsOutside(method) {
			return nil, protocol.Errorf(protocol.CodeMethodNotFound, "method not found on the control socket: %s", method)
		}
		ctx = tools.WithScope(ctx, PeerScope(p))
		ctx = tools.WithSession(ctx, sessionID(p))
		ctx = protocol.WithPeer(ctx, p)
		return h.Methods.Dispatch(ctx, method, params)
	}
}

// sessions gives each connected client (each `ferry mcp`, each script) its own
// session id: the loop guard and the rate limits count a session's calls apart from
// every other's.
var (
	sessions    sync.Map // *Peer → string
	sessionSeq  atomic.Uint64
	sessionBase = strconv.FormatInt(time.Now().UnixNano(), 36)
)

func sessionID(p *Peer) string {
	if id, ok := sessions.Load(p); ok {
		return id.(string)
	}
	id, loaded := sessions.LoadOrStore(p, sessionBase+"-"+strconv.FormatUint(sessionSeq.Add(1), 36))
	if !loaded {
		p.OnClose(func() { sessions.Delete(p) })
	}
	return id.(string)
}

// PeerScope is the scope of everything a socket client starts.
func PeerScope(p *Peer) *tools.Scope {
	name := p.Client()
	principal := tools.PrincipalSocket
	if name == ClientMCP {
		// The card says "ferry mcp" by its kind already.
		principal, name = tools.PrincipalMCP, ""
	}
	return &tools.Scope{Principal: principal, Client: name, Outside: true}
}

// cut bounds a client-given label.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
