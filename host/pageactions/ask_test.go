package pageactions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

type memSettings struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *memSettings) Snapshot(ctx context.Context) *config.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return config.Of(maps.Clone(s.m))
}

func (s *memSettings) Set(ctx context.Context, k, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = v
	return nil
}

type askUI struct {
	answer   bool
	lasting  bool // the person chose "always" or "never" (ConfirmLasting)
	err      error
	panels   int
	known    bool
	confirms []tools.ConfirmRequest
}

func (u *askUI) Confirm(ctx context.Context, req tools.ConfirmRequest) (bool, error) {
	u.confirms = append(u.confirms, req)
	return u.answer, u.err
}
func (u *askUI) ConfirmLasting(ctx context.Context, req tools.ConfirmRequest) (tools.ConfirmAnswer, error) {
	ok, err := u.Confirm(ctx, req)
	return tools.ConfirmAnswer{Approved: ok, Lasting: u.lasting}, err
}
func (u *askUI) Ask(ctx context.Context, req tools.AskRequest) (tools.AskAnswer, error) {
	return tools.AskAnswer{}, errors.New("no")
}
func (u *askUI) PanelsOpen() (int, bool) { return u.panels, u.known }

type askEnv struct {
	reg      *tools.Registry
	m        *Manager
	settings *memSettings
	started  []RunRequest
	now      time.Time
}

func newAskEnv(t *testing.T, ui tools.UI, settings map[string]string) *askEnv {
	t.Helper()
	reg, m, _ := setup(t)
	e := &askEnv{reg: reg, m: m, settings: &memSettings{m: settings}, now: time.Unix(1000, 0)}
	if settings == nil {
		e.settings.m = map[string]string{}
	}
	reg.SetUI(ui)
	m.SetAsk(AskDeps{Settings: e.settings, Now: func() time.Time { return e.now },
		Start: func(ctx context.Context, req RunRequest) (string, string, error) {
			e.started = append(e.started, req)
			return "c1", "r1", nil
		}})
	return e
}

// refusedWith: the pipeline refused the ask, with want in its code or reason.
func refusedWith(t *testing.T, err error, want string) {
	t.Helper()
	var f *tools.Failure
	if !errors.As(err, &f) || !(string(f.Code) == want || strings.Contains(f.Reason, want)) {
		t.Fatalf("want refusal containing %q, got %v", want, err)
	}
}

const site = "https://shop.example"

func TestAskAllowedStartsRunBoundToTab(t *testing.T) {
	ui := &askUI{}
	e := newAskEnv(t, ui, map[string]string{SettingAskAllowed: "https://other.example, https://SHOP.example:443"})
	res, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "  find socks  "})
	if err != nil || res.ConversationID != "c1" || res.RunID != "r1" {
		t.Fatalf("ask = %+v, %v", res, err)
	}
	if len(e.started) != 1 || e.started[0].TabID != 8 || e.started[0].Origin != site || e.started[0].Text != "find socks" {
		t.Fatalf("started = %+v", e.started)
	}
	if len(ui.confirms) != 0 {
		t.Fatalf("an allowed origin was asked: %+v", ui.confirms)
	}
}

func TestAskDeniedRefusedWithoutAsking(t *testing.T) {
	ui := &askUI{answer: true}
	e := newAskEnv(t, ui, map[string]string{SettingAskDenied: site})
	_, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "hi"})
	refusedWith(t, err, "does not allow https://shop.example")
	if len(ui.confirms) != 0 || len(e.started) != 0 {
		t.Fatalf("confirms %d started %d", len(ui.confirms), len(e.started))
	}
}

// A plain approval starts this one run and grants nothing: the next ask is asked
// again, and the origin is in neither list.
func TestAskFirstTimeAllowOnce(t *testing.T) {
	ui := &askUI{answer: true}
	e := newAskEnv(t, ui, nil)
	for i, text := range []string{"add milk", "again"} {
		if _, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: text}); err != nil {
			t.Fatal(err)
		}
		if len(ui.confirms) != i+1 || len(e.started) != i+1 {
			t.Fatalf("ask %d: confirms %d started %d, want each asked", i, len(ui.confirms), len(e.started))
		}
	}
	c := ui.confirms[0]
	if c.Requester == nil || c.Requester.Kind != "page" || c.Requester.Origin != site {
		t.Errorf("requester = %+v, want the page's origin", c.Requester)
	}
	if c.Lasting == nil || c.Lasting.Scope != tools.LastingPageAsk || c.Lasting.Origin != site {
		t.Errorf("lasting = %+v, want the page_ask offer for %s", c.Lasting, site)
	}
	if e.settings.m[SettingAskAllowed] != "" || e.settings.m[SettingAskDenied] != "" {
		t.Fatalf("a one-time answer was kept: allowed %q denied %q", e.settings.m[SettingAskAllowed], e.settings.m[SettingAskDenied])
	}
	// A plain "no" is for this request only, too.
	ui.answer = false
	_, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "x"})
	refusedWith(t, err, "declined")
	if e.settings.m[SettingAskDenied] != "" {
		t.Fatalf("a one-time no was kept: denied %q", e.settings.m[SettingAskDenied])
	}
}

// A UI that cannot tell a lasting answer (no LastingUI) never grants for good.
func TestAskPlainUIGrantsOnce(t *testing.T) {
	ui := &plainUI{askUI{answer: true}}
	e := newAskEnv(t, ui, nil)
	if _, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if e.settings.m[SettingAskAllowed] != "" {
		t.Fatalf("allowed = %q", e.settings.m[SettingAskAllowed])
	}
}

// plainUI hides askUI's ConfirmLasting.
type plainUI struct{ u askUI }

func (p *plainUI) Confirm(ctx context.Context, req tools.ConfirmRequest) (bool, error) {
	return p.u.Confirm(ctx, req)
}
func (p *plainUI) Ask(ctx context.Context, req tools.AskRequest) (tools.AskAnswer, error) {
	return p.u.Ask(ctx, req)
}

func TestAskFirstTimeAllowPersists(t *testing.T) {
	ui := &askUI{answer: true, lasting: true}
	e := newAskEnv(t, ui, map[string]string{SettingAskDenied: "https://x.example"})
	if _, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "add milk"}); err != nil {
		t.Fatal(err)
	}
	if len(ui.confirms) != 1 || ui.confirms[0].Message != site+" wants to start a Ferry run: add milk" || ui.confirms[0].Origin != site {
		t.Fatalf("confirms = %+v", ui.confirms)
	}
	if e.settings.m[SettingAskAllowed] != site {
		t.Fatalf("allowed = %q", e.settings.m[SettingAskAllowed])
	}
	// Asked once: the second call goes straight through.
	if _, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "again"}); err != nil || len(ui.confirms) != 1 || len(e.started) != 2 {
		t.Fatalf("second ask: %v confirms %d started %d", err, len(ui.confirms), len(e.started))
	}
	infos := e.m.Origins(context.Background())
	var got []string
	for _, o := range infos {
		got = append(got, o.Origin+":"+o.Ask)
	}
	if strings.Join(got, ",") != "http://127.0.0.1:1:ask,https://shop.example:allowed,https://x.example:denied" {
		t.Fatalf("origins = %v", got)
	}
}

func TestAskFirstTimeDenyPersists(t *testing.T) {
	ui := &askUI{answer: false, lasting: true}
	e := newAskEnv(t, ui, map[string]string{SettingAskAllowed: site + ",https://b.example"})
	e.settings.m[SettingAskAllowed] = "https://b.example"
	_, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "x"})
	refusedWith(t, err, "declined")
	if e.settings.m[SettingAskDenied] != site || len(e.started) != 0 {
		t.Fatalf("denied = %q started %d", e.settings.m[SettingAskDenied], len(e.started))
	}
	_, err = e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "x"})
	refusedWith(t, err, "does not allow")
	if len(ui.confirms) != 1 {
		t.Fatalf("asked again: %d", len(ui.confirms))
	}
}

func TestAskNoUI(t *testing.T) {
	e := newAskEnv(t, nil, nil)
	_, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "x"})
	refusedWith(t, err, "open Ferry's side panel")
	// Connected, but no side panel open: nobody can answer either.
	e.reg.SetUI(&askUI{answer: true, known: true, panels: 0})
	_, err = e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "x"})
	refusedWith(t, err, "open Ferry's side panel")
	if len(e.started) != 0 || e.settings.m[SettingAskAllowed] != "" {
		t.Fatalf("started %d allowed %q", len(e.started), e.settings.m[SettingAskAllowed])
	}
}

func TestAskLimits(t *testing.T) {
	e := newAskEnv(t, &askUI{}, map[string]string{SettingAskAllowed: site})
	ctx := context.Background()
	_, err := e.m.Ask(ctx, AskParams{TabID: 8, Origin: site, Text: strings.Repeat("é", MaxAskText+1)})
	if err == nil || !strings.Contains(err.Error(), "<= 2000") {
		t.Fatalf("long text: %v", err)
	}
	if _, err := e.m.Ask(ctx, AskParams{TabID: 8, Origin: site, Text: "   "}); err == nil {
		t.Fatal("empty text accepted")
	}
	// Refused asks count against the origin's rate too: a page cannot probe for free.
	e.now = e.now.Add(61 * time.Second)
	for i := range AskPerMinute {
		if _, err := e.m.Ask(ctx, AskParams{TabID: 8, Origin: site, Text: fmt.Sprint("go ", i)}); err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
	}
	_, err = e.m.Ask(ctx, AskParams{TabID: 8, Origin: site, Text: "go"})
	refusedWith(t, err, "at most 5 a minute")
	e.now = e.now.Add(61 * time.Second)
	if _, err := e.m.Ask(ctx, AskParams{TabID: 8, Origin: site, Text: "go on"}); err != nil {
		t.Fatalf("after a minute: %v", err)
	}
	if _, err := e.m.Ask(ctx, AskParams{TabID: 8, Origin: "file:///x", Text: "go"}); err == nil {
		t.Fatal("a file page could ask")
	}
}

func TestDisabledOriginDeclarationsIgnored(t *testing.T) {
	e := newAskEnv(t, &askUI{answer: true}, map[string]string{SettingDisabledOrigins: "http://127.0.0.1:1", SettingAskAllowed: "http://127.0.0.1:1"})
	// setup declared before the setting counted; a new update from the origin drops them.
	res, err := e.m.Update(UpdateParams{TabID: 7, Origin: "http://127.0.0.1:1", Actions: []Decl{{HasHandler: true, ID: "add_task"}}})
	if err != nil || len(res.Registered) != 0 || len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Reason, "turned off") {
		t.Fatalf("update = %+v, %v", res, err)
	}
	for _, l := range e.reg.All(7) {
		if l.Source == tools.SourcePage {
			t.Fatalf("page tool still registered: %+v", l)
		}
	}
	_, err = e.m.Ask(context.Background(), AskParams{TabID: 7, Origin: "http://127.0.0.1:1", Text: "x"})
	refusedWith(t, err, "turned off")
	if !e.m.Disabled(context.Background(), "http://127.0.0.1:1") || e.m.Disabled(context.Background(), site) {
		t.Fatal("Disabled")
	}
	infos := e.m.Origins(context.Background())
	if len(infos) != 1 || !infos[0].Disabled || infos[0].Actions != 0 {
		t.Fatalf("origins = %+v", infos)
	}
}

// A run a page's event triggers continues the event's trace one level deeper; one
// that would start deeper than the loop guard allows is refused before any model is
// asked (the action → event → ferry.ask → action cycle stops at depth 3).
func TestAskContinuesTheTrace(t *testing.T) {
	e := newAskEnv(t, &askUI{}, map[string]string{SettingAskAllowed: site})
	if _, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "again", TraceID: "tr", Depth: tools.MaxDepth}); err != nil {
		t.Fatalf("ask at depth %d: %v", tools.MaxDepth, err)
	}
	if len(e.started) != 1 || e.started[0].TraceID != "tr" || e.started[0].Depth != tools.MaxDepth {
		t.Fatalf("started = %+v", e.started)
	}
	_, err := e.m.Ask(context.Background(), AskParams{TabID: 8, Origin: site, Text: "again", TraceID: "tr", Depth: tools.MaxDepth + 1})
	refusedWith(t, err, "LOOP_DETECTED")
	if len(e.started) != 1 {
		t.Fatalf("a run started at depth %d", tools.MaxDepth+1)
	}
}

// auditRows records what the registry audits.
type auditRows struct {
	mu   sync.Mutex
	rows []storage.AuditEntry
}

func (a *auditRows) Record(e storage.AuditEntry) {
	a.mu.Lock()
	a.rows = append(a.rows, e)
	a.mu.Unlock()
}

// TestEveryAskIsAudited: every outcome of ferry.ask, each refusal among them, is an
// audit row of the page's call, with its code; and no one but a page can make it.
func TestEveryAskIsAudited(t *testing.T) {
	audit := &auditRows{}
	reg := tools.NewRegistry(tools.Options{Audit: audit})
	m := New(reg, &fakeExt{}, zerolog.Nop())
	settings := &memSettings{m: map[string]string{}}
	now := time.Unix(1000, 0)
	m.SetAsk(AskDeps{Settings: settings, Now: func() time.Time { return now },
		Start: func(ctx context.Context, req RunRequest) (string, string, error) { return "c", "r", nil }})
	reg.SetUI(&askUI{answer: false})
	ctx := context.Background()
	cases := []struct {
		set  map[string]string
		p    AskParams
		code tools.Code
	}{
		{map[string]string{SettingAskDenied: site}, AskParams{TabID: 8, Origin: site, Text: "hi"}, tools.CodePermissionDenied},
		{map[string]string{SettingDisabledOrigins: site}, AskParams{TabID: 8, Origin: site, Text: "hi"}, tools.CodePermissionDenied},
		{map[string]string{}, AskParams{TabID: 8, Origin: site, Text: "hi"}, tools.CodeUserRejected},
		{map[string]string{SettingAskAllowed: site}, AskParams{TabID: 8, Origin: site, Text: strings.Repeat("x", MaxAskText+1)}, tools.CodeInvalidParams},
		{nil, AskParams{TabID: 8, Origin: "https://elsewhere.example", Text: "hi"}, tools.CodePermissionDenied},
		{nil, AskParams{TabID: 8, Origin: "file:///x", Text: "hi"}, tools.CodePermissionDenied},
		{nil, AskParams{TabID: 8, Origin: site, Text: "deep", TraceID: "tr", Depth: tools.MaxDepth + 1}, tools.CodeLoopDetected},
		{nil, AskParams{TabID: 8, Origin: site, Text: "fine"}, ""},
	}
	for _, c := range cases {
		if c.set != nil {
			settings.m = c.set
		}
		now = now.Add(time.Minute) // a fresh rate each time
		_, err := m.Ask(ctx, c.p)
		if (c.code == "") != (err == nil) {
			t.Errorf("%+v: %v", c.p, err)
		}
	}
	audit.mu.Lock()
	rows := append([]storage.AuditEntry(nil), audit.rows...)
	audit.mu.Unlock()
	if len(rows) != len(cases) {
		t.Fatalf("%d audit rows for %d asks", len(rows), len(cases))
	}
	for i, row := range rows {
		if row.Tool != AskTool || row.Caller != tools.PrincipalPage || tools.Code(row.Code) != cases[i].code {
			t.Errorf("ask %d: audit row %+v, want code %q", i, row, cases[i].code)
		}
	}
	// The model (or anyone else) calling the page's entry point finds no such tool.
	res := reg.Call(ctx, &tools.Call{Tool: AskTool, Arguments: json.RawMessage(`{"text":"x"}`), Caller: "model"})
	if res.Code != tools.CodeNotFound {
		t.Errorf("the model calling %s: %+v", AskTool, res)
	}
	for _, l := range reg.All(0) {
		if l.Name == AskTool {
			t.Errorf("%s is listed among the tools", AskTool)
		}
	}
}
