package pageactions

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/rs/zerolog"
)

// fakeExt plays the extension: it answers page.action.run with what the test set.
type fakeExt struct {
	mu     sync.Mutex
	calls  []RunParams
	denied []DeniedParams
	reply  func(RunParams) RunResult
}

// fakeTabs is what the fake browser's tab list shows: tab 7 the todo page of
// setup, tab 8 a shop.
var fakeTabs = `{"tabs":[{"tab_id":7,"url":"http://127.0.0.1:1/"},{"tab_id":8,"url":"https://shop.example/cart"}]}`

func (f *fakeExt) Call(ctx context.Context, method string, params, result any) error {
	switch method {
	case "browser.tabs.list":
		return json.Unmarshal([]byte(fakeTabs), result)
	case "page.action.denied":
		f.mu.Lock()
		f.denied = append(f.denied, params.(DeniedParams))
		f.mu.Unlock()
		return nil
	}
	p := params.(RunParams)
	f.calls = append(f.calls, p)
	b, _ := json.Marshal(f.reply(p))
	return json.Unmarshal(b, result)
}

func (f *fakeExt) deniedList() []DeniedParams {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]DeniedParams{}, f.denied...)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func snap(ids []string, rows ...string) Snapshot {
	s := Snapshot{Records: map[string]Collection{"tasks": {Total: len(rows)}}}
	var inst []InstanceState
	for _, r := range rows {
		c := s.Records["tasks"]
		c.Rows = append(c.Rows, Row{ID: r, Fields: json.RawMessage(`{"done":false}`)})
		s.Records["tasks"] = c
		inst = append(inst, InstanceState{Record: r, Available: true})
	}
	for _, id := range ids {
		s.Actions = append(s.Actions, ActionState{ID: id, Available: true})
	}
	s.Actions = append(s.Actions, ActionState{ID: "toggle", Available: len(rows) > 0, Instances: inst})
	return s
}

func setup(t *testing.T) (*tools.Registry, *Manager, *fakeExt) {
	reg := tools.NewRegistry(tools.Options{})
	if err := reg.Register(tools.Tool{Name: "list_tabs", Run: func(context.Context, *tools.Call) (any, error) { return nil, nil }}); err != nil {
		t.Fatal(err)
	}
	ext := &fakeExt{}
	m := New(reg, ext, zerolog.Nop())
	res, err := m.Update(UpdateParams{
		TabID: 7, Origin: "http://127.0.0.1:1", URL: "http://127.0.0.1:1/", Title: "Todo",
		Actions: []Decl{
			{HasHandler: true, ID: "add_task", Description: "Add a task", Kind: "write", HasExpect: true, ExpectDesc: "row shown",
				Parameters: json.RawMessage(`[{"name":"text","minLength":1,"maxLength":80,"pattern":"\\S"}]`)},
			{HasHandler: true, ID: "toggle", Record: "tasks", Parameters: json.RawMessage(`[]`)},
			{HasHandler: true, ID: "addNote", Parameters: json.RawMessage(`{"title":{"type":"string","required":true}}`)},
			{HasHandler: true, ID: "list_tabs"},
		},
		Snapshot: snap([]string{"add_task", "addNote"}, "t1", "t2", "t3"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refused) != 1 || res.Refused[0].ID != "list_tabs" || !strings.Contains(res.Refused[0].Reason, "never shadow") {
		t.Fatalf("refused = %+v", res.Refused)
	}
	return reg, m, ext
}

func TestRegisterListAndRemove(t *testing.T) {
	reg, m, _ := setup(t)
	avail, _ := reg.List(context.Background(), 7)
	names := map[string]tools.Listing{}
	for _, l := range avail {
		names[l.Name] = l
	}
	for _, n := range []string{"add_task", "toggle", "addNote"} {
		if names[n].Source != tools.SourcePage || names[n].TabID != 7 {
			t.Errorf("%s not a page tool of tab 7: %+v", n, names[n])
		}
	}
	if !strings.Contains(string(names["toggle"].Parameters), `"record"`) {
		t.Errorf("toggle lacks its record parameter: %s", names["toggle"].Parameters)
	}
	if names["list_tabs"].Source != tools.SourceBuiltin {
		t.Errorf("list_tabs shadowed")
	}
	// The page drops addNote: it goes, the others stay.
	m.Update(UpdateParams{TabID: 7, Origin: "http://127.0.0.1:1", Actions: []Decl{{HasHandler: true, ID: "add_task"}}, Snapshot: snap([]string{"add_task"})})
	if _, ok := reg.Resolve("addNote", 7); ok {
		t.Error("addNote still registered after the page dropped it")
	}
	if _, ok := reg.Resolve("add_task", 7); !ok {
		t.Error("add_task lost")
	}
	m.Remove(7, -1)
	if _, ok := reg.Resolve("add_task", 7); ok {
		t.Error("add_task survived its tab")
	}
}

func TestUnavailableFromSnapshot(t *testing.T) {
	reg, m, ext := setup(t)
	s := snap([]string{"addNote"}, "t1")
	s.Actions = append(s.Actions, ActionState{ID: "add_task", Available: false, Reason: "The list is full"})
	m.Update(UpdateParams{TabID: 7, Origin: "http://127.0.0.1:1", Actions: []Decl{{HasHandler: true, ID: "add_task"}, {HasHandler: true, ID: "toggle", Record: "tasks"}, {HasHandler: true, ID: "addNote"}}, Snapshot: s})
	_, unavail := reg.List(context.Background(), 7)
	if len(unavail) != 1 || unavail[0].Name != "add_task" || unavail[0].Reason != "The list is full" {
		t.Fatalf("unavailable = %+v", unavail)
	}
	r := reg.Call(context.Background(), &tools.Call{Tool: "add_task", TabID: 7, Arguments: json.RawMessage(`{}`)})
	if r.Code != tools.CodeActionUnavailable || len(ext.calls) != 0 {
		t.Errorf("call = %+v, page asked %d times", r, len(ext.calls))
	}
	r = reg.Call(context.Background(), &tools.Call{Tool: "toggle", TabID: 7, Arguments: json.RawMessage(`{"record":"t9"}`)})
	if r.Code != tools.CodeActionUnavailable || !strings.Contains(r.Reason, "t9") {
		t.Errorf("toggle t9 = %+v", r)
	}
	p, _ := m.PageContext(context.Background(), 7)
	if p == nil || p.Title != "" && p.URL == "" || len(p.Unavailable) != 1 || len(p.Records) != 1 {
		t.Errorf("page context = %+v", p)
	}
}

func TestRunValidatesThenAsksThePage(t *testing.T) {
	reg, _, ext := setup(t)
	ext.reply = func(p RunParams) RunResult {
		after := snap([]string{"add_task", "addNote"}, "t4", "t1", "t2", "t3")
		before := snap([]string{"add_task", "addNote"}, "t1", "t2", "t3")
		return RunResult{OK: true, Ran: true, Result: json.RawMessage(`{"id":"t4"}`), Expect: &ExpectOutcome{Desc: "row shown", Met: true}, Before: &before, After: &after}
	}
	r := reg.Call(context.Background(), &tools.Call{Tool: "add_task", TabID: 7, Arguments: json.RawMessage(`{"text":"  "}`)})
	if r.Code != tools.CodeInvalidParams || len(ext.calls) != 0 {
		t.Fatalf("whitespace text = %+v (page asked %d times)", r, len(ext.calls))
	}
	r = reg.Call(context.Background(), &tools.Call{Tool: "add_task", TabID: 7, Arguments: json.RawMessage(`{"text":"hi"}`)})
	if !r.Success {
		t.Fatalf("add_task = %+v", r)
	}
	ch := r.Changed.(Changed)
	if strings.Join(ch.Records.Added, ",") != "t4" || ch.Records.Total != (FromTo{3, 4}) || strings.Join(ch.Actions.Added, ",") != "toggle@t4" {
		t.Errorf("changed = %+v", ch)
	}
	if e, ok := r.Expect.(*ExpectOutcome); !ok || !e.Met {
		t.Errorf("expect = %#v", r.Expect)
	}
	if p := ext.calls[0]; p.TabID != 7 || p.ID != "add_task" || string(p.Arguments) != `{"text":"hi"}` || p.CallID == "" || p.TraceID == "" {
		t.Errorf("run params = %+v", p)
	}
	// The toggle's record stays among its arguments, as validated.
	reg.Call(context.Background(), &tools.Call{Tool: "toggle", TabID: 7, Arguments: json.RawMessage(`{"record":"t1"}`)})
	if p := ext.calls[1]; string(p.Arguments) != `{"record":"t1"}` {
		t.Errorf("toggle run params = %+v", p)
	}
}

func TestPageFailuresKeepTheirMeaning(t *testing.T) {
	reg, _, ext := setup(t)
	for _, c := range []struct {
		out  RunResult
		code tools.Code
		has  string
	}{
		{RunResult{Code: "ACTION_UNAVAILABLE", Reason: "the target button#add is disabled"}, tools.CodeActionUnavailable, "disabled"},
		{RunResult{Code: "EXPECTATION_FAILED", Ran: true, Reason: "not within 2000 ms", Expect: &ExpectOutcome{Desc: "row shown"}}, tools.CodeExpectationFailed, "ran"},
		{RunResult{Code: "HANDLER_ERROR", Ran: true, Reason: "kaboom"}, tools.CodeHandlerError, "may have had effects"},
		// A page cannot pass a denial off as the person's.
		{RunResult{Code: "USER_REJECTED", Reason: "no"}, tools.CodeHandlerError, "no"},
	} {
		ext.reply = func(RunParams) RunResult { return c.out }
		r := reg.Call(context.Background(), &tools.Call{Tool: "addNote", TabID: 7, Arguments: json.RawMessage(`{"title":"x"}`)})
		if r.Code != c.code || !strings.Contains(r.Reason, c.has) {
			t.Errorf("%s → %+v, want %s with %q", c.out.Code, r, c.code, c.has)
		}
	}
}

func TestDiffBoundsAndReorder(t *testing.T) {
	var rowsA, rowsB []string
	for i := 0; i < 30; i++ {
		rowsB = append(rowsB, "n"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	rowsA = []string{"x", "y"}
	before, after := snap(nil, rowsA...), snap(nil, append(append([]string{}, rowsB...), "y", "x")...)
	d := Diff(&before, &after)
	if len(d.Records.Added) != MaxListed || d.Records.Omitted.Added != 10 || !d.Records.Reordered {
		t.Errorf("diff = %+v", d.Records)
	}
	if Diff(nil, &after).Observed {
		t.Error("observed without a before snapshot")
	}
}
