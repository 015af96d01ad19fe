package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
)

// A host exit in the middle of a tool call: the run is interrupted; the next host
// resumes it from the stored messages, answering the dangling call first.
func TestResumeAfterHostRestart(t *testing.T) {
	inTool := make(chan struct{})
	p := &fakeProvider{steps: []step{call("echo", `{"sleep_ms":60000,"text":"slow"}`)}}
	e := newEnv(t, p)
	// Subscribed through the request, so the event cannot slip by before the
	// subscription (Subscribe after Send raced with a fast run).
	r, err := e.m.Send(context.Background(), SendRequest{Text: "long job", OnEvent: func(ev Event) {
		if ev.Type == EventToolCallStarted {
			close(inTool)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-inTool:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool call never started")
	}
	conv := r.ConversationID
	e.close() // the host exits
	if out := r.Outcome(); out.Status != storage.RunInterrupted {
		t.Fatalf("outcome at exit %+v", out)
	}

	p.steps = []step{say("finished after the restart")}
	e.open()
	ctx := context.Background()
	c, _ := e.db.GetConversation(ctx, conv)
	if c.Status != storage.ConversationInterrupted {
		t.Fatalf("conversation after restart: %+v", c)
	}
	list, _ := e.m.conversationsList(ctx, listParams{})
	if b, _ := json.Marshal(list); !strings.Contains(string(b), `"status":"interrupted"`) {
		t.Fatalf("conversations.list: %s", b)
	}
	// Resume hands back the run itself: looked up by id afterwards, a fast run may
	// already have finished and left the live table.
	r2, err := e.m.Resume(ctx, conv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := r2.Outcome(); out.Status != storage.RunCompleted || out.Text != "finished after the restart" {
		t.Fatalf("resumed outcome %+v", out)
	}
	// The model saw the whole history, with the interrupted call answered.
	req := p.requests()[len(p.requests())-1]
	if len(req.Messages) != 3 || req.Messages[0].Content != "long job" || !strings.Contains(req.Messages[2].Content, "may have had effects") {
		t.Fatalf("resumed request %+v", req.Messages)
	}
	if _, err := e.m.chatResume(ctx, conversationParams{ConversationID: conv}); err == nil || !strings.Contains(err.Error(), "nothing to resume") {
		t.Fatalf("resuming a finished conversation: %v", err)
	}
	c, _ = e.db.GetConversation(ctx, conv)
	if c.Status != storage.ConversationIdle {
		t.Fatalf("conversation after the resumed run: %+v", c)
	}
}

// A host that crashed never marked its runs: the next host takes a run whose
// heartbeat went stale for dead, and leaves alone a run another live host beats for.
func TestStaleRunsOfACrashedHost(t *testing.T) {
	p := &fakeProvider{}
	e := newEnv(t, p)
	ctx := context.Background()
	for _, id := range []string{"dead", "alive"} {
		e.db.CreateConversation(ctx, storage.Conversation{ID: "c-" + id})
		e.db.AppendMessage(ctx, "c-"+id, storage.StoredMessage{Role: "user", Content: "hello"})
		e.db.CreateRun(ctx, storage.Run{ID: "r-" + id, ConversationID: "c-" + id})
	}
	// The crash came between the model's call and its result.
	e.db.AppendMessage(ctx, "c-dead", storage.StoredMessage{Role: "assistant", ToolCalls: json.RawMessage(`[{"id":"k1","name":"echo","arguments":{}}]`)})
	e.close()
	db, _ := storage.Open(e.dir)
	db.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	db.HeartbeatRuns(ctx, []string{"r-alive"})
	db.Close()
	e.open(func(o *Options) { o.DB.Now = func() time.Time { return time.Now().Add(2 * time.Minute) } })
	dead, _ := e.db.GetRun(ctx, "r-dead")
	alive, _ := e.db.GetRun(ctx, "r-alive")
	if dead.Status != storage.RunInterrupted || alive.Status != storage.RunRunning {
		t.Fatalf("dead %s, alive %s", dead.Status, alive.Status)
	}
	p.steps = []step{say("resumed")}
	r, err := e.m.Resume(ctx, "c-dead", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := r.Outcome(); out.Status != storage.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	msgs := p.requests()[0].Messages
	if len(msgs) != 3 || msgs[2].ToolCallID != "k1" || !strings.Contains(msgs[2].Content, "host process exited before this call's result arrived") {
		t.Fatalf("resumed history %+v", msgs)
	}
}

func TestMethods(t *testing.T) {
	p := &fakeProvider{steps: []step{say("hello there")}}
	e := newEnv(t, p)
	mux := protocol.NewMux()
	RegisterMethods(mux, e.m)
	ctx := context.Background()
	callM := func(method, params string) (any, error) {
		t.Helper()
		return mux.Dispatch(ctx, method, json.RawMessage(params))
	}
	res, err := callM("chat.send", `{"text":"hi there","tab_id":3}`)
	if err != nil {
		t.Fatal(err)
	}
	st := res.(started)
	e.m.Run(st.RunID).Outcome()
	// The events went to Notify, in order, each naming the run and conversation.
	evs := e.eventsOf(st.RunID)
	if types(evs) != "run_started text_delta text_delta run_finished" || evs[0].ConversationID != st.ConversationID || evs[3].Seq != 4 {
		t.Fatalf("events %+v", evs)
	}
	b, _ := json.Marshal(evs[3])
	if !strings.Contains(string(b), `"type":"run_finished"`) || !strings.Contains(string(b), `"text":"hello there"`) || !strings.Contains(string(b), `"usage"`) {
		t.Fatalf("run_finished on the wire: %s", b)
	}

	if _, err := callM("conversations.rename", `{"conversation_id":"`+st.ConversationID+`","title":"Greetings"}`); err != nil {
		t.Fatal(err)
	}
	got, err := callM("conversations.get", `{"conversation_id":"`+st.ConversationID+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(got)
	for _, want := range []string{`"title":"Greetings"`, `"tab_id":3`, `"content":"hello there"`, `"status":"completed"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("conversations.get lacks %s: %s", want, b)
		}
	}
	if _, err := callM("runs.get", `{"run_id":"`+st.RunID+`"}`); err != nil {
		t.Fatal(err)
	}
	if res, _ := callM("chat.cancel", `{"run_id":"`+st.RunID+`"}`); res.(map[string]bool)["cancelled"] {
		t.Error("cancelled a finished run")
	}
	for method, params := range map[string]string{
		"chat.send":          `{"text":"  "}`,
		"chat.resume":        `{}`,
		"conversations.get":  `{"conversation_id":"nope"}`,
		"runs.get":           `{"run_id":"nope"}`,
		"conversations.list": `{"bogus":1}`,
	} {
		_, err := callM(method, params)
		var pe *protocol.Error
		if err == nil || !asProtocol(err, &pe) || pe.Code != protocol.CodeInvalidParams {
			t.Errorf("%s %s: %v", method, params, err)
		}
	}
	if _, err := callM("conversations.delete", `{"conversation_id":"`+st.ConversationID+`"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.GetConversation(ctx, st.ConversationID); err == nil {
		t.Fatal("conversation survived delete")
	}
	if _, err := e.db.GetRun(ctx, st.RunID); err == nil {
		t.Fatal("run survived its conversation's delete")
	}
}

func asProtocol(err error, pe **protocol.Error) bool {
	e, ok := err.(*protocol.Error)
	*pe = e
	return ok
}

func TestOneRunPerConversation(t *testing.T) {
	release := make(chan struct{})
	p := &fakeProvider{steps: []step{func(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		<-release
		return &model.Response{Text: "ok"}, nil
	}}}
	e := newEnv(t, p)
	r, err := e.m.Send(context.Background(), SendRequest{Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Send(context.Background(), SendRequest{Text: "two", ConversationID: r.ConversationID}); err != ErrBusy {
		t.Fatalf("second send: %v", err)
	}
	close(release)
	r.Outcome()
}
