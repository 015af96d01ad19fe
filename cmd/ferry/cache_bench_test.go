package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/model/modeltest"
)

// BenchmarkPromptCache is the prompt-caching figure: a ten-turn run (nine turns of
// tool calls, then the answer) of the real `ferry run`, with the host's full tool
// list, against the Anthropic fake, which reports cache usage as the API does. It
// prints the input tokens billed at the full price with the cache_control
// breakpoints and without them (--prompt-cache off), and the saving.
func BenchmarkPromptCache(b *testing.B) {
	run := func(cache string) (usage map[string]float64) {
		var turns []modeltest.Turn
		for i := range 9 {
			turns = append(turns, modeltest.Tools("create_task", fmt.Sprintf(`{"subject":"step %d of the plan","description":"work item number %d"}`, i+1, i+1)))
		}
		turns = append(turns, modeltest.Text("All nine steps are on the task list."))
		fake := modeltest.NewAnthropic(b, turns...)
		home := b.TempDir()
		if _, stderr, code := runFerry(b, home, "sk-bench\n", "provider", "add", "bench", "--kind", "anthropic", "--base-url", fake.URL,
			"--model", "claude-sonnet-4-5", "--api-key-stdin", "--default", "--prompt-cache", cache); code != 0 {
			b.Fatalf("provider add: %s", stderr)
		}
		stdout, stderr, code := runFerry(b, home, "", "run", "--local", "--json", "Plan the work in nine tasks, one call each.")
		if code != 0 {
			b.Fatalf("run: %s", stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var ev struct {
				Type  string             `json:"type"`
				Usage map[string]float64 `json:"usage"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "run_finished" {
				usage = ev.Usage
			}
		}
		if n := len(fake.Requests()); n != 10 {
			b.Fatalf("%d model calls, want 10", n)
		}
		if len(fake.Requests()[0].Tools) < 10 {
			b.Fatalf("only %d tools offered", len(fake.Requests()[0].Tools))
		}
		return usage
	}
	for b.Loop() {
		on, off := run("on"), run("off")
		full := func(u map[string]float64) float64 {
			return u["input_tokens"] - u["cache_read_tokens"] - u["cache_write_tokens"]
		}
		fullOn, fullOff := full(on), full(off)
		saving := 100 * (1 - fullOn/fullOff)
		// Priced as Anthropic bills: a cache write at 1.25 times the input price,
		// a read at 0.1 times.
		costOn := fullOn + 1.25*on["cache_write_tokens"] + 0.1*on["cache_read_tokens"]
		load, _ := os.ReadFile("/proc/loadavg")
		b.Logf("ten turns, full tool list: input tokens at full price %.0f with caching, %.0f without: %.1f%% fewer (cache writes %.0f, reads %.0f; input cost %.1f%% lower); load %s",
			fullOn, fullOff, saving, on["cache_write_tokens"], on["cache_read_tokens"], 100*(1-costOn/fullOff), strings.TrimSpace(string(load)))
		b.ReportMetric(fullOn, "fullprice-in-cached")
		b.ReportMetric(fullOff, "fullprice-in-uncached")
		b.ReportMetric(saving, "%fewer")
		if saving < 70 {
			b.Errorf("caching saves %.1f%% of the full-price input tokens; the target is 70%%", saving)
		}
	}
}
