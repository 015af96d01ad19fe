package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/ferryhq/ferry/host"
	"github.com/ferryhq/ferry/host/agent"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// cmdRun runs the agent loop in the terminal with the host's tools: the same
// registry host mode builds, so a run here behaves as one from the side panel would,
// less the browser.
func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	providerID := fs.String("provider", "", "the provider to use (default: the default provider)")
	asJSON := fs.Bool("json", false, "print every event as one JSON object a line on stdout")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ferry run [--provider ID] [--json] PROMPT\n\nRuns the agent on PROMPT with the host's tools, printing the answer as it streams\n(tool calls go to stderr), or JSON Lines events with --json. Exit 0 when the run\ncompletes, 1 otherwise.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	prompt := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if prompt == "" {
		fs.Usage()
		return 2
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true}).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	tb, err := host.OpenToolbox(db, log, nil)
	if err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	defer tb.Close()
	m := tb.Agent

	show := printer(stdout, stderr, *asJSON)
	r, err := m.Send(context.Background(), agent.SendRequest{Text: prompt, ProviderID: *providerID, OnEvent: show})
	if err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	// Ctrl-C cancels the run (recorded as cancelled) instead of killing the process
	// mid-write.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
			r.Cancel()
		case <-r.Done():
		}
	}()
	out := r.Outcome()
	if out.Status != storage.RunCompleted {
		if !*asJSON {
			fmt.Fprintf(stderr, "ferry: the run %s: %s\n", out.Status, out.Error)
		}
		return 1
	}
	return 0
}

// printer shows a run's events: the streamed text on stdout and one line per tool
// call on stderr, or every event as a JSON line.
func printer(stdout, stderr io.Writer, asJSON bool) func(agent.Event) {
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	endsLine := true
	return func(ev agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		if asJSON {
			enc.Encode(ev)
			return
		}
		switch ev.Type {
		case agent.EventTextDelta:
			fmt.Fprint(stdout, ev.Text)
			endsLine = strings.HasSuffix(ev.Text, "\n")
		case agent.EventToolCallFinished:
			if !endsLine {
				fmt.Fprintln(stdout)
				endsLine = true
			}
			code := string(ev.Code)
			if code == "" {
				code = "ok"
			}
			line := fmt.Sprintf("[tool] %s %s %dms", ev.Name, code, ev.DurationMS)
			if ev.Result != nil && !ev.Result.Success {
				line += ": " + ev.Result.Reason
			}
			fmt.Fprintln(stderr, line)
		case agent.EventSubAgent:
			if ev.Event != nil && ev.Event.Type == agent.EventToolCallFinished {
				code := string(ev.Event.Code)
				if code == "" {
					code = "ok"
				}
				fmt.Fprintf(stderr, "[tool] %s › %s %s %dms\n", ev.AgentType, ev.Event.Name, code, ev.Event.DurationMS)
			}
		case agent.EventCompacted:
			fmt.Fprintln(stderr, "[compacted the older turns to fit the context window]")
		case agent.EventRunFinished, agent.EventRunFailed:
			if !endsLine {
				fmt.Fprintln(stdout)
				endsLine = true
			}
		}
	}
}
