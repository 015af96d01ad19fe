//go:build browserbench

package e2e

// An outside agent reading 100 pages one after another in one tab, through
// `ferry mcp` (the real binary, the official MCP SDK's client) and the browser host
// it serves, with every setting at its default: open_tab to the page, then
// get_tab_content. No call may be refused (the loop guard and the rate limits
// are sized for this); it prints the tokens (o200k_base) and milliseconds per
// page. Run:
//
//	go test -tags browserbench -run TestMCPReadHundredPages -count=1 -v ./tests/e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferryhq/ferry/tests/corpus"
)

func TestMCPReadHundredPages(t *testing.T) {
	pages, err := corpus.Pages()
	if err != nil {
		t.Skip("corpus:", err)
	}
	if len(pages) > 100 {
		pages = pages[:100]
	}
	s := start(t, 15*time.Minute)
	srv := corpusServer(t, pages)
	// Pages are read one after another in one tab that the client opened itself,
	// every setting at its default: navigating its own tab needs no permission.
	s.waitControl()
	m := startMCP(t, s.ctx, s.home)
	call := func(name string, args map[string]any) (toolResult, string) {
		t.Helper()
		r, err := m.cs.CallTool(m.ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("tools/call %s: %v", name, err)
		}
		res, _ := decodeMCPResult(t, name, r)
		text := ""
		if len(r.Content) == 1 {
			if tc, ok := r.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		return res, text
	}
	first, _ := call("open_tab", map[string]any{"url": "about:blank"})
	var o struct {
		TabID int `json:"tab_id"`
	}
	json.Unmarshal(first.Result, &o)

	var ms []float64
	var texts []string
	start := time.Now()
	for i, p := range pages {
		t0 := time.Now()
		if res, _ := call("open_tab", map[string]any{"url": srv.URL + "/" + p.Name + "/", "tab_id": o.TabID}); !res.Success {
			t.Fatalf("page %d (%s): open_tab refused: %s %s", i+1, p.Name, res.Code, res.Reason)
		}
		res, text := call("get_tab_content", map[string]any{"tab_id": o.TabID})
		if !res.Success {
			t.Fatalf("page %d (%s): get_tab_content refused: %s %s", i+1, p.Name, res.Code, res.Reason)
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
		texts = append(texts, text)
	}
	all := time.Since(start)
	total, terr := corpus.O200kTotal(texts)
	if terr != nil {
		t.Logf("o200k tokens not counted: %v", terr)
	}
	t.Logf("%d pages through ferry mcp with default settings, no refusal: %s in all; per page (open_tab + get_tab_content) median %.0f ms, max %.0f ms; get_tab_content results %d tokens (o200k_base), %d a page on average; load %s",
		len(pages), all.Round(time.Millisecond), medianOf(ms), maxOf(ms), total, total/max(1, len(texts)), loadAvg())
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
