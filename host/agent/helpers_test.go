package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/tasks"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// step answers one model call. It may stream deltas and block on ctx.
type step func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error)

// fakeProvider answers with scripted steps, in order, or with route when set
// (concurrent callers such as sub-agents pick their answer from the request).
type fakeProvider struct {
	info  model.Info
	mu    sync.Mutex
	steps []step
	route step
	reqs  []model.Request
	calls atomic.Int32
}

func (p *fakeProvider) Info() model.Info { return p.info }

func (p *fakeProvider) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta), onAttempt func(model.Attempt)) (*model.Response, error) {
	p.calls.Add(1)
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	var s step
	if p.route != nil {
		s = p.route
	} else if len(p.steps) > 0 {
		s, p.steps = p.steps[0], p.steps[1:]
	}
	p.mu.Unlock()
	start := time.Now()
	if s == nil {
		return nil, errors.New("fake provider: no more scripted answers")
	}
	resp, err := s(ctx, req, onDelta)
	if onAttempt != nil {
		a := model.Attempt{Status: 200, Duration: time.Since(start)}
		if err != nil {
			a.Err = err.Error()
		}
		onAttempt(a)
	}
	return resp, err
}

func (p *fakeProvider) requests() []model.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]model.Request(nil), p.reqs...)
}

// say answers with text, streamed in two pieces.
func say(text string) step {
	return func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		h := len(text) / 2
		onDelta(model.Delta{Text: text[:h]})
		onDelta(model.Delta{Text: text[h:]})
		return &model.Response{Text: text, StopReason: "end_turn", Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
}

// call answers with tool calls, given as name, JSON arguments pairs.
func call(nameArgs ...string) step {
	return func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		resp := &model.Response{StopReason: "tool_use", Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}
		for i := 0; i+1 < len(nameArgs); i += 2 {
			resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: fmt.Sprintf("c%d_%d", len(req.Messages), i/2), Name: nameArgs[i], Arguments: json.RawMessage(nameArgs[i+1])})
		}
		return resp, nil
	}
}

type fakeUI struct {
	mu       sync.Mutex
	answer   bool
	confirms []tools.ConfirmRequest
}

func (u *fakeUI) Confirm(ctx context.Context, req tools.ConfirmRequest) (bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.confirms = append(u.confirms, req)
	return u.answer, nil
}

func (u *fakeUI) Ask(ctx context.Context, req tools.AskRequest) (tools.AskAnswer, error) {
	return tools.AskAnswer{Answer: "yes"}, nil
}

type env struct {
	t    testing.TB
	dir  string
	db   *storage.DB
	reg  *tools.Registry
	prov *fakeProvider
	m    *Manager
	opts Options

	mu     sync.Mutex
	events []Event
	audit  *memAudit
}

// memAudit keeps the audit rows the pipeline records.
type memAudit struct {
	mu   sync.Mutex
	rows []storage.AuditEntry
}

func (a *memAudit) Record(e storage.AuditEntry) {
	a.mu.Lock()
	a.rows = append(a.rows, e)
	a.mu.Unlock()
}

// auditCount is how many audit rows have code.
func (e *env) auditCount(t testing.TB, code tools.Code) int {
	e.audit.mu.Lock()
	defer e.audit.mu.Unlock()
	n := 0
	for _, r := range e.audit.rows {
		if r.Code == string(code) {
			n++
		}
	}
	return n
}

func newEnv(t testing.TB, prov *fakeProvider, opt ...func(*Options)) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, prov: prov}
	e.open(opt...)
	t.Cleanup(e.close)
	return e
}

// open opens the database and a manager over it (again, after close: a restart).
func (e *env) open(opt ...func(*Options)) {
	e.t.Helper()
	db, err := storage.Open(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	e.db = db
	live := config.NewLive(db, db.Now)
	e.audit = &memAudit{}
	e.reg = tools.NewRegistry(tools.Options{Settings: live, Now: db.Now, Audit: e.audit})
	for _, tl := range append(tasks.Tools(tasks.Deps{Store: db}), testTools()...) {
		if err := e.reg.Register(tl); err != nil {
			e.t.Fatal(err)
		}
	}
	if e.prov.info.ID == "" {
		e.prov.info = model.Info{ID: "fake", Kind: "openai", Model: "fake-1"}
	}
	e.opts = Options{DB: db, Settings: live, Registry: e.reg, Log: zerolog.Nop(),
		Open: func(ctx context.Context, id string) (model.Provider, error) {
			if id == "missing" {
				return nil, errors.New("no provider named missing")
			}
			return e.prov, nil
		},
		Notify: func(ev Event) {
			e.mu.Lock()
			e.events = append(e.events, ev)
			e.mu.Unlock()
		},
	}
	for _, o := range opt {
		o(&e.opts)
	}
	m, err := NewManager(e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.m = m
}

func (e *env) close() {
	if e.m != nil {
		e.m.Close()
		e.m = nil
	}
	if e.db != nil {
		e.db.Close()
		e.db = nil
	}
}

func (e *env) set(key, value string) {
	e.t.Helper()
	if err := e.db.SetSetting(context.Background(), key, value); err != nil {
		e.t.Fatal(err)
	}
	e.reg.RefreshSettings()
}

// send starts a run and waits for its end.
func (e *env) send(text string, conv string) (*Run, Outcome) {
	e.t.Helper()
	r, err := e.m.Send(context.Background(), SendRequest{Text: text, ConversationID: conv})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := r.Wait(ctx)
	if err != nil {
		e.t.Fatalf("run did not end: %v", err)
	}
	return r, out
}

func (e *env) eventsOf(runID string) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.events {
		if ev.RunID == runID {
			out = append(out, ev)
		}
	}
	return out
}

func types(evs []Event) string {
	var s []string
	for _, ev := range evs {
		s = append(s, ev.Type)
	}
	return strings.Join(s, " ")
}

// concurrency counts how many handlers run at once.
type concurrency struct {
	mu       sync.Mutex
	now, max int
}

func (c *concurrency) enter() {
	c.mu.Lock()
	c.now++
	c.max = max(c.max, c.now)
	c.mu.Unlock()
}

func (c *concurrency) leave() { c.mu.Lock(); c.now--; c.mu.Unlock() }

func (c *concurrency) peak() int { c.mu.Lock(); defer c.mu.Unlock(); return c.max }

var (
	readPeak, writePeak concurrency
	writeOrder          struct {
		sync.Mutex
		seq []string
	}
)

func testTools() []tools.Tool {
	obj := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"tab_id":{"type":"integer"},"sleep_ms":{"type":"integer"},"size":{"type":"integer"}},"additionalProperties":false}`)
	type args struct {
		Text    string `json:"text"`
		TabID   int    `json:"tab_id"`
		SleepMS int    `json:"sleep_ms"`
		Size    int    `json:"size"`
	}
	return []tools.Tool{{
		Name: "echo", Description: "echoes text", Parameters: obj, Kind: tools.KindRead,
		Run: func(ctx context.Context, c *tools.Call) (any, error) {
			var a args
			c.Decode(&a)
			readPeak.enter()
			defer readPeak.leave()
			select {
			case <-time.After(time.Duration(a.SleepMS) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if a.Size > 0 {
				return strings.Repeat("x", a.Size), nil
			}
			return map[string]string{"echo": a.Text}, nil
		},
	}, {
		Name: "poke", Description: "writes to a tab", Parameters: obj, Kind: tools.KindWrite,
		Run: func(ctx context.Context, c *tools.Call) (any, error) {
			var a args
			c.Decode(&a)
			writePeak.enter()
			defer writePeak.leave()
			time.Sleep(time.Duration(a.SleepMS) * time.Millisecond)
			writeOrder.Lock()
			writeOrder.seq = append(writeOrder.seq, a.Text)
			writeOrder.Unlock()
			return "poked", nil
		},
	}, {
		Name: "broken", Description: "always fails", Parameters: obj,
		Run: func(ctx context.Context, c *tools.Call) (any, error) {
			return nil, errors.New("the widget is jammed")
		},
	}, {
		Name: "ask_user", Description: "asks", Parameters: obj,
		Run: func(ctx context.Context, c *tools.Call) (any, error) { return "answer", nil },
	}, {
		Name: "web_search", Description: "searches", Parameters: obj,
		Run: func(ctx context.Context, c *tools.Call) (any, error) { return "results", nil },
	}}
}
