package agent

import (
	"context"
	"errors"
	"strings"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
)

// RegisterMethods adds the chat, conversation and run methods. Events of the runs
// started here go wherever Options.Notify sends them (the host: chat.event
// notifications).
func RegisterMethods(mux *protocol.Mux, m *Manager) {
	protocol.Handle(mux, "chat.send", m.chatSend, protocol.Outside)
	protocol.Handle(mux, "chat.cancel", m.chatCancel, protocol.Outside)
	protocol.Handle(mux, "chat.resume", m.chatResume)
	protocol.Handle(mux, "conversations.list", m.conversationsList, protocol.Outside)
	protocol.Handle(mux, "conversations.get", m.conversationsGet, protocol.Outside)
	protocol.Handle(mux, "conversations.rename", m.conversationsRename)
	protocol.Handle(mux, "conversations.delete", m.conversationsDelete)
	protocol.Handle(mux, "conversations.delete_all", m.conversationsDeleteAll)
	protocol.Handle(mux, "runs.get", m.runsGet, protocol.Outside)
}

func invalid(format string, a ...any) error {
	return protocol.Errorf(protocol.CodeInvalidParams, "invalid params: "+format, a...)
}

type sendParams struct {
	Text           string `json:"text"`
	ConversationID string `json:"conversation_id,omitempty"`
	TabID          int    `json:"tab_id,omitempty"`
	Origin         string `json:"origin,omitempty"`
	ProviderID     string `json:"provider_id,omitempty"`
}

type started struct {
	ConversationID string `json:"conversation_id"`
	RunID          string `json:"run_id"`
}

func (m *Manager) chatSend(ctx context.Context, p sendParams) (any, error) {
	if strings.TrimSpace(p.Text) == "" {
		return nil, invalid("chat.send needs the message text")
	}
	req := SendRequest{Text: p.Text, ConversationID: p.ConversationID, TabID: p.TabID, Origin: p.Origin, ProviderID: p.ProviderID}
	peer := protocol.PeerFrom(ctx)
	if s := tools.ScopeFromContext(ctx); s != nil {
		// An outside client: the run carries its scope, and the host looks the tab's
		// origin up itself.
		req.Scope, req.Origin = s, ""
	}
	if peer != nil {
		req.OnEvent = func(ev Event) { peer.Notify("chat.event", ev) }
	}
	r, err := m.Send(ctx, req)
	if err != nil {
		return nil, err
	}
	if peer != nil {
		peer.OnClose(func() { r.Cancel() })
	}
	return started{r.ConversationID, r.ID}, nil
}

// runParams names one run.
type runParams struct {
	RunID string `json:"run_id"`
}

func (m *Manager) chatCancel(ctx context.Context, p runParams) (any, error) {
	if p.RunID == "" {
		return nil, invalid("chat.cancel needs run_id")
	}
	return map[string]bool{"cancelled": m.Cancel(p.RunID)}, nil
}

type conversationParams struct {
	ConversationID string `json:"conversation_id"`
}

func (p conversationParams) check(method string) error {
	if p.ConversationID == "" {
		return invalid("%s needs conversation_id", method)
	}
	return nil
}

func (m *Manager) chatResume(ctx context.Context, p conversationParams) (any, error) {
	if err := p.check("chat.resume"); err != nil {
		return nil, err
	}
	r, err := m.Resume(ctx, p.ConversationID, nil)
	if err != nil {
		return nil, err
	}
	return started{r.ConversationID, r.ID}, nil
}

type listParams struct {
	Limit int `json:"limit,omitempty"`
}

func (m *Manager) conversationsList(ctx context.Context, p listParams) (any, error) {
	if p.Limit < 0 {
		return nil, invalid("limit cannot be negative")
	}
	list, err := m.db.ListConversations(ctx, p.Limit)
	if err != nil {
		return nil, err
	}
	return map[string]any{"conversations": list}, nil
}

func (m *Manager) conversationsGet(ctx context.Context, p conversationParams) (any, error) {
	if err := p.check("conversations.get"); err != nil {
		return nil, err
	}
	c, err := m.db.GetConversation(ctx, p.ConversationID)
	if err != nil {
		return nil, err
	}
	msgs, err := m.db.Messages(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	runs, err := m.db.ListRuns(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	tasks, err := m.db.ListTasks(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"conversation": c, "messages": msgs, "runs": runs, "tasks": tasks}
	if r := m.ActiveRun(c.ID); r != nil {
		out["active_run_id"] = r.ID
	}
	return out, nil
}

type renameParams struct {
	ConversationID string `json:"conversation_id"`
	Title          string `json:"title"`
}

func (m *Manager) conversationsRename(ctx context.Context, p renameParams) (any, error) {
	if p.ConversationID == "" || strings.TrimSpace(p.Title) == "" {
		return nil, invalid("conversations.rename needs conversation_id and a non-empty title")
	}
	t := strings.TrimSpace(p.Title)
	c, err := m.db.UpdateConversation(ctx, p.ConversationID, storage.ConversationUpdate{Title: &t})
	if err != nil {
		return nil, err
	}
	return map[string]any{"conversation": c}, nil
}

func (m *Manager) conversationsDelete(ctx context.Context, p conversationParams) (any, error) {
	if err := p.check("conversations.delete"); err != nil {
		return nil, err
	}
	// A run still going would write into a conversation that no longer exists.
	if r := m.ActiveRun(p.ConversationID); r != nil {
		r.Cancel()
		<-r.Done()
	}
	if err := m.db.DeleteConversation(ctx, p.ConversationID); err != nil {
		return nil, err
	}
	return map[string]bool{"deleted": true}, nil
}

// conversationsDeleteAll deletes every conversation (the options page's "delete all
// conversations"), stopping their runs first, and says how many went.
func (m *Manager) conversationsDeleteAll(ctx context.Context, _ struct{}) (any, error) {
	deleted := 0
	for {
		list, err := m.db.ListConversations(ctx, 500)
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return map[string]int{"deleted": deleted}, nil
		}
		for _, c := range list {
			if r := m.ActiveRun(c.ID); r != nil {
				r.Cancel()
				<-r.Done()
			}
			err := m.db.DeleteConversation(ctx, c.ID)
			switch {
			case err == nil:
				deleted++
			case errors.Is(err, storage.ErrConversationNotFound): // deleted meanwhile
			default:
				return nil, err
			}
		}
	}
}

func (m *Manager) runsGet(ctx context.Context, p runParams) (any, error) {
	if p.RunID == "" {
		return nil, invalid("runs.get needs run_id")
	}
	r, err := m.db.GetRun(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	calls, err := m.db.ModelCalls(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"run": r, "model_calls": calls}, nil
}
