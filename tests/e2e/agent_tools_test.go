package e2e

// One agent run started from the extension (chat.send) with a fake model that
// works a loopback form page through every browser tool, one call per turn,
// each turn built from what the previous tool returned, as a model would: the
// tab id from list_tabs, the refs from browser_snapshot. Every result the model
// gets is a success, and every call is in the audit log, made by the model.

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model/modeltest"
)

// atStep is one scripted tool call: args builds its arguments from the state
// the earlier results left; check reads its own result (the result object the
// model got) and may fill the state.
type atStep struct {
	tool  string
	args  func(st *atState) (string, error)
	check func(st *atState, result json.RawMessage) error
}

type atState struct {
	tabID   int
	refs    map[string]string // tree line fragment → ref, from the snapshot
	scrollY int               // where browser_info found the page scrolled to
}

// atRef finds the ref of the first snapshot line containing what.
func atRef(tree, what string) (string, error) {
	for _, line := range strings.Split(tree, "\n") {
		if strings.Contains(line, what) {
			if i := strings.Index(line, "[ref="); i >= 0 {
				ref := line[i+5:]
				if j := strings.IndexByte(ref, ']'); j >= 0 {
					return ref[:j], nil
				}
			}
		}
	}
	return "", fmt.Errorf("no line with %q and a ref in the snapshot:\n%s", what, tree)
}

func TestAgentUsesEveryBrowserTool(t *testing.T) {
	t0 := time.Now()
	s := start(t, 60*time.Second)
	srv := fixtureServer(t)
	page := srv.URL + "/agent_form.html"

	// The person names the page and what to type: the run opens it (so it may
	// close it), finds it again with list_tabs, and types only the person's words
	// into a page of the origin they named: nothing needs their approval.
	var set json.RawMessage
	s.must("settings.set", map[string]any{"key": "browser.allow_navigate", "value": "true"}, &set)

	tab := func(st *atState) (string, error) { return fmt.Sprintf(`{"tab_id":%d}`, st.tabID), nil }
	byRef := func(what, extra string) func(st *atState) (string, error) {
		return func(st *atState) (string, error) {
			ref, ok := st.refs[what]
			if !ok {
				return "", fmt.Errorf("no ref for %q from the snapshot", what)
			}
			return fmt.Sprintf(`{"tab_id":%d,"ref":%q%s}`, st.tabID, ref, extra), nil
		}
	}
	want := func(fragments ...string) func(st *atState, r json.RawMessage) error {
		return func(st *atState, r json.RawMessage) error {
			for _, f := range fragments {
				if !strings.Contains(string(r), f) {
					return fmt.Errorf("lacks %s", f)
				}
			}
			return nil
		}
	}
	steps := []atStep{
		{tool: "open_tab",
			args: func(*atState) (string, error) { return fmt.Sprintf(`{"url":%q}`, page), nil },
			check: func(st *atState, r json.RawMessage) error {
				var res struct {
					TabID int `json:"tab_id"`
				}
				if err := json.Unmarshal(r, &res); err != nil || res.TabID == 0 {
					return fmt.Errorf("no tab id (%v)", err)
				}
				st.tabID = res.TabID
				return nil
			}},
		{tool: "list_tabs",
			args: func(*atState) (string, error) { return `{"url_pattern":"agent_form\\.html$"}`, nil },
			check: func(st *atState, r json.RawMessage) error {
				var res struct {
					Tabs []struct {
						TabID int    `json:"tab_id"`
						Title string `json:"title"`
					} `json:"tabs"`
				}
				if err := json.Unmarshal(r, &res); err != nil || len(res.Tabs) != 1 || res.Tabs[0].Title != "Ferry agent form" || res.Tabs[0].TabID != st.tabID {
					return fmt.Errorf("want the one form tab, %d (%v)", st.tabID, err)
				}
				return nil
			}},
		{tool: "activate_tab", args: tab, check: func(st *atState, r json.RawMessage) error {
			return want(fmt.Sprintf(`"tab_id":%d`, st.tabID))(st, r)
		}},
		{tool: "browser_snapshot", args: tab, check: func(st *atState, r json.RawMessage) error {
			var res struct {
				Tree string `json:"tree"`
			}
			if err := json.Unmarshal(r, &res); err != nil {
				return err
			}
			st.refs = map[string]string{}
			for _, what := range []string{`textbox "Name"`, `textbox "Comment"`, `combobox "Size"`, `button "Place order"`} {
				ref, err := atRef(res.Tree, what)
				if err != nil {
					return err
				}
				st.refs[what] = ref
			}
			return nil
		}},
		{tool: "browser_type", args: byRef(`textbox "Name"`, `,"text":"Ada"`), check: want(`"value":"Ada"`)},
		{tool: "browser_type", args: byRef(`textbox "Comment"`, `,"text":"Leave it at the door"`), check: want(`"value":"Leave it at the door"`)},
		{tool: "browser_select", args: byRef(`combobox "Size"`, `,"values":["Large"]`), check: want(`"selected":["l"]`)},
		{tool: "browser_click", args: byRef(`button "Place order"`, ``), check: want(`"clicked":true`)},
		// The click changed the page: its title says what the form held.
		{tool: "browser_info", args: tab, check: func(st *atState, r json.RawMessage) error {
			if err := want(`"title":"Placed Ada/l/Leave it at the door"`, `"ready_state":"complete"`)(st, r); err != nil {
				return err
			}
			// Clicking scrolled the button into view, by however much the layout asked.
			var info struct {
				Scroll struct{ Y int } `json:"scroll"`
			}
			if err := json.Unmarshal(r, &info); err != nil {
				return err
			}
			st.scrollY = info.Scroll.Y
			return nil
		}},
		{tool: "browser_scroll", args: func(st *atState) (string, error) {
			// One of the steps a scroll is rounded to, so the page reads this very distance.
			return fmt.Sprintf(`{"tab_id":%d,"pixels":250}`, st.tabID), nil
		}, check: func(st *atState, r json.RawMessage) error {
			return want(fmt.Sprintf(`"y":%d`, st.scrollY+250))(st, r)
		}},
		{tool: "browser_console", args: tab, check: want(`agent form loaded`)},
		{tool: "browser_network", args: tab, check: want(`/pixel.gif`, `"type":"img"`, `/agent_form.html`)},
		{tool: "execute_script",
			args: func(*atState) (string, error) {
				return `{"target":"sandbox","code":"return [1, 2, 3].map(x => x * x)"}`, nil
			},
			check: want(`"value":[1,4,9]`)},
		{tool: "browser_navigate", args: func(st *atState) (string, error) {
			return fmt.Sprintf(`{"tab_id":%d,"url":%q}`, st.tabID, srv.URL+"/tabs.html"), nil
		}, check: want(`"title":"Ferry tabs fixture"`)},
		{tool: "close_tab", args: tab, check: want(`"closed":true`)},
	}

	// The responder runs in the fake's goroutine: it records what went wrong and
	// ends the run with a text answer saying so.
	var (
		mu       sync.Mutex
		problems []string
		st       atState
	)
	callID := func(i int) string { return fmt.Sprintf("call_%02d_%s", i, steps[i].tool) }
	fake := modeltest.New(t, modeltest.OpenAI)
	fake.SetResponder(func(req modeltest.Request) modeltest.Turn {
		mu.Lock()
		defer mu.Unlock()
		fail := func(format string, a ...any) modeltest.Turn {
			msg := fmt.Sprintf(format, a...)
			problems = append(problems, msg)
			return modeltest.Text("Stopping: " + msg)
		}
		i := req.N - 1 // the step to call now; the previous one's result is in req
		if i > 0 {
			prev := i - 1
			r, ok := toolResultOf(req, callID(prev))
			if !ok {
				return fail("request %d carries no result for %s", req.N, callID(prev))
			}
			var res struct {
				Success bool            `json:"success"`
				Code    string          `json:"code"`
				Result  json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(r.Content), &res); err != nil || !res.Success {
				return fail("%s: not a success: %.600s", steps[prev].tool, r.Content)
			}
			if err := steps[prev].check(&st, res.Result); err != nil {
				return fail("%s: %v: %.600s", steps[prev].tool, err, res.Result)
			}
		}
		if i >= len(steps) {
			return modeltest.Text("Ordered a large one for Ada, then tidied up the tab.")
		}
		args, err := steps[i].args(&st)
		if err != nil {
			return fail("%s: %v", steps[i].tool, err)
		}
		return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: callID(i), Name: steps[i].tool, Arguments: args}}}
	})
	if out, err := ferryIn(t, s.home, "", "provider", "add", "fake", "--kind", modeltest.OpenAI, "--base-url", fake.URL, "--model", "fake-model", "--default"); err != nil {
		t.Fatalf("ferry provider add: %v\n%s", err, out)
	}

	var started struct {
		RunID string `json:"run_id"`
	}
	s.must("chat.send", map[string]any{"text": fmt.Sprintf("Open %s and order a Large one for Ada there (comment: Leave it at the door), then go to %s and close the tab.", page, srv.URL+"/tabs.html")}, &started)
	if started.RunID == "" {
		t.Fatalf("chat.send: %+v", started)
	}
	run := s.waitRun(t, started.RunID, 30*time.Second)
	mu.Lock()
	for _, p := range problems {
		t.Error(p)
	}
	mu.Unlock()
	if run.Status != "completed" {
		t.Fatalf("run ended %+v after %d model requests", run, len(fake.Requests()))
	}
	reqs := fake.Requests()
	if len(reqs) != len(steps)+1 {
		t.Fatalf("the fake got %d requests, want %d (one per tool, then the answer)", len(reqs), len(steps)+1)
	}
	// Every result, as the last request carries the whole conversation.
	last := reqs[len(reqs)-1]
	for i, step := range steps {
		r, ok := toolResultOf(last, callID(i))
		var res struct {
			Success bool `json:"success"`
		}
		if !ok || r.IsError || json.Unmarshal([]byte(r.Content), &res) != nil || !res.Success {
			t.Errorf("%s's result as the model got it: %v %.300s", step.tool, ok, r.Content)
		}
	}

	// The audit log: one successful row per call, made by the model.
	var audit struct {
		Entries []struct {
			Tool    string `json:"tool"`
			Caller  string `json:"caller"`
			Code    string `json:"code"`
			Success bool   `json:"success"`
		} `json:"entries"`
	}
	s.must("audit.query", map[string]any{}, &audit)
	byModel := map[string][]string{}
	for _, e := range audit.Entries {
		if e.Caller == "model" {
			byModel[e.Tool] = append(byModel[e.Tool], fmt.Sprintf("%v/%s", e.Success, e.Code))
		}
	}
	wantRows := map[string]int{}
	for _, step := range steps {
		wantRows[step.tool]++
	}
	for tool, n := range wantRows {
		if got, want := strings.Join(byModel[tool], " "), strings.TrimSpace(strings.Repeat("true/ ", n)); got != want {
			t.Errorf("audit rows of %s by the model: %q, want %q", tool, got, want)
		}
	}
	t.Logf("%d tool calls in one run; the whole test took %v", len(steps), time.Since(t0).Round(time.Millisecond))
}
