package e2e

// The sub-agent types in a real browser: one run (chat.send, a fake model on
// loopback) hands a form page to a researcher, which tries every kind of write and
// may only read, then another copy of the page to a page_operator, which fills the
// form from its snapshot's refs and places the order. Each is judged by what the
// page, the tabs, the workspace and the task list hold afterwards.

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model/modeltest"
)

func TestSubAgentTypesInTheBrowser(t *testing.T) {
	s := start(t, 90*time.Second)
	srv := fixtureServer(t)
	open := func(query string) int {
		var opened struct {
			Success bool `json:"success"`
			Result  struct {
				TabID int `json:"tab_id"`
			} `json:"result"`
		}
		s.must("tools.call", map[string]any{"name": "open_tab", "arguments": map[string]any{"url": srv.URL + "/agent_form.html?" + query}}, &opened)
		if !opened.Success || opened.Result.TabID == 0 {
			t.Fatalf("open_tab: %+v", opened)
		}
		return opened.Result.TabID
	}
	researched, operated := open("researcher"), open("operator")
	call := func(name string, args map[string]any) (bool, json.RawMessage) {
		var res struct {
			Success bool            `json:"success"`
			Result  json.RawMessage `json:"result"`
			Reason  string          `json:"reason"`
		}
		s.must("tools.call", map[string]any{"name": name, "arguments": args}, &res)
		if !res.Success {
			return false, json.RawMessage(res.Reason)
		}
		return true, res.Result
	}
	tabCount := func() int {
		_, r := call("list_tabs", map[string]any{})
		var l struct {
			Tabs []json.RawMessage `json:"tabs"`
		}
		json.Unmarshal(r, &l)
		return len(l.Tabs)
	}
	tabsBefore := tabCount()

	// What the researcher tries: one read, then a write of every kind.
	attempts := []modeltest.Call{
		{ID: "r_read", Name: "get_tab_content", Arguments: fmt.Sprintf(`{"tab_id":%d}`, researched)},
		{ID: "r_type", Name: "browser_type", Arguments: fmt.Sprintf(`{"tab_id":%d,"selector":"input[name=name]","text":"Mallory"}`, researched)},
		{ID: "r_click", Name: "browser_click", Arguments: fmt.Sprintf(`{"tab_id":%d,"selector":"#place"}`, researched)},
		{ID: "r_script", Name: "execute_script", Arguments: fmt.Sprintf(`{"tab_id":%d,"target":"page","code":"document.title = 'hijacked'"}`, researched)},
		{ID: "r_open", Name: "open_tab", Arguments: fmt.Sprintf(`{"url":%q}`, srv.URL+"/tabs.html")},
		{ID: "r_close", Name: "close_tab", Arguments: fmt.Sprintf(`{"tab_id":%d}`, researched)},
		{ID: "r_write", Name: "opfs_write", Arguments: `{"path":"notes/researcher.md","content":"the researcher was here"}`},
		{ID: "r_task", Name: "create_task", Arguments: `{"subject":"a task of the researcher"}`},
	}
	var (
		mu       sync.Mutex
		problems []string
	)
	result := func(req modeltest.Request, id string) (bool, json.RawMessage, bool) {
		r, ok := toolResultOf(req, id)
		if !ok {
			return false, nil, false
		}
		var res struct {
			Success bool            `json:"success"`
			Result  json.RawMessage `json:"result"`
		}
		json.Unmarshal([]byte(r.Content), &res)
		return res.Success, res.Result, true
	}
	fake := modeltest.New(t, modeltest.OpenAI)
	fake.SetResponder(func(req modeltest.Request) modeltest.Turn {
		mu.Lock()
		defer mu.Unlock()
		fail := func(format string, a ...any) modeltest.Turn {
			problems = append(problems, fmt.Sprintf(format, a...))
			return modeltest.Text("Stopping: " + fmt.Sprintf(format, a...))
		}
		switch {
		case strings.Contains(req.System, "You are a researcher sub-agent"):
			if _, _, done := result(req, "r_read"); !done {
				return modeltest.Turn{ToolCalls: attempts}
			}
			for _, a := range attempts {
				ok, r, _ := result(req, a.ID)
				if want := a.ID == "r_read"; ok != want {
					problems = append(problems, fmt.Sprintf("the researcher's %s: success %v: %.300s", a.Name, ok, r))
				}
			}
			return modeltest.Text("The form is empty: nothing is placed yet.")

		case strings.Contains(req.System, "You are a page_operator sub-agent"):
			tab := fmt.Sprintf(`{"tab_id":%d`, operated)
			if _, _, done := result(req, "o_click"); done {
				return modeltest.Text("Placed the order for Ada, size Large.")
			}
			if _, _, done := result(req, "o_type"); done {
				return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "o_click", Name: "browser_click", Arguments: tab + `,"selector":"#place"}`}}}
			}
			ok, snap, done := result(req, "o_snapshot")
			if !done {
				return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "o_snapshot", Name: "browser_snapshot", Arguments: tab + `}`}}}
			}
			var tree struct {
				Tree string `json:"tree"`
			}
			if !ok || json.Unmarshal(snap, &tree) != nil {
				return fail("the page_operator's snapshot: %.300s", snap)
			}
			name, err1 := atRef(tree.Tree, `textbox "Name"`)
			size, err2 := atRef(tree.Tree, `combobox "Size"`)
			if err1 != nil || err2 != nil {
				return fail("refs: %v %v", err1, err2)
			}
			return modeltest.Turn{ToolCalls: []modeltest.Call{
				{ID: "o_type", Name: "browser_type", Arguments: fmt.Sprintf(`%s,"ref":%q,"text":"Ada"}`, tab, name)},
				{ID: "o_select", Name: "browser_select", Arguments: fmt.Sprintf(`%s,"ref":%q,"values":["Large"]}`, tab, size)},
			}}

		default: // the parent
			if _, _, done := result(req, "p_research"); !done {
				return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "p_research", Name: "agent",
					Arguments: fmt.Sprintf(`{"type":"researcher","tab_id":%d,"prompt":"Is an order placed on this form?"}`, researched)}}}
			}
			if _, _, done := result(req, "p_operate"); !done {
				return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "p_operate", Name: "agent",
					Arguments: fmt.Sprintf(`{"type":"page_operator","tab_id":%d,"prompt":"Order a large one for Ada on this form."}`, operated)}}}
			}
			for _, id := range []string{"p_research", "p_operate"} {
				if ok, r, _ := result(req, id); !ok {
					problems = append(problems, fmt.Sprintf("%s: %.300s", id, r))
				}
			}
			return modeltest.Text("Done.")
		}
	})
	if out, err := ferryIn(t, s.home, "", "provider", "add", "fake", "--kind", modeltest.OpenAI, "--base-url", fake.URL, "--model", "fake-model", "--default"); err != nil {
		t.Fatalf("ferry provider add: %v\n%s", err, out)
	}
	var started struct {
		RunID          string `json:"run_id"`
		ConversationID string `json:"conversation_id"`
	}
	// Bound to the form the person wants the order on, as the side panel would be: the
	// origin-set rule lets a run change the designated page without asking, and hand
	// it the person's own words (the name and size they gave).
	s.must("chat.send", map[string]any{"text": "Check the first form, then order a Large one for Ada on the second.", "tab_id": operated}, &started)
	if run := s.waitRun(t, started.RunID, 45*time.Second); run.Status != "completed" {
		t.Fatalf("run ended %+v after %d model requests", run, len(fake.Requests()))
	}
	mu.Lock()
	for _, p := range problems {
		t.Error(p)
	}
	mu.Unlock()

	// The researcher changed nothing: its page as it was, every tab still there, no
	// file, no task.
	if ok, info := call("browser_info", map[string]any{"tab_id": researched}); !ok || !strings.Contains(string(info), `"title":"Ferry agent form"`) {
		t.Errorf("the researcher's page: %s", info)
	}
	if ok, c := call("get_tab_content", map[string]any{"tab_id": researched}); !ok || !strings.Contains(string(c), "Not placed yet") || strings.Contains(string(c), "Mallory") {
		t.Errorf("the researcher's page content: %.600s", c)
	}
	if n := tabCount(); n != tabsBefore {
		t.Errorf("%d tabs after the run, %d before", n, tabsBefore)
	}
	if ok, l := call("opfs_list", map[string]any{}); !ok || strings.Contains(string(l), "notes") {
		t.Errorf("the workspace after the researcher: %s", l)
	}
	if out, err := ferryIn(t, s.home, "", "call", "--conversation", started.ConversationID, "list_tasks"); err != nil || strings.Contains(out, "researcher") {
		t.Errorf("the conversation's tasks: %v %s", err, out)
	}
	// The page_operator placed the order through the page's own form.
	if ok, info := call("browser_info", map[string]any{"tab_id": operated}); !ok || !strings.Contains(string(info), `"title":"Placed Ada/l/"`) {
		t.Errorf("the page_operator's page: %s", info)
	}
}
