package pageactions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/rs/zerolog"
)

// pageTools counts the page actions registered for a tab.
func pageTools(reg *tools.Registry, tab int) int {
	n := 0
	for _, l := range reg.All(tab) {
		if l.Source == tools.SourcePage {
			n++
		}
	}
	return n
}

func okRun(RunParams) RunResult {
	return RunResult{OK: true, Ran: true, Result: json.RawMessage(`{"ok":1}`)}
}

// Updates of one document apply in the order the page made them, whatever order
// the requests arrive in; a new document starts afresh.
func TestUpdatesApplyInOrder(t *testing.T) {
	reg, m, _ := setup(t)
	decls := func(n int) []Decl {
		var out []Decl
		for i := 0; i < n; i++ {
			out = append(out, Decl{ID: fmt.Sprintf("tool_%02d", i), HasHandler: true})
		}
		return out
	}
	up := func(doc string, seq int64, n int) UpdateResult {
		res, err := m.Update(UpdateParams{TabID: 9, Origin: "http://127.0.0.1:1", Doc: doc, Seq: seq, Actions: decls(n)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	count := func() int { return pageTools(reg, 9) }
	up("d1", 3, 50)
	if res := up("d1", 2, 49); !res.Stale || count() != 50 {
		t.Fatalf("an older update applied over a newer one: stale %v, %d tools", res.Stale, count())
	}
	up("d1", 4, 50)
	if res := up("d2", 1, 5); res.Stale || count() != 5 {
		t.Fatalf("a new document's first update: stale %v, %d tools", res.Stale, count())
	}
}

func TestBoundedDeclarations(t *testing.T) {
	reg, m, _ := setup(t)
	var ds []Decl
	for i := 0; i < MaxActions+6; i++ {
		ds = append(ds, Decl{ID: fmt.Sprintf("a%d", i), HasHandler: true, Description: strings.Repeat("x", MaxDescription+500)})
	}
	ds = append(ds, Decl{ID: "huge", HasHandler: true, Parameters: json.RawMessage(`{"type":"object","description":"` + strings.Repeat("y", MaxSchemaBytes) + `"}`)})
	rows := []Row{}
	for i := 0; i < 300; i++ {
		rows = append(rows, Row{ID: fmt.Sprint(i), Fields: json.RawMessage(`{"text":"` + strings.Repeat("z", 40) + `"}`)})
	}
	rows[0].Fields = json.RawMessage(`{"text":"` + strings.Repeat("w", MaxFieldsBytes) + `"}`)
	snap := Snapshot{Records: map[string]Collection{"notes": {Total: 300, Rows: rows}},
		Actions: []ActionState{{ID: "a1", Available: false, Reason: strings.Repeat("r", 5000)}}}
	res, err := m.Update(UpdateParams{TabID: 5, Origin: "http://127.0.0.1:1", Actions: ds, Snapshot: snap})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Registered) != MaxActions || res.Cut == nil || res.Cut.Actions != 6 || res.Cut.Descriptions != MaxActions ||
		res.Cut.Records != 100 || res.Cut.Fields != 1 || res.Cut.Reasons != 1 {
		t.Fatalf("registered %d, cut %+v", len(res.Registered), res.Cut)
	}
	refusedHuge := false
	for _, r := range res.Refused {
		refusedHuge = refusedHuge || (r.ID == "huge" && strings.Contains(r.Reason, "bytes"))
	}
	if !refusedHuge {
		t.Errorf("a schema over %d bytes was not refused: %+v", MaxSchemaBytes, res.Refused)
	}
	for _, l := range reg.All(5) {
		if len([]rune(l.Description)) > MaxDescription {
			t.Errorf("%s has a description of %d characters", l.Name, len([]rune(l.Description)))
		}
	}
	p, _ := m.PageContext(context.Background(), 5)
	b, _ := json.Marshal(p)
	if tokens := tools.EstimateTokens(b); tokens > PageContextTokens+200 {
		t.Errorf("page context is %d tokens; the budget is %d", tokens, PageContextTokens)
	}
	if !strings.Contains(string(b), "left out") || !strings.Contains(string(b), "actions over the limit") {
		t.Errorf("the page context does not say what was cut: %s", b)
	}
}

func TestBuiltinLikeNamesRefused(t *testing.T) {
	reg := tools.NewRegistry(tools.Options{})
	for _, n := range []string{"execute_script", "web_fetch"} {
		if err := reg.Register(tools.Tool{Name: n, Run: func(context.Context, *tools.Call) (any, error) { return nil, nil }}); err != nil {
			t.Fatal(err)
		}
	}
	m := New(reg, &fakeExt{reply: okRun}, zerolog.Nop())
	res, _ := m.Update(UpdateParams{TabID: 1, Origin: "http://127.0.0.1:1", Actions: []Decl{
		{ID: "Execute_Script", HasHandler: true}, {ID: "web-fetch", HasHandler: true}, {ID: "Web.Fetch", HasHandler: true},
		{ID: "web fetch", HasHandler: true}, {ID: "fetch_web", HasHandler: true},
	}})
	if strings.Join(res.Registered, ",") != "fetch_web" || len(res.Refused) != 4 {
		t.Fatalf("registered %v, refused %+v", res.Registered, res.Refused)
	}
	for _, r := range res.Refused {
		if !strings.Contains(r.Reason, "reads like") {
			t.Errorf("%s refused for %q", r.ID, r.Reason)
		}
	}
}

func TestActionWithoutHandlerOrTargetRefused(t *testing.T) {
	_, m, _ := setup(t)
	res, _ := m.Update(UpdateParams{TabID: 2, Origin: "http://127.0.0.1:1", Actions: []Decl{{ID: "nothing"}, {ID: "drive", HasTarget: true}}})
	if strings.Join(res.Registered, ",") != "drive" || len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Reason, "neither a handler nor a target") {
		t.Fatalf("update = %+v", res)
	}
}

// ferry.execute from a frame of another origin is refused naming it, and so is a
// claim that does not match what the host knows of the frame.
func TestPageCallsFromForeignFramesRefused(t *testing.T) {
	_, m, ext := setup(t)
	ext.reply = okRun
	call := func(tab, fr int, origin string) tools.Result {
		out, err := m.execute(context.Background(), executeParams{TabID: tab, FrameID: fr, Origin: origin, Name: "addNote", Arguments: json.RawMessage(`{"title":"x"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return out.(tools.Result)
	}
	if r := call(7, 0, "http://127.0.0.1:1"); !r.Success {
		t.Fatalf("the top page's own call: %+v", r)
	}
	for _, c := range []struct {
		fr     int
		origin string
	}{{3, "https://ads.example"}, {0, "https://ads.example"}} {
		r := call(7, c.fr, c.origin)
		if r.Code != tools.CodePermissionDenied || !strings.Contains(r.Reason, "https://ads.example") {
			t.Errorf("frame %d of %s: %+v", c.fr, c.origin, r)
		}
	}
	// Tab 8's top page is a shop (the browser says so): a frame claiming the todo
	// origin there is not the top page.
	if r := call(8, 2, "http://127.0.0.1:1"); r.Code != tools.CodePermissionDenied {
		t.Errorf("a forged claim on tab 8: %+v", r)
	}
	if n := len(ext.calls); n != 1 {
		t.Errorf("the page ran %d calls; only the top page's should have run", n)
	}
}

func TestPageCallsRateLimitedPerOrigin(t *testing.T) {
	_, m, ext := setup(t)
	ext.reply = okRun
	p := executeParams{TabID: 7, Origin: "http://127.0.0.1:1", Name: "addNote", Arguments: json.RawMessage(`{"title":"x"}`)}
	var last tools.Result
	for i := 0; i <= PageCallsPerMinute; i++ {
		out, _ := m.execute(context.Background(), p)
		last = out.(tools.Result)
	}
	if last.Code != tools.CodeRateLimited || !strings.Contains(last.Reason, "127.0.0.1:1") {
		t.Fatalf("call %d: %+v", PageCallsPerMinute+1, last)
	}
}

// The host's refusals reach the page as denied; what the page refused itself, it knows.
func TestHostDenialsReachThePage(t *testing.T) {
	reg, _, ext := setup(t)
	ext.reply = okRun
	reg.Call(context.Background(), &tools.Call{ID: "bad", Tool: "addNote", TabID: 7, Arguments: json.RawMessage(`{}`)})
	reg.Call(context.Background(), &tools.Call{ID: "good", Tool: "addNote", TabID: 7, Arguments: json.RawMessage(`{"title":"x"}`)})
	waitFor(t, func() bool { return len(ext.deniedList()) > 0 })
	d := ext.deniedList()
	if len(d) != 1 || d[0].CallID != "bad" || d[0].Code != "INVALID_PARAMS" || d[0].ID != "addNote" || d[0].TabID != 7 {
		t.Fatalf("denied = %+v", d)
	}
}

// The page's ferry.init({permissions: {writeStore: true}}) is the global flag of
// its actions; the action's own opt-in is still needed; the host may withhold it.
func TestPageWriteStoreIsThePagesDoubleGate(t *testing.T) {
	reg, m, ext := setup(t)
	ext.reply = okRun
	settings := &memSettings{m: map[string]string{}}
	m.SetAsk(AskDeps{Settings: settings})
	up := func(flags map[string]bool) {
		if _, err := m.Update(UpdateParams{TabID: 4, Origin: "http://127.0.0.1:1", Permissions: flags, Actions: []Decl{
			{ID: "setTheme", HasHandler: true, Permissions: []string{"writeStore"}}, {ID: "peek", HasHandler: true}}}); err != nil {
			t.Fatal(err)
		}
	}
	call := func(name string) tools.Result {
		return reg.Call(context.Background(), &tools.Call{Tool: name, TabID: 4})
	}
	up(nil)
	if r := call("setTheme"); r.Code != tools.CodePermissionDenied || !strings.Contains(r.Reason, "ferry.init") {
		t.Fatalf("writeStore off in the page: %+v", r)
	}
	up(map[string]bool{"writeStore": true})
	if r := call("setTheme"); !r.Success {
		t.Fatalf("writeStore on in the page: %+v", r)
	}
	granted := ext.calls[len(ext.calls)-1].Granted
	if !strings.Contains(strings.Join(granted, ","), "writeStore") {
		t.Errorf("granted %v", granted)
	}
	if r := call("peek"); !r.Success || strings.Contains(strings.Join(ext.calls[len(ext.calls)-1].Granted, ","), "writeStore") {
		t.Errorf("an action without the opt-in was granted writeStore: %+v %v", r, ext.calls[len(ext.calls)-1].Granted)
	}
	settings.Set(context.Background(), SettingWriteStore, "false")
	if r := call("setTheme"); r.Code != tools.CodePermissionDenied {
		t.Errorf("the host's policy withholds writeStore, yet: %+v", r)
	}
}

// The host handles requests concurrently: an update or a removal the service worker
// sent before another one for the same frame is dropped when it arrives later,
// whichever document it is of.
func TestOlderUpdatesAndRemovalsDropped(t *testing.T) {
	reg, m, _ := setup(t)
	count := func() int { return pageTools(reg, 9) }
	up := func(doc string, order int64, ids ...string) UpdateResult {
		var ds []Decl
		for _, id := range ids {
			ds = append(ds, Decl{ID: id, HasHandler: true})
		}
		res, _ := m.Update(UpdateParams{TabID: 9, Origin: "http://127.0.0.1:1", Doc: doc, Seq: 1, Order: order, Actions: ds})
		return res
	}
	up("new", 20, "a", "b")
	if res := up("old", 10, "x"); !res.Stale || count() != 2 {
		t.Fatalf("an old document's late update applied: %+v, %d tools", res, count())
	}
	if n := m.RemoveOrdered(9, 0, 15); n != 0 || count() != 2 {
		t.Fatalf("a removal sent before the new document's update removed %d", n)
	}
	if n := m.RemoveOrdered(9, 0, 30); n != 2 || count() != 0 {
		t.Fatalf("a newer removal removed %d", n)
	}
	if res := up("new", 25, "a", "b"); !res.Stale || count() != 0 {
		t.Fatalf("an update older than the removal brought the frame back: %+v", res)
	}
}
