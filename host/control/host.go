package control

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferryhq/ferry/host/agent"
	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/toolbox"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
)

// SettingAllowedTools lists the tools outside agents (socket clients, `ferry mcp`)
// may call at all.
const SettingAllowedTools = "mcp.allowed_tools"

// DefaultAllowedTools is everything except the risky tools.
const DefaultAllowedTools = "*,-execute_script,-browser_navigate,-close_tab,-opfs_delete"

func init() {
	config.Register(config.Setting{Key: SettingAllowedTools, Default: DefaultAllowedTools,
		Description: "comma-separated tools that outside agents (ferry mcp, the control socket) may call: names (model-visible or registered), * for every tool, -name to exclude one; confirmations still happen in the side panel"})
}

// Allowed parses a mcp.allowed_tools value into a predicate over tool names.
func Allowed(value string) func(names ...string) bool {
	all := false
	allow, deny := map[string]bool{}, map[string]bool{}
	for _, f := range strings.Split(value, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case f == "*":
			all = true
		case strings.HasPrefix(f, "-"):
			deny[strings.TrimSpace(f[1:])] = true
		default:
			allow[f] = true
		}
	}
	return func(names ...string) bool {
		ok := all
		for _, n := range names {
			if deny[n] {
				return false
			}
			if allow[n] {
				ok = true
			}
		}
		return ok
	}
}

// AllowedTools reads the setting (its default when unset).
func AllowedTools(ctx context.Context, s config.Settings) func(names ...string) bool {
	return Allowed(s.Snapshot(ctx).String(SettingAllowedTools))
}

// socketMethods are the host methods a socket client may use; the rest (page.*,
// ui.*, settings.set, secrets.set, …) belong to the extension alone.
var socketMethods = map[string]bool{
	"host.hello": true, "host.info": true, "host.ping": true,
	"tools.list": true, "tools.call": true,
	"chat.send": true, "chat.cancel": true,
	"conversations.list": true, "conversations.get": true, "runs.get": true,
	"audit.query": true, "audit.export": true, "settings.list": true,
}

// socketCallers are the callers a client may name itself in tools.call; anything
// else is recorded as "socket". A client can never pass for the extension or a page.
var socketCallers = map[string]bool{"socket": true, "mcp": true}

// Local is what a socket client reaches of the host it talks to.
type Local struct {
	Methods *protocol.Mux    // the host's method table
	Tools   *toolbox.Toolbox // its registry, audit log, agent and settings
}

// HostHandler answers socket clients with the host's own methods and registry.
// Two methods differ from the extension's: tools.call is recorded with the socket
// caller and checked against mcp.allowed_tools; chat.send sends the run's events
// (chat.event) to the client that started the run as well, and a run is cancelled
// when its client goes away.
func HostHandler(h Local) Handler {
	own := protocol.NewMux() // the socket's own versions of two methods
	protocol.Handle(own, "tools.call", func(ctx context.Context, p toolbox.CallParams) (any, error) {
		return toolsCall(tools.WithSession(ctx, sessionID(peerOf(ctx))), h, p)
	})
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

func toolsCall(ctx context.Context, h Local, p toolbox.CallParams) (any, error) {
	if !socketCallers[p.Caller] {
		p.Caller = "socket"
	}
	if p.Name != "" {
		// An unknown name goes on to the pipeline, which answers NOT_FOUND.
		if reg, known := h.Tools.Registry.Resolve(p.Name, p.TabID); known && !AllowedTools(ctx, h.Tools.Settings)(p.Name, reg) {
			names := []string{p.Name, reg}
			res := tools.Result{Code: tools.CodePermissionDenied,
				Reason: p.Name + " is not among the tools outside agents may use (setting " + SettingAllowedTools + "; `ferry config set " + SettingAllowedTools + " ...` changes it)"}
			// Recorded like every other refusal (the arguments are left out: redaction
			// is the pipeline's, and nothing ran).
			h.Tools.Audit.Record(storage.AuditEntry{Time: time.Now(), CallID: tools.NewID(), Tool: names[len(names)-1],
				Caller: p.Caller, Code: string(res.Code), Result: res.Reason, TraceID: tools.NewID(), Arguments: json.RawMessage("null")})
			return res, nil
		}
	}
	return h.Tools.ToolsCall(ctx, p)
}

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
		Text: p.Text, ConversationID: p.ConversationID, TabID: p.TabID, Origin: p.Origin, ProviderID: p.ProviderID,
		OnEvent: func(ev agent.Event) { peer.Notify("chat.event", ev) },
	})
	if err != nil {
		return nil, err
	}
	peer.OnClose(func() { r.Cancel() })
	return map[string]string{"conversation_id": r.ConversationID, "run_id": r.ID}, nil
}
