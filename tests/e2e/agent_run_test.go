package e2e

// An agent run started from the extension (ferryHost.request('chat.send', …)),
// with a fake model vendor on loopback that calls the browser tools: the model's
// tool calls go host → extension → the page and back, the page's content and a
// screenshot (as an image) reach the model, and every call is audited with caller
// "model".

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model/modeltest"
)

// ferryIn runs the built binary with FERRY_HOME=home and stdin.
func ferryIn(t *testing.T, home, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ferryBin, args...)
	cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// toolResultOf is the content of the result of the latest call to a tool, as the
// vendor received it.
func toolResultOf(req modeltest.Request, callID string) (modeltest.ToolResult, bool) {
	for _, m := range req.Messages {
		for _, r := range m.ToolResults {
			if r.CallID == callID {
				return r, true
			}
		}
	}
	return modeltest.ToolResult{}, false
}

func TestAgentRunFromExtension(t *testing.T) {
	for _, kind := range []string{modeltest.OpenAI, modeltest.Anthropic} {
		t.Run(kind, func(t *testing.T) { agentRun(t, kind) })
	}
}

func agentRun(t *testing.T, kind string) {
	s := start(t, 90*time.Second)
	srv := fixtureServer(t)
	page := srv.URL + "/content.html"

	// Turn 1 opens the page; turn 2 reads it and takes a screenshot, with the tab
	// id turn 1 got back; turn 3 answers.
	fake := modeltest.New(t, kind)
	fake.SetResponder(func(req modeltest.Request) modeltest.Turn {
		switch req.N {
		case 1:
			return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_open", Name: "open_tab", Arguments: fmt.Sprintf(`{"url":%q}`, page)}}}
		case 2:
			r, ok := toolResultOf(req, "call_open")
			var res struct {
				Success bool
				Result  struct {
					TabID int `json:"tab_id"`
				}
			}
			if !ok || json.Unmarshal([]byte(r.Content), &res) != nil || !res.Success {
				return modeltest.Text("open_tab failed: " + r.Content)
			}
			tab := fmt.Sprintf(`{"tab_id":%d}`, res.Result.TabID)
			return modeltest.Turn{ToolCalls: []modeltest.Call{
				{ID: "call_read", Name: "get_tab_content", Arguments: tab},
				{ID: "call_shot", Name: "browser_screenshot", Arguments: tab},
			}}
		}
		return modeltest.Text("The story's first paragraph is there, and I saw the page.")
	})
	args := []string{"provider", "add", "fake", "--kind", kind, "--base-url", fake.URL, "--model", "fake-model", "--default"}
	stdin := ""
	if kind == modeltest.Anthropic {
		args, stdin = append(args, "--api-key-stdin"), "sk-ant-test"
	}
	if out, err := ferryIn(t, s.home, stdin, args...); err != nil {
		t.Fatalf("ferry provider add: %v\n%s", err, out)
	}

	var started struct {
		ConversationID string `json:"conversation_id"`
		RunID          string `json:"run_id"`
	}
	s.must("chat.send", map[string]any{"text": "Read the story page and look at it."}, &started)
	if started.RunID == "" {
		t.Fatalf("chat.send: %+v", started)
	}

	// The run's events go to the side panel's ports; the test polls the run's
	// record through the same ferryHost the extension uses.
	if run := s.waitRun(t, started.RunID, 45*time.Second); run.Status != "completed" {
		t.Fatalf("run ended %+v; the fake got %d requests", run, len(fake.Requests()))
	}

	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the fake got %d requests, want 3", len(reqs))
	}
	last := reqs[2]
	read, ok := toolResultOf(last, "call_read")
	if !ok || !strings.Contains(read.Content, "First paragraph of the story.") || strings.Contains(read.Content, "HIDDEN-") {
		t.Errorf("get_tab_content's result as the model got it: %.400s", read.Content)
	}
	shot, ok := toolResultOf(last, "call_shot")
	if !ok || strings.Contains(shot.Content, "base64,") || !strings.Contains(shot.Content, "image attached") {
		t.Errorf("browser_screenshot's text result: %.400s", shot.Content)
	}
	var images []string
	for _, m := range last.Messages {
		images = append(images, m.Images...)
	}
	switch kind {
	case modeltest.Anthropic:
		if shot.Images != 1 {
			t.Errorf("no image block in the screenshot's tool_result: %+v", shot)
		}
	case modeltest.OpenAI:
		if len(images) != 1 || !strings.HasPrefix(images[0], "data:image/jpeg;base64,") {
			t.Errorf("no image message after the tool results: %d images", len(images))
		}
	}
	if len(images) == 1 && len(images[0]) < 1000 {
		t.Errorf("the screenshot is suspiciously small: %.100s", images[0])
	}

	// Each tool's call is in the audit log, made by the model, with its code.
	var audit struct {
		Entries []struct {
			Tool    string `json:"tool"`
			Caller  string `json:"caller"`
			Code    string `json:"code"`
			Success bool   `json:"success"`
		} `json:"entries"`
	}
	s.must("audit.query", map[string]any{}, &audit)
	byModel := map[string]string{}
	for _, e := range audit.Entries {
		if e.Caller == "model" {
			byModel[e.Tool] = fmt.Sprintf("%v/%s", e.Success, e.Code)
		}
	}
	for _, tool := range []string{"open_tab", "get_tab_content", "browser_screenshot"} {
		if byModel[tool] != "true/" {
			t.Errorf("audit row of %s by the model: %q (all by the model: %v)", tool, byModel[tool], byModel)
		}
	}

	// The conversation keeps the image, out of the text.
	var conv struct {
		Messages []struct {
			Role    string   `json:"role"`
			Content string   `json:"content"`
			Images  []string `json:"images"`
		} `json:"messages"`
	}
	s.must("conversations.get", map[string]any{"conversation_id": started.ConversationID}, &conv)
	var stored int
	for _, m := range conv.Messages {
		stored += len(m.Images)
		if strings.Contains(m.Content, "base64,") {
			t.Errorf("a stored %s message holds a data URL as text", m.Role)
		}
	}
	if stored != 1 {
		t.Errorf("%d images stored in the conversation, want 1", stored)
	}
}
