package pageactions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ferryhq/ferry/protocol"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/rs/zerolog"
)

// The tab's view merges the latest snapshot of its top frame and of its
// same-origin frames; a cross-origin frame's declarations are refused; a run's
// snapshot_after (from the fake extension) becomes the frame's latest.
func TestTabViewMergesSameOriginFrames(t *testing.T) {
	reg := tools.NewRegistry(tools.Options{})
	ext := &fakeExt{}
	m := New(reg, ext, zerolog.Nop())
	const origin = "http://127.0.0.1:1"
	one := func(id string, avail bool, reason, coll string, rows ...string) Snapshot {
		s := Snapshot{Actions: []ActionState{{ID: id, Available: avail, Reason: reason}}, Records: map[string]Collection{}}
		if coll != "" {
			c := Collection{Total: len(rows)}
			for _, r := range rows {
				c.Rows = append(c.Rows, Row{ID: r, Fields: json.RawMessage(`{}`)})
			}
			s.Records[coll] = c
		}
		return s
	}
	mustUpdate := func(p UpdateParams) UpdateResult {
		t.Helper()
		res, err := m.Update(p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// A same-origin child frame may declare before its top frame.
	mustUpdate(UpdateParams{TabID: 3, FrameID: 5, Origin: origin, URL: origin + "/child", Actions: []Decl{{HasHandler: true, ID: "save_draft"}},
		Snapshot: one("save_draft", false, "nothing to save", "drafts", "d1")})
	mustUpdate(UpdateParams{TabID: 3, FrameID: 0, Origin: origin, URL: origin + "/", Title: "Top", Actions: []Decl{{HasHandler: true, ID: "add_task"}},
		Snapshot: one("add_task", true, "", "tasks", "t1", "t2")})
	res := mustUpdate(UpdateParams{TabID: 3, FrameID: 9, Origin: "https://ads.example", URL: "https://ads.example/", Actions: []Decl{{HasHandler: true, ID: "buy_now"}},
		Snapshot: one("buy_now", true, "", "offers", "o1")})
	if len(res.Refused) != 1 || res.Refused[0].ID != "buy_now" || res.Refused[0].Reason != CrossOriginReason || len(res.Registered) != 0 {
		t.Fatalf("cross-origin frame: %+v", res)
	}

	view := func() string {
		t.Helper()
		p, err := m.PageContext(context.Background(), 3)
		if err != nil || p == nil {
			t.Fatalf("PageContext: %+v %v", p, err)
		}
		b, _ := json.Marshal(p)
		return string(b)
	}
	v := view()
	for _, want := range []string{`"url":"http://127.0.0.1:1/"`, `"title":"Top"`, `"actions":["add_task"]`, `"save_draft"`, `nothing to save`, `tasks (2): t1`, `drafts (1): d1`} {
		if !strings.Contains(v, want) {
			t.Errorf("view %s lacks %s", v, want)
		}
	}
	for _, not := range []string{"buy_now", "offers"} {
		if strings.Contains(v, not) {
			t.Errorf("view %s shows the cross-origin frame's %s", v, not)
		}
	}

	// tools.list {tab_id}: both same-origin frames' actions, not the foreign one's.
	raw, err := m.list(context.Background(), listParams{TabID: 3, FrameID: 0, Origin: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	// The cross-origin frame asking for the tab's actions hears nothing of them.
	// Its code travels by value, in the error's data.
	_, err = m.list(context.Background(), listParams{TabID: 3, FrameID: 9, Origin: "https://ads.example"})
	var pe *protocol.Error
	if !errors.As(err, &pe) || fmt.Sprint(pe.Data) != "map[code:PERMISSION_DENIED]" || !strings.Contains(pe.Message, "https://ads.example") {
		t.Errorf("the ad frame's ferry.tools() = %v, want PERMISSION_DENIED naming its origin", err)
	}
	lb, _ := json.Marshal(raw)
	if l := string(lb); !strings.Contains(l, `"add_task"`) || !strings.Contains(l, `"save_draft"`) || strings.Contains(l, "buy_now") {
		t.Errorf("tools.list = %s", l)
	}

	// A newer snapshot of one frame replaces only that frame's.
	mustUpdate(UpdateParams{TabID: 3, FrameID: 5, Origin: origin, URL: origin + "/child", Actions: []Decl{{HasHandler: true, ID: "save_draft"}},
		Snapshot: one("save_draft", true, "", "drafts", "d1", "d2")})
	v = view()
	if !strings.Contains(v, `"actions":["add_task","save_draft"]`) || !strings.Contains(v, "drafts (2)") || !strings.Contains(v, "tasks (2)") || strings.Contains(v, "nothing to save") {
		t.Errorf("after the child's update: %s", v)
	}

	// A run in the child frame: the fake extension's snapshot_after is its latest.
	ext.reply = func(p RunParams) RunResult {
		before := one("save_draft", true, "", "drafts", "d1", "d2")
		after := one("save_draft", true, "", "drafts", "d1", "d2", "d3")
		return RunResult{OK: true, Ran: true, Before: &before, After: &after}
	}
	r := reg.Call(context.Background(), &tools.Call{Tool: "save_draft", TabID: 3, Arguments: json.RawMessage(`{}`)})
	if !r.Success {
		t.Fatalf("save_draft: %+v", r)
	}
	if len(ext.calls) != 1 || ext.calls[0].FrameID != 5 {
		t.Fatalf("runs = %+v, want one in frame 5", ext.calls)
	}
	if v = view(); !strings.Contains(v, "drafts (3)") {
		t.Errorf("after the run: %s", v)
	}

	// The top frame navigates to another origin: the old origin's child goes with it.
	mustUpdate(UpdateParams{TabID: 3, FrameID: 0, Origin: "http://127.0.0.1:2", URL: "http://127.0.0.1:2/", Title: "Other",
		Actions: []Decl{{HasHandler: true, ID: "search"}}, Snapshot: one("search", true, "", "")})
	v = view()
	if strings.Contains(v, "save_draft") || strings.Contains(v, "drafts") || !strings.Contains(v, `"actions":["search"]`) {
		t.Errorf("after the top frame's navigation: %s", v)
	}
	if _, ok := reg.Resolve("save_draft", 3); ok {
		t.Errorf("save_draft still registered after its top frame changed origin")
	}
}
