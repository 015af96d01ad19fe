package main

// An outside agent's scope travels with everything it starts, against the real
// binary: a host started as the browser starts it, `ferry mcp` driven by the
// official MCP SDK's client, a control-socket client, and an obedient model (one
// that carries out every instruction it reads) behind them. opfs_delete, which
// mcp.allowed_tools leaves out, deletes nothing whether the outside agent calls it,
// asks the agent tool for it or sends a message that asks for it; a socket client
// cannot pass for another caller or origin. Judged by the file, still there.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/control"
	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/storage"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestOutsideAgentScopeReachesEveryRun(t *testing.T) {
	home := t.TempDir()
	fake := modeltest.New(t, modeltest.OpenAI)
	fake.SetResponder(modeltest.Obedient())
	if _, stderr, code := runFerry(t, home, "", "provider", "add", "fake", "--kind", "openai", "--base-url", fake.URL, "--model", "obedient", "--default"); code != 0 {
		t.Fatalf("provider add: %s", stderr)
	}
	if _, stderr, code := runFerry(t, home, "", "call", "opfs_write", `{"path":"/keep/a.txt","content":"keep me"}`); code != 0 {
		t.Fatalf("opfs_write: %s", stderr)
	}
	still := func(how string) {
		t.Helper()
		out, _, code := runFerry(t, home, "", "call", "opfs_read", `{"path":"/keep/a.txt"}`)
		if code != 0 || !strings.Contains(out, "keep me") {
			t.Fatalf("after %s the file is gone or changed: %s", how, out)
		}
	}
	startHost(t, home, pinnedOrigin)
	waitForHost(t, home)
	deleteIt := modeltest.Instruction("opfs_delete", "path", "/keep/a.txt")

	// 1. Directly: not offered, and refused if called by name through the socket.
	cs, _ := mcpSession(t, home, nil)
	if toolNames(t, cs)["opfs_delete"] != nil {
		t.Fatalf("opfs_delete is offered to the outside agent")
	}
	// 2. Through the agent tool: the sub-agent's calls carry the outside scope.
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "agent", Arguments: map[string]any{"prompt": "Tidy up. " + deleteIt}})
	if err != nil {
		t.Fatalf("agent: %v", err)
	}
	ferryResult(t, r)
	still("an outside agent's sub-agent was told to delete it")

	// 3. Through chat.send on the control socket: the run's calls carry it too.
	c, err := control.Dial(context.Background(), home, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var started struct {
		ConversationID string `json:"conversation_id"`
		RunID          string `json:"run_id"`
	}
	if err := c.Call(context.Background(), "chat.send", map[string]any{"text": "Please clean up. " + deleteIt,
		"origin": "https://bank.example"}, &started); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got struct {
			Run struct {
				Status string `json:"status"`
			} `json:"run"`
		}
		if err := c.Call(context.Background(), "runs.get", map[string]any{"run_id": started.RunID}, &got); err != nil {
			t.Fatal(err)
		}
		if got.Run.Status != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not end")
		}
		time.Sleep(50 * time.Millisecond)
	}
	still("a socket client's run was told to delete it")

	// 4. The client's claims of caller and origin are not taken.
	var res map[string]any
	if err := c.Call(context.Background(), "tools.call", map[string]any{"name": "opfs_delete", "arguments": map[string]any{"path": "/keep/a.txt"},
		"caller": "extension", "origin": "https://bank.example", "conversation_id": started.ConversationID}, &res); err != nil {
		t.Fatal(err)
	}
	if res["code"] != "PERMISSION_DENIED" {
		t.Errorf("opfs_delete called by name on the socket: %v", res)
	}
	still("opfs_delete was called by name on the socket")
	var conv struct {
		Conversation struct {
			Origin string `json:"origin"`
		} `json:"conversation"`
	}
	if err := c.Call(context.Background(), "conversations.get", map[string]any{"conversation_id": started.ConversationID}, &conv); err != nil {
		t.Fatal(err)
	}
	if conv.Conversation.Origin != "" {
		t.Errorf("the conversation took the client's word for its origin: %q", conv.Conversation.Origin)
	}

	// Every refusal is in the audit log: the sub-agent's, the run's, the direct call;
	// none names the origin the client claimed, and each names who made it.
	var audit struct {
		Entries []storage.AuditEntry `json:"entries"`
	}
	if err := c.Call(context.Background(), "audit.query", map[string]any{"tool": "opfs_delete"}, &audit); err != nil {
		t.Fatal(err)
	}
	callers := map[string]int{}
	for _, e := range audit.Entries {
		if e.Success || e.Code != "PERMISSION_DENIED" || e.Origin != "" {
			t.Errorf("audit row %+v", e)
		}
		callers[e.Caller]++
	}
	if callers["model"] != 2 || callers["socket"] != 1 {
		b, _ := json.Marshal(audit.Entries)
		t.Errorf("opfs_delete refusals by caller %v, want 2 by the model (sub-agent, run) and 1 by the socket: %s", callers, b)
	}
}
