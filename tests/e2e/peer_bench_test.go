//go:build browserbench

package e2e

// The peer an outside agent would otherwise pick: @playwright/mcp (from npm, run
// with Debian's Chromium, headless) reading the same corpus pages from the same
// loopback server, its browser_navigate snapshot scored like get_tab_content's
// content (share of the article's words kept) and counted in the same tokens.
// Run after TestReadCorpusBench to compare:
//
//	go test -tags browserbench -run TestPeerReadCorpusBench -count=1 -v ./tests/e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferryhq/ferry/tests/browsertest"
	"github.com/ferryhq/ferry/tests/corpus"
)

const peerVersion = "0.0.83"

func textOf(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestPeerReadCorpusBench(t *testing.T) {
	browsertest.RequireChromium(t)
	pages, err := corpus.Pages()
	if err != nil {
		t.Skip("corpus:", err)
	}
	dir, err := corpus.NPM("playwright-mcp", "@playwright/mcp", peerVersion, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
	if err != nil {
		t.Skip(err)
	}
	srv := corpusServer(t, pages)
	cmd := exec.Command(filepath.Join(dir, "node_modules", ".bin", "playwright-mcp"), "--headless", "--isolated", "--no-sandbox", "--executable-path", browsertest.PinnedChromium(t))
	cmd.Dir = browsertest.TempDir(t, "ferry-peer-") // where it writes its snapshot and console files
	client := mcp.NewClient(&mcp.Implementation{Name: "ferry-bench", Version: "1"}, nil)
	ctx := t.Context()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("starting @playwright/mcp: %v", err)
	}
	defer cs.Close()

	var texts []string
	var ms []float64
	var sumRec float64
	var under []string
	for _, p := range pages {
		t0 := time.Now()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{"url": srv.URL + "/" + p.Name + "/"}})
		for i := 0; i < 3 && err == nil && strings.Contains(textOf(r), "browser_handle_dialog"); i++ {
			// A dialog is open (its "modal state"): the peer takes no other tool until
			// it is answered, as an agent would answer it.
			if _, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_handle_dialog", Arguments: map[string]any{"accept": true}}); err == nil {
				r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_snapshot", Arguments: map[string]any{}})
			}
		}
		text := ""
		if err == nil && !r.IsError && !strings.Contains(textOf(r), "```yaml") {
			// The navigation's answer carries no snapshot: the agent asks for one.
			text = textOf(r) + "\n"
			r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_snapshot", Arguments: map[string]any{}})
		}
		d := time.Since(t0)
		if err == nil {
			text += textOf(r)
		}
		if err != nil || r.IsError {
			t.Logf("%-44s FAILED: %v %s", p.Name, err, text)
		}
		_, rec, _ := corpus.Score(corpus.Words(text), corpus.Words(corpus.Text(p.Expected)))
		sumRec += rec
		if rec < 0.9 {
			under = append(under, p.Name)
		}
		texts = append(texts, text)
		ms = append(ms, float64(d.Microseconds())/1000)
	}
	total, terr := corpus.O200kTotal(texts)
	if terr != nil {
		t.Logf("o200k tokens not counted: %v", terr)
	}
	if len(texts) > 0 {
		t.Logf("first page's answer, as the agent reads it:\n%.1500s", texts[0])
	}
	t.Logf("@playwright/mcp %s over %d pages: article words kept mean %.4f; pages under 0.9: %d %s; tokens %d (o200k_base); browser_navigate median %.0f ms; load %s",
		peerVersion, len(pages), sumRec/float64(len(pages)), len(under), strings.Join(under, " "), total, medianOf(ms), loadAvg())
}
