package e2e

// `ferry mcp` with the ecosystem's own MCP clients, from npm (scripts/e2e-npm): the
// official TypeScript SDK's client and the MCP Inspector's command line, against a
// live browser host whose tab shows a WebMCP page. Names with a dot stay as they
// are, titles pass through, every schema is one every client takes, binding a tab
// that does not exist is an error.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/tests/browsertest"
)

func TestMCPClientsOfTheEcosystem(t *testing.T) {
	npm := e2eNPM(t)
	srv := webmcpServer(t)
	s := start(t, 120*time.Second)
	url := srv.URL + "/webmcp/spec.html"
	_, tab := s.openTab(url)
	waitPageTools(t, s, tab, 2)
	env := append(os.Environ(), "FERRY_HOME="+s.home)

	t.Run("TypeScript SDK client", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(s.ctx, 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", filepath.Join(browsertest.RepoRoot(), "tests", "e2e", "testdata", "mcp-client.mjs"), npm, ferryBin, url)
		cmd.Env = env
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("the TypeScript client: %v\n%s", err, b)
		}
		var got struct {
			First       []string `json:"first"`
			Tab         int      `json:"tab"`
			BindMissing struct {
				IsError bool `json:"isError"`
				Result  struct {
					Code   string `json:"code"`
					Reason string `json:"reason"`
				} `json:"result"`
			} `json:"bindMissing"`
			Tools []struct {
				Name        string          `json:"name"`
				Title       *string         `json:"title"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
			Add struct {
				IsError bool           `json:"isError"`
				Result  map[string]any `json:"result"`
			} `json:"add"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		if got.Tab != tab {
			t.Errorf("the client found tab %d, want %d", got.Tab, tab)
		}
		if !got.BindMissing.IsError || got.BindMissing.Result.Code != "INVALID_PARAMS" || !strings.Contains(got.BindMissing.Result.Reason, "987654321") {
			t.Errorf("binding a tab that does not exist: %+v", got.BindMissing)
		}
		var title string
		for _, tool := range got.Tools {
			if tool.Name == "todo.add" && tool.Title != nil {
				title = *tool.Title
			}
			if p := tools.CheckPortable(tool.InputSchema); len(p) > 0 {
				t.Errorf("%s: %v", tool.Name, p)
			}
		}
		if title != "Add a to-do" {
			t.Errorf("todo.add (its dot kept) has the title %q, want the page's", title)
		}
		if got.Add.IsError || got.Add.Result["success"] != true {
			t.Errorf("todo.add through the TypeScript client: %+v", got.Add)
		}
	})

	t.Run("MCP Inspector CLI", func(t *testing.T) {
		inspector := filepath.Join(npm, "node_modules", ".bin", "mcp-inspector")
		run := func(args ...string) []byte {
			ctx, cancel := context.WithTimeout(s.ctx, 60*time.Second)
			defer cancel()
			// The Inspector starts the server with a few default variables only: the
			// data directory is handed over explicitly.
			cmd := exec.CommandContext(ctx, inspector, append([]string{"--cli", "-e", "FERRY_HOME=" + s.home, ferryBin, "mcp"}, args...)...)
			cmd.Env = env
			b, err := cmd.Output()
			if err != nil {
				t.Fatalf("mcp-inspector --cli ferry mcp %v: %v\n%s", args, err, b)
			}
			return b
		}
		var listed struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(run("--method", "tools/list"), &listed); err != nil || len(listed.Tools) < 10 {
			t.Fatalf("tools/list through the Inspector: %v (%d tools)", err, len(listed.Tools))
		}
		for _, tool := range listed.Tools {
			if p := tools.CheckPortable(tool.InputSchema); len(p) > 0 {
				t.Errorf("%s: %v", tool.Name, p)
			}
		}
		out := string(run("--method", "tools/call", "--tool-name", "list_tasks"))
		if !strings.Contains(out, `\"success\":true`) && !strings.Contains(out, `"success": true`) {
			t.Errorf("tools/call list_tasks through the Inspector: %s", out)
		}
	})
}
