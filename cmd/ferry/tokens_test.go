package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/tiktoken-go/tokenizer/codec"
)

// toolBudget is the most tokens all builtins' definitions may take together in a
// request: they are sent with every model call of every turn.
const toolBudget = 3500

// estimateMargin is how far the estimate ferry tools prints may stray from the real
// count on the builtins (tools.EstimateTokens is calibrated on them).
const estimateMargin = 0.03

// TestToolListBudget counts the builtins' definitions as an OpenAI request carries
// them (the tools array of {"type":"function","function":{…}}, the same encoding as
// host/model's) with o200k_base, the tokenizer of OpenAI's current models, in the
// tiktoken-go/tokenizer port that embeds its ranks (a test-only dependency: the
// binary prints tools.EstimateTokens). The real binary lists them; its printed total
// must be close to the real count.
func TestToolListBudget(t *testing.T) {
	home := t.TempDir()
	out, code := ferryCmd(t, home, "tools", "--json")
	var listed struct {
		Tools []struct {
			ModelName   string          `json:"model_name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Source      string          `json:"source"`
			Tokens      int             `json:"tokens"`
		} `json:"tools"`
		Tokens int `json:"tokens"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed.Tools) < 20 {
		t.Fatalf("ferry tools --json: exit %d: %.500s", code, out)
	}
	enc := codec.NewO200kBase()
	count := func(b []byte) int {
		n, err := enc.Count(string(b))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	type row struct {
		name      string
		real, est int
	}
	var (
		rows []row
		defs []json.RawMessage
	)
	for _, l := range listed.Tools {
		if l.Source != string(tools.SourceBuiltin) {
			t.Fatalf("%s: source %s; ferry tools lists the builtins only", l.ModelName, l.Source)
		}
		def := tools.OpenAIDefinition(l.ModelName, l.Description, l.Parameters)
		// What the tools share is said once, in agent.ToolGuide.
		for _, shared := range []string{"from list_tabs", "latest browser_snapshot", "the active tab", "relative to the workspace root", "calls outside one"} {
			if bytes.Contains(def, []byte(shared)) {
				t.Errorf("%s says %q, which agent.ToolGuide says for every tool", l.ModelName, shared)
			}
		}
		defs = append(defs, def)
		rows = append(rows, row{l.ModelName, count(def), l.Tokens})
	}
	var array bytes.Buffer
	e := json.NewEncoder(&array)
	e.SetEscapeHTML(false)
	if err := e.Encode(defs); err != nil {
		t.Fatal(err)
	}
	total := count(bytes.TrimSpace(array.Bytes()))

	sort.Slice(rows, func(i, j int) bool { return rows[i].real > rows[j].real })
	var report strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&report, "  %-20s %4d o200k  %4d estimated\n", r.name, r.real, r.est)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%d builtins: %d tokens (o200k_base, the OpenAI tools array, %d bytes); ferry tools prints %d; load %s\n%s",
		len(rows), total, array.Len()-1, listed.Tokens, strings.TrimSpace(string(load)), report.String())

	if total > toolBudget {
		t.Errorf("the builtins' definitions take %d tokens, over the budget of %d: say less in the descriptions, or say it once in agent.ToolGuide", total, toolBudget)
	}
	if off := float64(listed.Tokens-total) / float64(total); off > estimateMargin || off < -estimateMargin {
		t.Errorf("ferry tools prints %d tokens, the real count is %d (%+.1f%%, margin %.0f%%): recalibrate tools.EstimateTokens", listed.Tokens, total, 100*off, 100*estimateMargin)
	}

	// README's figure is near the real one.
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`all builtins together take about\s+([\d,]+)\s+tokens`).FindSubmatch(readme); m == nil {
		t.Error("README does not say how many tokens the builtins take")
	} else if n, _ := strconv.Atoi(strings.ReplaceAll(string(m[1]), ",", "")); n < total*9/10 || n > total*11/10 {
		t.Errorf("README says the builtins take about %d tokens; they take %d", n, total)
	}

	// The table prints the same total, under the budget.
	out, code = ferryCmd(t, home, "tools")
	m := regexp.MustCompile(`(\d+) tools, about (\d+) tokens`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("ferry tools: exit %d, no total in %.300s", code, out)
	}
	if n, _ := strconv.Atoi(m[1]); n != len(rows) {
		t.Errorf("ferry tools counts %d tools, --json lists %d", n, len(rows))
	}
	if n, _ := strconv.Atoi(m[2]); n != listed.Tokens || n > toolBudget {
		t.Errorf("ferry tools prints about %d tokens; --json says %d; the budget is %d", n, listed.Tokens, toolBudget)
	}
}
