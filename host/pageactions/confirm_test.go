package pageactions

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/rs/zerolog"
)

// pageExt plays the extension for confirmations: page.action.confirm is answered by
// confirm (nil: the page has no listener), page.action.run succeeds.
type pageExt struct {
	mu       sync.Mutex
	confirm  func(ctx context.Context, p ConfirmParams) (ConfirmAnswer, error)
	asked    []ConfirmParams
	done     []ConfirmDone
	runs     int
	doneSeen chan ConfirmDone
}

func (f *pageExt) Call(ctx context.Context, method string, params, result any) error {
	var out any
	switch method {
	case "page.action.confirm":
		p := params.(ConfirmParams)
		f.mu.Lock()
		f.asked = append(f.asked, p)
		f.mu.Unlock()
		a := ConfirmAnswer{}
		if f.confirm != nil {
			var err error
			if a, err = f.confirm(ctx, p); err != nil {
				return err
			}
		}
		out = a
	case "page.action.confirm.done":
		d := params.(ConfirmDone)
		f.mu.Lock()
		f.done = append(f.done, d)
		f.mu.Unlock()
		if f.doneSeen != nil {
			f.doneSeen <- d
		}
		return nil
	case "page.action.run":
		f.mu.Lock()
		f.runs++
		f.mu.Unlock()
		out = RunResult{OK: true, Ran: true, Result: json.RawMessage(`{"ok":1}`)}
	default:
		return errors.New("unknown method " + method)
	}
	b, _ := json.Marshal(out)
	return json.Unmarshal(b, result)
}

// panelUI plays the side panel: answer decides (nil: waits until withdrawn).
type panelUI struct {
	answer    func(req tools.ConfirmRequest) (bool, error)
	mu        sync.Mutex
	asked     []string
	withdrawn int
	gone      chan struct{} // hears each withdrawal, when set
}

func (p *panelUI) Confirm(ctx context.Context, req tools.ConfirmRequest) (bool, error) {
	p.mu.Lock()
	p.asked = append(p.asked, req.CallID)
	p.mu.Unlock()
	if p.answer != nil {
		return p.answer(req)
	}
	<-ctx.Done()
	p.mu.Lock()
	p.withdrawn++
	p.mu.Unlock()
	if p.gone != nil {
		p.gone <- struct{}{}
	}
	return false, ctx.Err()
}

func (p *panelUI) Ask(ctx context.Context, req tools.AskRequest) (tools.AskAnswer, error) {
	return tools.AskAnswer{}, errors.New("no")
}

func confirmSetup(t *testing.T, ext *pageExt, panel *panelUI) (*tools.Registry, *Manager) {
	t.Helper()
	reg := tools.NewRegistry(tools.Options{})
	if err := reg.Register(tools.Tool{Name: "wipe", Confirm: true, Run: func(context.Context, *tools.Call) (any, error) { return "wiped", nil }}); err != nil {
		t.Fatal(err)
	}
	m := New(reg, ext, zerolog.Nop())
	if _, err := m.Update(UpdateParams{
		TabID: 3, Origin: "http://127.0.0.1:1", URL: "http://127.0.0.1:1/",
		Actions: []Decl{
			{HasHandler: true, ID: "delete_all", Kind: "write", Confirm: true},
			{HasHandler: true, ID: "search", Kind: "read"},
		},
		Snapshot: Snapshot{Actions: []ActionState{{ID: "delete_all", Available: true}, {ID: "search", Available: true}}},
	}); err != nil {
		t.Fatal(err)
	}
	reg.SetUI(m.WrapUI(panel))
	return reg, m
}

func TestPageConfirmsItsOwnAction(t *testing.T) {
	ext := &pageExt{doneSeen: make(chan ConfirmDone, 4), confirm: func(ctx context.Context, p ConfirmParams) (ConfirmAnswer, error) {
		return ConfirmAnswer{Answered: true, Approved: true}, nil
	}}
	panel := &panelUI{gone: make(chan struct{}, 4)}
	reg, _ := confirmSetup(t, ext, panel)
	res := reg.Call(context.Background(), &tools.Call{ID: "c1", Tool: "delete_all", TabID: 3, Caller: "model"})
	if !res.Success {
		t.Fatalf("result = %+v", res)
	}
	if len(ext.asked) != 1 || ext.asked[0].CallID != "c1" || ext.asked[0].ID != "delete_all" || ext.asked[0].TabID != 3 {
		t.Fatalf("page asked %+v", ext.asked)
	}
	if d := <-ext.doneSeen; !d.Approved || d.By != "page" || d.CallID != "c1" {
		t.Fatalf("done = %+v", d)
	}
	<-panel.gone // the withdrawal reaches the panel after the answer
	panel.mu.Lock()
	defer panel.mu.Unlock()
	if len(panel.asked) != 1 || panel.withdrawn != 1 {
		t.Fatalf("the panel was asked %v and withdrawn %d times; want both once", panel.asked, panel.withdrawn)
	}
}

func TestPageRejectsItsOwnAction(t *testing.T) {
	ext := &pageExt{doneSeen: make(chan ConfirmDone, 4), confirm: func(ctx context.Context, p ConfirmParams) (ConfirmAnswer, error) {
		return ConfirmAnswer{Answered: true, Approved: false}, nil
	}}
	reg, _ := confirmSetup(t, ext, &panelUI{})
	res := reg.Call(context.Background(), &tools.Call{ID: "c2", Tool: "delete_all", TabID: 3, Caller: "model"})
	if res.Success || res.Code != tools.CodeUserRejected {
		t.Fatalf("result = %+v", res)
	}
	if d := <-ext.doneSeen; d.Approved || d.By != "page" {
		t.Fatalf("done = %+v", d)
	}
	if ext.runs != 0 {
		t.Fatalf("ran %d times", ext.runs)
	}
}

func TestPanelAnswersFirst(t *testing.T) {
	ext := &pageExt{doneSeen: make(chan ConfirmDone, 4), confirm: func(ctx context.Context, p ConfirmParams) (ConfirmAnswer, error) {
		<-ctx.Done() // the page's listener never answers
		return ConfirmAnswer{}, ctx.Err()
	}}
	panel := &panelUI{answer: func(tools.ConfirmRequest) (bool, error) { return false, nil }}
	reg, _ := confirmSetup(t, ext, panel)
	res := reg.Call(context.Background(), &tools.Call{ID: "c3", Tool: "delete_all", TabID: 3, Caller: "model"})
	if res.Code != tools.CodeUserRejected {
		t.Fatalf("result = %+v", res)
	}
	if d := <-ext.doneSeen; d.Approved || d.By != "panel" {
		t.Fatalf("done = %+v", d)
	}
}

// A page without a confirm listener leaves the decision to the panel.
func TestPageWithoutListenerLeavesItToThePanel(t *testing.T) {
	ext := &pageExt{doneSeen: make(chan ConfirmDone, 4)}
	panel := &panelUI{answer: func(tools.ConfirmRequest) (bool, error) {
		time.Sleep(20 * time.Millisecond) // after the page's "not answered"
		return true, nil
	}}
	reg, _ := confirmSetup(t, ext, panel)
	res := reg.Call(context.Background(), &tools.Call{ID: "c4", Tool: "delete_all", TabID: 3, Caller: "model"})
	if !res.Success {
		t.Fatalf("result = %+v", res)
	}
	if d := <-ext.doneSeen; !d.Approved || d.By != "panel" {
		t.Fatalf("done = %+v", d)
	}
}

// Builtins' confirmations never reach a page.
func TestBuiltinConfirmNeverReachesThePage(t *testing.T) {
	ext := &pageExt{confirm: func(ctx context.Context, p ConfirmParams) (ConfirmAnswer, error) {
		return ConfirmAnswer{Answered: true, Approved: true}, nil
	}}
	panel := &panelUI{answer: func(tools.ConfirmRequest) (bool, error) { return false, nil }}
	reg, _ := confirmSetup(t, ext, panel)
	res := reg.Call(context.Background(), &tools.Call{ID: "b1", Tool: "wipe", TabID: 3, Caller: "model"})
	if res.Code != tools.CodeUserRejected {
		t.Fatalf("result = %+v", res)
	}
	if len(ext.asked) != 0 {
		t.Fatalf("the page was asked about a builtin: %+v", ext.asked)
	}
}

func TestRegionExposure(t *testing.T) {
	reg := tools.NewRegistry(tools.Options{})
	m := New(reg, &pageExt{}, zerolog.Nop())
	update := func(active string) {
		if _, err := m.Update(UpdateParams{
			TabID: 5, Origin: "http://127.0.0.1:1", URL: "http://127.0.0.1:1/",
			Actions: []Decl{{HasHandler: true, ID: "send_mail", Kind: "write"}, {HasHandler: true, ID: "add_event", Kind: "write"}, {HasHandler: true, ID: "help", Kind: "read"}},
			Snapshot: Snapshot{Region: active, Actions: []ActionState{
				{ID: "send_mail", Available: true, Region: "mail"},
				{ID: "add_event", Available: false, Reason: "no day picked", Region: "calendar"},
				{ID: "help", Available: true},
			}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(ls []tools.Listing, us []tools.Unavailable) map[string]bool {
		out := map[string]bool{}
		for _, l := range ls {
			out[l.Name] = true
		}
		for _, u := range us {
			out[u.Name] = true
		}
		return out
	}
	ctx := context.Background()

	update("mail")
	got := names(reg.ModelList(ctx, 5))
	if !got["send_mail"] || !got["help"] || got["add_event"] {
		t.Fatalf("model view in mail = %v", got)
	}
	if all := names(reg.List(ctx, 5)); !all["add_event"] || !all["send_mail"] {
		t.Fatalf("full list = %v", all)
	}
	p, _ := m.PageContext(ctx, 5)
	for _, u := range p.Unavailable {
		if u.Name == "add_event" {
			t.Fatalf("page context shows another region's action: %+v", p)
		}
	}

	update("calendar")
	got = names(reg.ModelList(ctx, 5))
	if got["send_mail"] || !got["add_event"] || !got["help"] {
		t.Fatalf("model view in calendar = %v", got)
	}
	p, _ = m.PageContext(ctx, 5)
	for _, a := range p.Actions {
		if a == "send_mail" {
			t.Fatalf("page context shows another region's action: %+v", p)
		}
	}
	// A direct call by id still goes through the pipeline.
	if res := reg.Call(ctx, &tools.Call{ID: "d1", Tool: "send_mail", TabID: 5, Caller: "cli"}); !res.Success {
		t.Fatalf("direct call = %+v", res)
	}

	update("")
	if got = names(reg.ModelList(ctx, 5)); !got["send_mail"] || !got["add_event"] {
		t.Fatalf("no active region = %v", got)
	}
}

// When the person's policy asks (tools.confirm_writes), the page's own yes does not
// stand in for the person: the side panel's answer decides. The page may still say no.
func TestPolicyConfirmationIsThePersons(t *testing.T) {
	for _, c := range []struct {
		name        string
		page, panel bool
		want        bool
		by          string
	}{
		{"page yes, panel no", true, false, false, "panel"},
		{"page yes, panel yes", true, true, true, "panel"},
		{"page no", false, true, false, "page"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ext := &pageExt{doneSeen: make(chan ConfirmDone, 4), confirm: func(ctx context.Context, p ConfirmParams) (ConfirmAnswer, error) {
				return ConfirmAnswer{Answered: true, Approved: c.page}, nil
			}}
			panel := &panelUI{answer: func(req tools.ConfirmRequest) (bool, error) {
				if !req.ByPolicy {
					t.Errorf("the request does not say the policy asks: %+v", req)
				}
				time.Sleep(30 * time.Millisecond) // after the page's answer
				return c.panel, nil
			}}
			reg := tools.NewRegistry(tools.Options{Settings: &memSettings{m: map[string]string{tools.SettingConfirmWrites: "true"}}})
			m := New(reg, ext, zerolog.Nop())
			if _, err := m.Update(UpdateParams{TabID: 3, Origin: "http://127.0.0.1:1",
				Actions: []Decl{{ID: "send_note", Kind: "write", HasHandler: true}}}); err != nil {
				t.Fatal(err)
			}
			reg.SetUI(m.WrapUI(panel))
			res := reg.Call(context.Background(), &tools.Call{ID: "p1", Tool: "send_note", TabID: 3, Caller: "model"})
			if res.Success != c.want {
				t.Fatalf("result = %+v, want success %v", res, c.want)
			}
			if d := <-ext.doneSeen; d.By != c.by {
				t.Errorf("decided by %q, want %q", d.By, c.by)
			}
			ext.mu.Lock()
			defer ext.mu.Unlock()
			if want := map[bool]int{true: 1, false: 0}[c.want]; ext.runs != want {
				t.Errorf("ran %d times, want %d", ext.runs, want)
			}
		})
	}
}
