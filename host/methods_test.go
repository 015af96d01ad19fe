package host

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

func newTestHost(t testing.TB) *Host {
	t.Helper()
	dir := t.TempDir()
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(db, dir, zerolog.Nop())
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); db.Close() })
	return h
}

func callJSON(t *testing.T, h *Host, method, params string) (string, error) {
	t.Helper()
	res, err := h.Methods.Dispatch(context.Background(), method, json.RawMessage(params))
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(res)
	return string(b), nil
}

func wantReason(t *testing.T, err error, code int, reason, text string) {
	t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Fatalf("want a protocol error (%s), got %v", reason, err)
	}
	data, _ := json.Marshal(pe.Data)
	if pe.Code != code || (reason != "" && !strings.Contains(string(data), `"reason":"`+reason+`"`)) || !strings.Contains(pe.Message, text) {
		t.Fatalf("want %d %s %q, got %d %s %q", code, reason, text, pe.Code, data, pe.Message)
	}
}

func TestWorkspaceMethods(t *testing.T) {
	h := newTestHost(t)
	ctx := context.Background()
	if _, err := h.DB.WriteFile(ctx, "/notes/todo.md", []byte("# <b>todo</b>\n"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.DB.WriteFile(ctx, "/img.png", []byte{0x89, 'P', 'N', 'G', 0, 1}, "image/png"); err != nil {
		t.Fatal(err)
	}

	got, err := callJSON(t, h, "workspace.list", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"path":"/"`, `{"name":"img.png","type":"file","size":6,"modified":`, `"path":"/img.png"}`, `{"name":"notes","type":"dir","size":14,`, `"path":"/notes"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("list / lacks %s: %s", want, got)
		}
	}
	// The tools' normalisation: no leading slash, a trailing one, "." segments.
	got, err = callJSON(t, h, "workspace.list", `{"path":"./notes/"}`)
	if err != nil || !strings.Contains(got, `"path":"/notes"`) || !strings.Contains(got, `"path":"/notes/todo.md"`) {
		t.Fatalf("list notes/: %s %v", got, err)
	}
	_, err = callJSON(t, h, "workspace.list", `{"path":"nope"}`)
	wantReason(t, err, protocol.CodeInvalidParams, "not_found", "/nope")
	_, err = callJSON(t, h, "workspace.list", `{"path":"img.png"}`)
	wantReason(t, err, protocol.CodeInvalidParams, "conflict", "not a folder")
	_, err = callJSON(t, h, "workspace.list", `{"path":"../x"}`)
	wantReason(t, err, protocol.CodeInvalidParams, "invalid", "climbs above")

	got, err = callJSON(t, h, "workspace.read", `{"path":"notes/todo.md"}`)
	if err != nil || !strings.Contains(got, `"text":"# \u003cb\u003etodo\u003c/b\u003e\n"`) || !strings.Contains(got, `"is_text":true`) || strings.Contains(got, "data_url") {
		t.Fatalf("read text: %s %v", got, err)
	}
	got, err = callJSON(t, h, "workspace.read", `{"path":"/img.png"}`)
	if err != nil || !strings.Contains(got, `"data_url":"data:image/png;base64,iVBORwAB"`) || strings.Contains(got, `"text"`) {
		t.Fatalf("read binary: %s %v", got, err)
	}
	_, err = callJSON(t, h, "workspace.read", `{"path":"notes"}`)
	wantReason(t, err, protocol.CodeInvalidParams, "conflict", "is a folder")
	_, err = callJSON(t, h, "workspace.read", `{"path":"/"}`)
	wantReason(t, err, protocol.CodeInvalidParams, "invalid", "root")
	_, err = callJSON(t, h, "workspace.read", `{"path":"a\\b"}`)
	wantReason(t, err, protocol.CodeInvalidParams, "invalid", "backslash")
	_, err = callJSON(t, h, "workspace.read", `{"file":"x"}`)
	wantReason(t, err, protocol.CodeInvalidParams, "", "unknown field")

	got, err = callJSON(t, h, "workspace.usage", ``)
	if err != nil || got != `{"bytes":20,"files":20,"quota":104857600,"versions":0}` {
		t.Fatalf("usage: %s %v", got, err)
	}
	if _, err := callJSON(t, h, "settings.set", `{"key":"workspace.quota_bytes","value":"1000"}`); err != nil {
		t.Fatal(err)
	}
	if got, _ = callJSON(t, h, "workspace.usage", `{}`); got != `{"bytes":20,"files":20,"quota":1000,"versions":0}` {
		t.Fatalf("usage with a quota set: %s", got)
	}

	_, err = callJSON(t, h, "workspace.delete", `{"path":"/"}`)
	wantReason(t, err, protocol.CodeInvalidParams, "invalid", "root")
	got, err = callJSON(t, h, "workspace.delete", `{"path":"notes/"}`)
	if err != nil || got != `{"path":"/notes","removed":["/notes/todo.md"],"files":1,"bytes":14}` {
		t.Fatalf("delete: %s %v", got, err)
	}
	_, err = callJSON(t, h, "workspace.delete", `{"path":"notes"}`)
	wantReason(t, err, protocol.CodeInvalidParams, "not_found", "no such file")
	if got, _ = callJSON(t, h, "workspace.usage", `{}`); got != `{"bytes":6,"files":6,"quota":1000,"versions":0}` {
		t.Fatalf("usage after delete: %s", got)
	}
}

func TestConversationsDeleteAll(t *testing.T) {
	h := newTestHost(t)
	ctx := context.Background()
	for _, id := range []string{"c1", "c2", "c3"} {
		if _, err := h.DB.CreateConversation(ctx, storage.Conversation{ID: id, Title: id}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := callJSON(t, h, "conversations.delete_all", `{}`)
	if err != nil || got != `{"deleted":3}` {
		t.Fatalf("delete_all: %s %v", got, err)
	}
	if list, _ := h.DB.ListConversations(ctx, 0); len(list) != 0 {
		t.Fatalf("left %d conversations", len(list))
	}
	if got, _ = callJSON(t, h, "conversations.delete_all", ``); got != `{"deleted":0}` {
		t.Fatalf("second delete_all: %s", got)
	}
}

// TestPresenceOverConnection sends ui.presence over a served connection and checks
// what the registry then decides: ask_user unavailable and a confirmation denied at
// once with no panel open, asked again with one.
func TestPresenceOverConnection(t *testing.T) {
	h := newTestHost(t)
	confirmed := tools.Tool{Name: "needs_ok", Description: "test", Kind: tools.KindRead, Confirm: true,
		Parameters: json.RawMessage(`{"type":"object"}`),
		Run:        func(ctx context.Context, c *tools.Call) (any, error) { return "ran", nil }}
	if err := h.Tools.Registry.Register(confirmed); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() { h.Serve(context.Background(), inR, outW); outW.Close(); close(done) }()
	defer func() { inW.Close(); <-done }()
	frames := make(chan *protocol.Message, 16)
	go func() {
		for {
			f, err := protocol.ReadFrame(outR, protocol.MaxInboundFrame)
			if err != nil {
				close(frames)
				return
			}
			m, _ := protocol.DecodeMessage(f)
			frames <- m
		}
	}()
	send := func(s string) {
		if err := protocol.WriteFrame(inW, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	sync := func(id int) { // a ping answered means every earlier notification was handled
		send(`{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"host.ping","params":{"delay_ms":1}}`)
		// Notifications run in order on their own goroutine; give it a moment too.
		for m := range frames {
			if m.IsResponse() {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	askReason := func() string {
		_, unavail := h.Tools.Registry.List(context.Background(), 0)
		for _, u := range unavail {
			if u.Name == "ask_user" {
				return u.Reason
			}
		}
		return ""
	}
	for h.Conn() == nil {
		time.Sleep(time.Millisecond)
	}
	if r := askReason(); r != "" {
		t.Fatalf("ask_user unavailable before any presence: %s", r)
	}
	send(`{"jsonrpc":"2.0","method":"ui.presence","params":{"panels":0}}`)
	sync(1)
	if r := askReason(); !strings.Contains(r, "no side panel is open: open Ferry's side panel") {
		t.Fatalf("ask_user with no panel: %q", r)
	}
	start := time.Now()
	res := h.Tools.Registry.Call(context.Background(), &tools.Call{Tool: "needs_ok", Arguments: json.RawMessage(`{}`)})
	if res.Success || res.Code != tools.CodeUserRejected || !strings.Contains(res.Reason, "no side panel is open") {
		t.Fatalf("confirmation with no panel: %+v", res)
	}
	if time.Since(start) > time.Second {
		t.Fatal("the denial waited")
	}
	send(`{"jsonrpc":"2.0","method":"ui.presence","params":{"panels":2}}`)
	sync(2)
	if r := askReason(); r != "" {
		t.Fatalf("ask_user with two panels: %s", r)
	}
	// With a panel open the confirmation goes to the extension as ui.confirm.
	go h.Tools.Registry.Call(context.Background(), &tools.Call{Tool: "needs_ok", Arguments: json.RawMessage(`{}`)})
	select {
	case m := <-frames:
		if m == nil || m.Method != "ui.confirm" {
			t.Fatalf("want ui.confirm, got %+v", m)
		}
		send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"approved":false}}`)
	case <-time.After(5 * time.Second):
		t.Fatal("no ui.confirm with a panel open")
	}
	_, err := h.Methods.Dispatch(context.Background(), "ui.presence", json.RawMessage(`{"panels":-1}`))
	wantReason(t, err, protocol.CodeInvalidParams, "", "panels")
}
