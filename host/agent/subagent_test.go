package agent

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/host/workspace"
	"github.com/ferryhq/ferry/storage"
)

func isSub(req model.Request) bool { return strings.Contains(req.System, "# You are a sub-agent") }

func toolNames(req model.Request) map[string]bool {
	m := map[string]bool{}
	for _, s := range req.Tools {
		m[s.Name] = true
	}
	return m
}

func TestSubAgentTypesAndNoRecursion(t *testing.T) {
	var mu sync.Mutex
	offered := map[string]map[string]bool{}
	p := &fakeProvider{}
	p.route = func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		if isSub(req) {
			var typ string
			for _, n := range SubAgentTypeNames() {
				if strings.Contains(req.System, "You are a "+n+" sub-agent") {
					typ = n
				}
			}
			mu.Lock()
			offered[typ] = toolNames(req)
			mu.Unlock()
			if len(req.Messages) == 1 {
				// It tries what it must not have.
				return call("agent", `{"prompt":"deeper"}`, "ask_user", `{"question":"?"}`)(ctx, req, onDelta)
			}
			return say("sub answer from "+typ)(ctx, req, onDelta)
		}
		if len(req.Messages) == 1 {
			return call("agent", `{"prompt":"look it up","type":"researcher","description":"research"}`,
				"agent", `{"prompt":"operate","type":"page_operator"}`,
				"agent", `{"prompt":"anything"}`,
				"agent", `{"prompt":"x","type":"wizard"}`)(ctx, req, onDelta)
		}
		return say("all done")(ctx, req, onDelta)
	}
	e := newEnv(t, p)
	r, out := e.send("delegate", "")
	if out.Status != storage.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	// researcher: its list only (web_search; no task list, which it would write);
	// page_operator: tasks (no page tools are registered); general: everything but
	// ask_user and agent.
	want := map[string][]string{
		"researcher":    {"web_search"},
		"page_operator": {"create_task", "list_tasks", "update_task"},
		"general":       {"web_search", "create_task", "echo", "poke", "broken"},
	}
	for typ, names := range want {
		for _, n := range names {
			if !offered[typ][n] {
				t.Errorf("%s was not offered %s: %v", typ, n, offered[typ])
			}
		}
		for _, n := range []string{"agent", "ask_user"} {
			if offered[typ][n] {
				t.Errorf("%s was offered %s", typ, n)
			}
		}
	}
	if offered["researcher"]["echo"] || offered["researcher"]["create_task"] || offered["page_operator"]["web_search"] {
		t.Errorf("filters let other tools through: %v / %v", offered["researcher"], offered["page_operator"])
	}
	// The parent's results: three answers and an INVALID_PARAMS naming the types.
	final := p.requests()
	var parentLast model.Request
	for _, rq := range final {
		if !isSub(rq) {
			parentLast = rq
		}
	}
	results := parentLast.Messages[2:]
	for i, typ := range []string{"researcher", "page_operator", "general"} {
		if !strings.Contains(results[i].Content, `"success":true`) || !strings.Contains(results[i].Content, "sub answer from "+typ) {
			t.Errorf("agent result %d: %s", i, results[i].Content)
		}
	}
	if !strings.Contains(results[3].Content, "INVALID_PARAMS") || !strings.Contains(results[3].Content, "page_operator") || !strings.Contains(results[3].Content, "researcher") {
		t.Errorf("unknown type result: %s", results[3].Content)
	}
	// The sub-agents' own attempts at agent and ask_user were refused.
	for _, rq := range final {
		if isSub(rq) && len(rq.Messages) == 3 {
			for _, m := range rq.Messages[1:] {
				if !strings.Contains(m.Content, `"code":"NOT_FOUND"`) {
					t.Errorf("sub-agent's forbidden call answered %s", m.Content)
				}
			}
		}
	}
	// Sub-agent events reach the parent's listeners, labelled.
	var subEvents int
	for _, ev := range e.eventsOf(r.ID) {
		if ev.Type == EventSubAgent {
			subEvents++
			if ev.ParentCallID == "" || ev.Event == nil || ev.AgentType == "" {
				t.Fatalf("sub_agent_event %+v", ev)
			}
		}
	}
	if subEvents == 0 {
		t.Fatal("no sub_agent_event")
	}
	// Each sub-agent's run is recorded under its parent's, with its model calls.
	runs, _ := e.db.ListRuns(context.Background(), r.ConversationID)
	var subs int
	for _, run := range runs {
		if run.ParentRunID == r.ID {
			subs++
			if run.Status != storage.RunCompleted {
				t.Errorf("sub run %+v", run)
			}
			if calls, _ := e.db.ModelCalls(context.Background(), run.ID); len(calls) != 2 {
				t.Errorf("sub run has %d model calls", len(calls))
			}
		}
	}
	if subs != 3 {
		t.Errorf("%d sub runs recorded", subs)
	}
	// Sub-agents' messages stay out of the conversation.
	msgs, _ := e.db.Messages(context.Background(), r.ConversationID)
	if len(msgs) != 7 {
		t.Errorf("conversation has %d messages", len(msgs))
	}
}

func parentThenSubs(n int, sub step) step {
	return func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		if isSub(req) {
			return sub(ctx, req, onDelta)
		}
		if len(req.Messages) == 1 {
			var args []string
			for i := 0; i < n; i++ {
				args = append(args, "agent", `{"prompt":"sub `+string(rune('a'+i))+`"}`)
			}
			return call(args...)(ctx, req, onDelta)
		}
		return say("parent done")(ctx, req, onDelta)
	}
}

func TestSubAgentConcurrencyLimit(t *testing.T) {
	var now, peak atomic.Int32
	p := &fakeProvider{}
	p.route = parentThenSubs(6, func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		n := now.Add(1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		time.Sleep(80 * time.Millisecond)
		now.Add(-1)
		return say("ok")(ctx, req, onDelta)
	})
	e := newEnv(t, p)
	e.set(SettingSubagentConcurrency, "2")
	_, out := e.send("fan out", "")
	if out.Status != storage.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	if peak.Load() != 2 {
		t.Fatalf("%d sub-agents ran at once, limit 2", peak.Load())
	}
	for _, m := range p.requests()[len(p.requests())-1].Messages[2:] {
		if !strings.Contains(m.Content, `"success":true`) {
			t.Fatalf("a queued sub-agent failed: %s", m.Content)
		}
	}
}

func TestSubAgentTimeout(t *testing.T) {
	p := &fakeProvider{}
	p.route = parentThenSubs(1, func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	e := newEnv(t, p, func(o *Options) { o.SubagentTimeout = 150 * time.Millisecond })
	start := time.Now()
	r, out := e.send("slow", "")
	if out.Status != storage.RunCompleted || time.Since(start) > 3*time.Second {
		t.Fatalf("outcome %+v after %v", out, time.Since(start))
	}
	last := p.requests()[len(p.requests())-1]
	if res := last.Messages[2].Content; !strings.Contains(res, `"code":"TIMEOUT"`) || !strings.Contains(res, "150ms") {
		t.Fatalf("timed-out sub-agent's result: %s", res)
	}
	runs, _ := e.db.ListRuns(context.Background(), r.ConversationID)
	for _, run := range runs {
		if run.ParentRunID != "" && (run.Status != storage.RunFailed || !strings.Contains(run.Error, "did not finish in time")) {
			t.Errorf("timed-out sub run %+v", run)
		}
	}
}

func TestSubAgentCancelCascades(t *testing.T) {
	var running sync.WaitGroup
	running.Add(3)
	var sawCancel atomic.Int32
	p := &fakeProvider{}
	p.route = parentThenSubs(3, func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		running.Done()
		<-ctx.Done()
		sawCancel.Add(1)
		return nil, ctx.Err()
	})
	e := newEnv(t, p)
	r, err := e.m.Send(context.Background(), SendRequest{Text: "fan out"})
	if err != nil {
		t.Fatal(err)
	}
	running.Wait()
	r.Cancel()
	out := r.Outcome()
	if out.Status != storage.RunCancelled || sawCancel.Load() != 3 {
		t.Fatalf("outcome %+v; %d sub-agents saw the cancel", out, sawCancel.Load())
	}
	runs, _ := e.db.ListRuns(context.Background(), r.ConversationID)
	for _, run := range runs {
		if run.Status != storage.RunCancelled {
			t.Errorf("run %s (parent %q) ended %s", run.ID, run.ParentRunID, run.Status)
		}
	}
}

func TestAgentToolOutsideARun(t *testing.T) {
	p := &fakeProvider{steps: []step{say("standalone answer")}}
	e := newEnv(t, p)
	res := e.reg.Call(context.Background(), &tools.Call{Tool: "agent", Arguments: json.RawMessage(`{"prompt":"hi","type":"researcher"}`), Caller: "cli"})
	if !res.Success || res.Result != "standalone answer" {
		t.Fatalf("result %+v", res)
	}
	res = e.reg.Call(context.Background(), &tools.Call{Tool: "agent", Arguments: json.RawMessage(`{"prompt":"hi","type":"wizard"}`), Caller: "cli"})
	if res.Code != tools.CodeInvalidParams || !strings.Contains(res.Reason, "researcher") {
		t.Fatalf("unknown type %+v", res)
	}
}

func TestSchedulerQueueIsFair(t *testing.T) {
	s := newScheduler(func() int { return 1 })
	rel, _ := s.acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	gotA := make(chan func())
	go func() { r, _ := s.acquire(context.Background()); gotA <- r }()
	time.Sleep(20 * time.Millisecond)
	errB := make(chan error)
	go func() { _, err := s.acquire(ctx); errB <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-errB; err == nil {
		t.Fatal("a cancelled waiter got a slot")
	}
	rel()
	relA := <-gotA
	relA()
	if s.active != 0 || len(s.queue) != 0 {
		t.Fatalf("active %d, queue %d", s.active, len(s.queue))
	}
}

// A researcher changes nothing, whatever it tries: judged by the effects (the
// workspace, the task list, a write tool's own record), with a general sub-agent
// making the same calls as the control that shows they would have written.
func TestResearcherChangesNothing(t *testing.T) {
	p := &fakeProvider{}
	p.route = func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		if isSub(req) {
			typ := "general"
			if strings.Contains(req.System, "You are a researcher sub-agent") {
				typ = "researcher"
			}
			if len(req.Messages) == 1 {
				return call(
					"opfs_write", `{"path":"notes/`+typ+`.md","content":"written by the `+typ+`"}`,
					"opfs_delete", `{"path":"keep/`+typ+`.md"}`,
					"create_task", `{"subject":"a task of the `+typ+`"}`,
					"poke", `{"text":"poked by the `+typ+`"}`,
					"web_search", `{"text":"ferry"}`,
				)(ctx, req, onDelta)
			}
			return say(typ+" done")(ctx, req, onDelta)
		}
		if len(req.Messages) == 1 {
			return call("agent", `{"prompt":"look around","type":"researcher"}`)(ctx, req, onDelta)
		}
		if len(req.Messages) == 3 {
			return call("agent", `{"prompt":"look around","type":"general"}`)(ctx, req, onDelta)
		}
		return say("both done")(ctx, req, onDelta)
	}
	e := newEnv(t, p)
	for _, tl := range workspace.Tools(workspace.Deps{Store: e.db}) {
		if err := e.reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, f := range []string{"keep/researcher.md", "keep/general.md"} {
		if _, err := e.db.WriteFile(ctx, f, []byte("the person's file"), "text/markdown"); err != nil {
			t.Fatal(err)
		}
	}
	writeOrder.Lock()
	writeOrder.seq = nil
	writeOrder.Unlock()

	r, out := e.send("have a look", "")
	if out.Status != storage.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	// The researcher's calls were all refused but its search; it still answered.
	var answered bool
	for _, rq := range p.requests() {
		if !strings.Contains(rq.System, "You are a researcher sub-agent") || len(rq.Messages) != 2+5 {
			continue
		}
		answered = true
		for i, m := range rq.Messages[2:] {
			ok := strings.Contains(m.Content, `"success":true`)
			if ok != (i == 4) {
				t.Errorf("the researcher's call %d answered %s", i, m.Content)
			}
		}
	}
	if !answered {
		t.Error("the researcher was never given its calls' results")
	}

	if _, err := e.db.ReadFile(ctx, "notes/researcher.md"); storage.KindOf(err) != storage.NotFound {
		t.Errorf("the researcher wrote a file (read: %v)", err)
	}
	if f, err := e.db.ReadFile(ctx, "keep/researcher.md"); err != nil || string(f.Content) != "the person's file" {
		t.Errorf("the researcher's delete: %v %q", err, f.Content)
	}
	if f, err := e.db.ReadFile(ctx, "notes/general.md"); err != nil || string(f.Content) != "written by the general" {
		t.Errorf("the control: the general sub-agent's write: %v", err)
	}
	if _, err := e.db.ReadFile(ctx, "keep/general.md"); storage.KindOf(err) != storage.NotFound {
		t.Errorf("the control: the general sub-agent's delete: %v", err)
	}
	tasks, err := e.db.ListTasks(ctx, r.ConversationID)
	if err != nil || len(tasks) != 1 || tasks[0].Subject != "a task of the general" {
		t.Errorf("the conversation's tasks: %+v %v", tasks, err)
	}
	writeOrder.Lock()
	pokes := strings.Join(writeOrder.seq, ", ")
	writeOrder.Unlock()
	if pokes != "poked by the general" {
		t.Errorf("poke ran for: %q", pokes)
	}
}

// README's table of sub-agent types names every type, and the researcher's tools
// exactly.
func TestSubAgentTypesREADME(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := regexp.MustCompile("^\\| `([a-z_]+)`( \\(the default\\))? \\|[^|]*\\|(.*)\\|$").FindStringSubmatch(line); m != nil {
			rows[m[1]] = m[3]
		}
	}
	for _, n := range SubAgentTypeNames() {
		if _, ok := rows[n]; !ok {
			t.Errorf("README has no row for the %s type", n)
		}
	}
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(rows["researcher"], -1) {
		listed = append(listed, m[1])
	}
	var want []string
	for n := range SubAgentTypes["researcher"].Tools {
		want = append(want, n)
	}
	sort.Strings(listed)
	sort.Strings(want)
	if strings.Join(listed, " ") != strings.Join(want, " ") {
		t.Errorf("README's researcher tools %v, the table's %v", listed, want)
	}
}
