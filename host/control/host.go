package control

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ferryhq/ferry/host/agent"
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

// socketMethods are the host methods a socket client may use; the rest (page.*,
// ui.*, settings.set, secrets.set, …) belong to the extension alone.
var socketMethods = map[string]bool{
	"host.hello": true, "host.info": true, "host.ping": true,
	"tools.list": true, "tools.call": true,
	"chat.send": true, "chat.cancel": true,
	"conversations.list": true, "conversations.get": true, "runs.get": true,
	"audit.query": true, "audit.export": true, "settings.list": true,
}

// Local is what a socket client reaches of the host it talks to.
type Local struct {
	Methods *protocol.Mux    // the host's method table
	Tools   *toolbox.Toolbox // its registry, audit log, agent and settings
}

// HostHandler answers socket clients with the host's own methods and registry.
// The socket decides who the client is, never the client: every call and run it
// starts carries an outside agent's scope (mcp.allowed_tools, enforced in the
// pipeline), the caller "mcp" for `ferry mcp` and "socket" otherwise, and no origin.
// tools.list offers only what that scope may call; chat.send sends the run's events
// (chat.event) to the client that started it as well, and the run is cancelled when
// its client goes away.
func HostHandler(h Local) Handler {
	own := protocol.NewMux() // the socket's own versions of three methods
	protocol.Handle(own, "tools.call", func(ctx context.Context, p toolbox.CallParams) (any, error) {
		return toolsCall(tools.WithSession(ctx, sessionID(peerOf(ctx))), h, peerOf(ctx), p)
	})
	protocol.Handle(own, "tools.list", func(ctx context.Context, p listParams) (any, error) { return toolsList(ctx, h, peerOf(ctx), p) })
	protocol.Handle(own, "chat.send", func(ctx context.Context, p sendParams) (any, error) { return chatSend(ctx, h, peerOf(ctx), p) })
	return func(ctx context.Context, p *Peer, method string, params json.RawMessage) (any, error) {
		if !socketMethods[method] {
			return nil, protocol.Errorf(protocol.CodeMethodNotFound, "method not found on the control socket: %s", method)
		}
		if own.Has(method) {
			return own.Dispatch(context.WithValue(ctx, peerKey{}, p), method, params)
		}
		return h.Methods.Dispatch(ctx, method, params)
	}
}

type peerKey struct{}

func peerOf(ctx context.Context) *Peer { p, _ := ctx.Value(peerKey{}).(*Peer); return p }

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

// toolsCall runs a client's call under its scope. Of the params only the tool, its
// arguments and the tab are the client's to say: caller, origin, trace and
// conversation are the host's, and ignored.
func toolsCall(ctx context.Context, h Local, peer *Peer, p toolbox.CallParams) (any, error) {
	if p.Name == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: tools.call needs the tool's name")
	}
	scope := PeerScope(peer)
	return h.Tools.Registry.Call(ctx, &tools.Call{
		Tool: p.Name, Arguments: p.Arguments, TabID: p.TabID, Caller: scope.Principal, Scope: scope,
	}), nil
}

type listParams struct {
	TabID int  `json:"tab_id,omitempty"`
	Model bool `json:"model,omitempty"`
}

func toolsList(ctx context.Context, h Local, peer *Peer, p listParams) (any, error) {
	reg := h.Tools.Registry
	list := reg.List
	if p.Model {
		list = reg.ModelList
	}
	scope := PeerScope(peer)
	avail, unavail := list(ctx, p.TabID)
	avail = reg.Offered(ctx, scope, avail)
	return map[string]any{"tools": avail, "unavailable": reg.OfferedUnavailable(ctx, scope, p.TabID, unavail), "tokens": tools.TotalTokens(avail)}, nil
}

// sendParams is chat.send as a socket client sends it. Origin is accepted (older
// clients send it) and ignored: the host looks the tab's origin up itself.
type sendParams struct {
	Text           string `json:"text"`
	ConversationID string `json:"conversation_id,omitempty"`
	TabID          int    `json:"tab_id,omitempty"`
	Origin         string `json:"origin,omitempty"`
	ProviderID     string `json:"provider_id,omitempty"`
}

func chatSend(ctx context.Context, h Local, peer *Peer, p sendParams) (any, error) {
	if strings.TrimSpace(p.Text) == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: chat.send needs the message text")
	}
	r, err := h.Tools.Agent.Send(ctx, agent.SendRequest{
		Text: p.Text, ConversationID: p.ConversationID, TabID: p.TabID, ProviderID: p.ProviderID,
		Scope:   PeerScope(peer),
		OnEvent: func(ev agent.Event) { peer.Notify("chat.event", ev) },
	})
	if err != nil {
		return nil, err
	}
	peer.OnClose(func() { r.Cancel() })
	return map[string]string{"conversation_id": r.ConversationID, "run_id": r.ID}, nil
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
