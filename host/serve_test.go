package host

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// TestToolsOverTheConnection plays the extension: it lists tools, calls a tool that
// needs confirmation, answers the host's ui.confirm request, and reads the audit log
// back through audit.query and audit.export.
func TestToolsOverTheConnection(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h, err := New(db, dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	err = h.Tools.Registry.Register(tools.Tool{Name: "guarded", Confirm: true,
		Parameters: json.RawMessage(`{"pin": {"type": "string", "secret": true}}`),
		Run:        func(ctx context.Context, c *tools.Call) (any, error) { return "done", nil }})
	if err != nil {
		t.Fatal(err)
	}

	hostIn, extOut := io.Pipe()
	extIn, hostOut := io.Pipe()
	go func() { h.Serve(context.Background(), hostIn, hostOut); hostOut.Close() }()
	defer extOut.Close()

	confirms := make(chan tools.ConfirmRequest, 1)
	ext := protocol.NewConn(extIn, extOut, func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		if method != "ui.confirm" {
			return nil, protocol.Errorf(protocol.CodeMethodNotFound, "no %s", method)
		}
		var req tools.ConfirmRequest
		json.Unmarshal(params, &req)
		confirms <- req
		return map[string]bool{"approved": true}, nil
	})
	go ext.Serve(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var list struct {
		Tools       []tools.Listing     `json:"tools"`
		Unavailable []tools.Unavailable `json:"unavailable"`
	}
	if err := ext.Call(ctx, "tools.list", map[string]any{"tab_id": 3}, &list); err != nil {
		t.Fatal(err)
	}
	// With the extension connected, ask_user is available.
	names := map[string]bool{}
	for _, l := range list.Tools {
		names[l.Name] = true
	}
	if !names["ask_user"] || !names["guarded"] || len(list.Unavailable) != 0 {
		t.Fatalf("tools.list: %+v", list)
	}
	var res tools.Result
	if err := ext.Call(ctx, "tools.call", map[string]any{"name": "guarded", "arguments": map[string]any{"pin": "1234"}, "conversation_id": "c1"}, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.Result != "done" {
		t.Fatalf("tools.call: %+v", res)
	}
	req := <-confirms
	if req.Tool != "guarded" || string(req.Arguments) != `{"pin":"[redacted]"}` || req.TimeoutMS != 300000 || req.CallID == "" {
		t.Fatalf("confirm request %+v", req)
	}
	if err := ext.Call(ctx, "tools.call", map[string]any{"name": "nope"}, &res); err != nil || res.Code != tools.CodeNotFound {
		t.Fatalf("unknown tool: %+v %v", res, err)
	}
	var q struct {
		Entries []storage.AuditEntry `json:"entries"`
	}
	if err := ext.Call(ctx, "audit.query", map[string]any{"tool": "guarded"}, &q); err != nil {
		t.Fatal(err)
	}
	if len(q.Entries) != 1 || q.Entries[0].CallID != req.CallID || q.Entries[0].Caller != "extension" || q.Entries[0].ConversationID != "c1" {
		t.Fatalf("audit.query: %+v", q.Entries)
	}
	var exp struct {
		Count int    `json:"count"`
		JSONL string `json:"jsonl"`
	}
	if err := ext.Call(ctx, "audit.export", nil, &exp); err != nil || exp.Count != 2 {
		t.Fatalf("audit.export: %+v %v", exp, err)
	}
	if err := ext.Call(ctx, "audit.query", map[string]any{"since": "yesterday"}, nil); err == nil {
		t.Fatal("a bad time was accepted")
	}
}
