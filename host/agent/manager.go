// Package agent is the agent loop: it turns a user's message into model calls and
// tool calls through the registry's pipeline, keeps conversations and runs in the
// database with a diagnostics record of every model call, compacts long
// conversations, and schedules sub-agents (the agent tool). Runs live in the host
// as goroutines: whoever listens to their events, nobody needs to for them to go on.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/flow"
	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// Opener opens a configured provider by id; "" means the default provider.
type Opener func(ctx context.Context, providerID string) (model.Provider, error)

// PageContext describes the page of the tab a conversation is bound to, for the
// system prompt. The page-actions work fills it; a nil hook adds nothing.
type PageContext interface {
	PageContext(ctx context.Context, tabID int) (*tools.PageView, error)
}

// Options configures a Manager.
type Options struct {
	DB *storage.DB
	// Settings is where the agent reads its settings (nil: DB's, read afresh
	// each second).
	Settings config.Settings
	Registry *tools.Registry
	Open     Opener
	Log      zerolog.Logger
	// Notify hears every event of every top-level run (sub-agents' arrive wrapped
	// as sub_agent_event): the host sends them as chat.event notifications. It is
	// called in order, one event at a time; it must not block for long.
	Notify func(Event)
	// Page, when set, describes the bound tab's page on every turn.
	Page PageContext
	// Flow, when set, keeps each conversation's data-flow state and gates its runs'
	// calls (host/flow); nil leaves the calls to the rest of the pipeline alone.
	Flow *flow.Tracker
	// Browser says whether a browser is connected now; nil means never (`ferry
	// run`), and the system prompt says so.
	Browser func() bool
	// SubagentTimeout bounds each sub-agent; zero means 600 s.
	SubagentTimeout time.Duration
	// StaleAfter is how old a run's heartbeat may get before another process
	// takes the run for dead; zero means 60 s. The manager beats every third of it.
	StaleAfter time.Duration
}

// Manager runs and tracks the agent's runs in this process.
type Manager struct {
	opts  Options
	db    *storage.DB
	reg   *tools.Registry
	log   zerolog.Logger
	sched *scheduler

	mu     sync.Mutex
	runs   map[string]*Run // every live run, sub-agents' included
	byConv map[string]*Run // the live top-level run of each conversation
	closed bool
	wg     sync.WaitGroup
	stop   chan struct{}
	bg     sync.WaitGroup
}

var (
	// ErrBusy means the conversation already has a run going.
	ErrBusy = storage.NewError(storage.Conflict, "a run is already going in this conversation: wait for it or cancel it (chat.cancel)")
	// ErrClosed means the host is shutting down.
	ErrClosed = errors.New("the agent is shutting down")
	// ErrNothingToResume means the conversation ended with a final answer.
	ErrNothingToResume = storage.NewError(storage.Conflict, "nothing to resume: the conversation's last run ended with an answer; send a new message instead")

	errShutdown = errors.New("the host process is exiting")
	errUserStop = errors.New("cancelled")
)

// NewManager prepares the agent over a database and a registry: runs that a dead
// host process left running are marked interrupted, old diagnostics records are
// pruned, and the agent tool is registered into the registry.
func NewManager(opts Options) (*Manager, error) {
	if opts.DB == nil || opts.Registry == nil || opts.Open == nil {
		return nil, fmt.Errorf("agent: a database, a registry and a provider opener are required")
	}
	if opts.Settings == nil {
		opts.Settings = config.NewLive(opts.DB, nil)
	}
	if opts.SubagentTimeout <= 0 {
		opts.SubagentTimeout = 600 * time.Second
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 60 * time.Second
	}
	m := &Manager{
		opts: opts, db: opts.DB, reg: opts.Registry, log: opts.Log,
		runs: map[string]*Run{}, byConv: map[string]*Run{}, stop: make(chan struct{}),
	}
	m.sched = newScheduler(func() int {
		return m.opts.Settings.Snapshot(context.Background()).Int(SettingSubagentConcurrency)
	})
	ctx := context.Background()
	if n, err := m.db.InterruptStaleRuns(ctx, m.db.Now().Add(-opts.StaleAfter)); err != nil {
		return nil, err
	} else if n > 0 {
		m.log.Info().Int64("runs", n).Msg("marked runs of an exited host process as interrupted")
	}
	m.prune(ctx)
	if err := m.reg.Register(Tool(m)); err != nil {
		return nil, err
	}
	m.bg.Add(1)
	go m.background()
	return m, nil
}

// background keeps this process's runs alive in the eyes of other processes, and
// prunes the diagnostics records once a day.
func (m *Manager) background() {
	defer m.bg.Done()
	beat := time.NewTicker(m.opts.StaleAfter / 3)
	defer beat.Stop()
	lastPrune := time.Now()
	for {
		select {
		case <-m.stop:
			return
		case <-beat.C:
		}
		m.mu.Lock()
		ids := make([]string, 0, len(m.runs))
		for id, r := range m.runs {
			if r.stored {
				ids = append(ids, id)
			}
		}
		m.mu.Unlock()
		if err := m.db.HeartbeatRuns(context.Background(), ids); err != nil {
			m.log.Warn().Err(err).Msg("heartbeat of runs")
		}
		if time.Since(lastPrune) > 24*time.Hour {
			lastPrune = time.Now()
			m.prune(context.Background())
		}
	}
}

func (m *Manager) prune(ctx context.Context) {
	days := m.opts.Settings.Snapshot(ctx).Int(SettingDiagnosticsDays)
	if days <= 0 {
		return
	}
	if _, err := m.db.PruneModelCalls(ctx, m.db.Now().Add(-time.Duration(days)*24*time.Hour)); err != nil {
		m.log.Warn().Err(err).Msg("pruning diagnostics records")
	}
}

// Close stops every run (they are recorded as interrupted, so they can be resumed
// by the next host) and waits for them to finish recording.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for _, r := range m.runs {
		r.cancel(errShutdown)
	}
	m.mu.Unlock()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		m.log.Warn().Msg("runs did not stop within 10 s of shutdown")
	}
	close(m.stop)
	m.bg.Wait()
	return nil
}

// SendRequest is one message from the user.
type SendRequest struct {
	Text           string
	ConversationID string // "" starts a new conversation
	TabID          int    // binds the conversation to a tab (0 leaves it as it is)
	Origin         string // the tab's origin, when known
	ProviderID     string // "" keeps the conversation's provider (or the default)
	// TraceID and Depth continue a causal chain: a run a page's event triggered
	// (ferry.ask from an emit listener) makes its calls in the event's trace, one
	// level deeper, so that the loop guard cuts an action → event → run → action
	// cycle. Empty starts a new trace at depth 0.
	TraceID string
	Depth   int
	// Scope is who sent the message, as the host knows it where the message came
	// in (an outside agent on the control socket, a page's ferry.ask); nil is the
	// person. Every call of the run carries it.
	Scope *tools.Scope
	// OnEvent hears the run's events from the first one on: it is subscribed
	// before the run starts.
	OnEvent func(Event)
}

// Send appends the user's message to a conversation and starts a run over it.
func (m *Manager) Send(ctx context.Context, req SendRequest) (*Run, error) {
	if strings.TrimSpace(req.Text) == "" {
		return nil, fmt.Errorf("the message is empty")
	}
	var conv storage.Conversation
	var err error
	if req.ConversationID == "" {
		conv, err = m.db.CreateConversation(ctx, storage.Conversation{
			ID: newID(), Title: title(req.Text), ProviderID: req.ProviderID, TabID: req.TabID, Origin: req.Origin,
		})
	} else {
		conv, err = m.db.GetConversation(ctx, req.ConversationID)
		if err == nil && (req.ProviderID != "" || req.TabID != 0) {
			u := storage.ConversationUpdate{}
			if req.ProviderID != "" {
				u.ProviderID = &req.ProviderID
			}
			if req.TabID != 0 {
				u.TabID, u.Origin = &req.TabID, &req.Origin
			}
			conv, err = m.db.UpdateConversation(ctx, conv.ID, u)
		}
	}
	if err != nil {
		return nil, err
	}
	return m.start(ctx, conv, req.Scope, req.OnEvent, func(r *Run) error {
		if req.TraceID != "" {
			r.traceID, r.depth = req.TraceID, max(req.Depth, 0)
		}
		text := req.Text
		if page := req.Scope != nil && req.Scope.Principal == tools.PrincipalPage; page {
			// A page's request is the page's text: the model is told whose it is, and
			// the data-flow state counts it as the page's content, not the person's.
			text = pageRequest(req.Scope.Origin, req.Text)
			if g := r.gate(); g != nil {
				g.PageRequest(ctx, req.Scope.Origin, req.Text)
			}
		} else if g := r.gate(); g != nil {
			g.Person(ctx, req.Text)
		}
		if g := r.gate(); g != nil && conv.TabID != 0 {
			// The bound tab is designated: its origin as the browser says now, or as
			// the extension (or the page's own port) said when nobody can look.
			origin := m.opts.Flow.TabOrigin(ctx, conv.TabID)
			if origin == "" && (req.Scope == nil || req.Scope.Principal == tools.PrincipalPage) {
				origin = req.Origin
			}
			g.Bind(ctx, origin)
		}
		return r.append(ctx, model.Message{Role: model.RoleUser, Content: text})
	})
}

// Resume continues a conversation whose last run did not end with an answer (the
// host exited under it, it failed or it was cancelled) from its stored messages.
func (m *Manager) Resume(ctx context.Context, conversationID string, onEvent func(Event)) (*Run, error) {
	conv, err := m.db.GetConversation(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	return m.start(ctx, conv, nil, onEvent, func(r *Run) error {
		if len(r.history) == 0 {
			return ErrNothingToResume
		}
		last := r.history[len(r.history)-1]
		if last.Role == model.RoleAssistant && len(last.ToolCalls) == 0 {
			return ErrNothingToResume
		}
		return r.answerDangling(ctx)
	})
}

// start loads the conversation into a new run, lets prepare add to it, records the
// run and starts its goroutine.
func (m *Manager) start(ctx context.Context, conv storage.Conversation, scope *tools.Scope, onEvent func(Event), prepare func(*Run) error) (*Run, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if m.byConv[conv.ID] != nil {
		m.mu.Unlock()
		return nil, ErrBusy
	}
	// Claimed before the slow steps, so two sends at once cannot both start a run.
	placeholder := &Run{}
	m.byConv[conv.ID] = placeholder
	m.mu.Unlock()
	release := func() {
		m.mu.Lock()
		if m.byConv[conv.ID] == placeholder {
			delete(m.byConv, conv.ID)
		}
		m.mu.Unlock()
	}

	prov, err := m.opts.Open(ctx, conv.ProviderID)
	if err != nil {
		release()
		return nil, err
	}
	r := m.newRun(conv.ID, prov)
	r.tabID, r.stored, r.persist = conv.TabID, true, true
	var gate tools.Gate
	if m.opts.Flow != nil {
		gate = m.opts.Flow.Open(ctx, conv.ID)
	}
	r.scope = scope.ForRun(r.ID, conv.ID, m.budget(ctx), gate)
	if err := r.load(ctx); err != nil {
		release()
		return nil, err
	}
	if err := prepare(r); err != nil {
		release()
		return nil, err
	}
	info := prov.Info()
	if _, err := m.db.CreateRun(ctx, storage.Run{ID: r.ID, ConversationID: conv.ID, ProviderID: info.ID, Model: info.Model}); err != nil {
		release()
		return nil, err
	}
	if onEvent != nil {
		r.bus.subscribe(onEvent)
	}
	if m.opts.Notify != nil {
		r.bus.subscribe(m.opts.Notify)
	}
	r.onEnd = func() {
		m.mu.Lock()
		delete(m.runs, r.ID)
		if m.byConv[conv.ID] == r {
			delete(m.byConv, conv.ID)
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	m.byConv[conv.ID] = r
	m.runs[r.ID] = r
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		r.execute()
	}()
	return r, nil
}

// Run finds a live run (a sub-agent's too) by id.
func (m *Manager) Run(id string) *Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[id]
}

// Cancel stops a live run; it reports whether there was one. A run's sub-agents stop
// with it.
func (m *Manager) Cancel(id string) bool {
	r := m.Run(id)
	if r == nil {
		return false
	}
	r.Cancel()
	return true
}

// ActiveRun is the live top-level run of a conversation, or nil.
func (m *Manager) ActiveRun(conversationID string) *Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.byConv[conversationID]
	if r == nil || r.bus == nil {
		return nil
	}
	return r
}

// budget is one run's cap on tool calls, from the setting now.
func (m *Manager) budget(ctx context.Context) *tools.Budget {
	return tools.NewBudget(m.opts.Settings.Snapshot(ctx).Int(SettingMaxToolCalls))
}

func (m *Manager) newRun(conversationID string, prov model.Provider) *Run {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &Run{
		ID: newID(), ConversationID: conversationID,
		m: m, prov: prov, bus: newBus(), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		traceID: tools.NewID(), scope: &tools.Scope{},
	}
	r.childGone = sync.NewCond(&r.mu)
	return r
}

func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// title is the first line of the first message, cut to 80 bytes.
func title(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	return cut(text, 80)
}

// cut shortens s to at most n bytes on a character boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
