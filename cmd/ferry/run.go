package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/ferryhq/ferry/host/agent"
	"github.com/ferryhq/ferry/host/control"
	"github.com/ferryhq/ferry/host/toolbox"
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
	local := fs.Bool("local", false, "run in this process even when a browser host is running (no browser tools)")
	hostPID := fs.Int("host", 0, "the pid of the running browser host to use (default: the most recently active)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ferry run [--provider ID] [--json] [--local] [--host PID] PROMPT\n\nRuns the agent on PROMPT with the host's tools (inside the running browser host when\nthere is one, so browser tools work), printing the answer as it streams\n(tool calls go to stderr), or JSON Lines events with --json. Exit 0 when the run\ncompletes, 1 otherwise.")
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
	show := printer(stdout, stderr, *asJSON)
	if !*local {
		dataDir, err := storage.DefaultDataDir()
		if err == nil {
			c, err := control.DialAs(context.Background(), dataDir, *hostPID, control.ClientRun)
			switch {
			case err == nil:
				defer c.Close()
				return runInHost(c, prompt, *providerID, show, *asJSON, stderr)
			case *hostPID != 0:
				fmt.Fprintln(stderr, "ferry:", err)
				return 1
			case !errors.Is(err, control.ErrNoHost):
				fmt.Fprintf(stderr, "ferry: cannot reach the running browser host (%v); running here without browser tools\n", err)
			default:
				fmt.Fprintln(stderr, "ferry: no running browser host (open Chrome with the Ferry extension): running here; browser tools are unavailable")
			}
		}
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true}).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	tb, err := toolbox.Open(db, log, nil)
	if err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	defer tb.Close()
	m := tb.Agent

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

// runInHost runs the agent inside a live browser host over its control socket, so
// the run has the browser's tools; its events arrive as chat.event notifications.
func runInHost(c *control.Client, prompt, providerID string, show func(agent.Event), asJSON bool, stderr io.Writer) int {
	if !asJSON {
		who := c.Info.Browser
		if who == "" {
			who = c.Info.Origin
		}
		fmt.Fprintf(stderr, "ferry: running in the browser host (pid %d, %s): browser tools available\n", c.Info.PID, who)
	}
	final := make(chan agent.Event, 1)
	// protocol.Conn hands each incoming notification to its own goroutine, so events
	// can arrive out of order: they are put back in order by their seq.
	var mu sync.Mutex
	next := int64(1)
	held := map[int64]agent.Event{}
	c.OnNotify(func(method string, params json.RawMessage) {
		if method != "chat.event" {
			return
		}
		var ev agent.Event
		if json.Unmarshal(params, &ev) != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		held[ev.Seq] = ev
		for {
			ev, ok := held[next]
			if !ok {
				return
			}
			delete(held, next)
			next++
			show(ev)
			if ev.Type == agent.EventRunFinished || ev.Type == agent.EventRunFailed {
				select {
				case final <- ev:
				default:
				}
			}
		}
	})
	var started struct {
		RunID string `json:"run_id"`
	}
	ctx := context.Background()
	if err := c.Call(ctx, "chat.send", map[string]any{"text": prompt, "provider_id": providerID}, &started); err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	for {
		select {
		case <-sig:
			c.Call(ctx, "chat.cancel", map[string]string{"run_id": started.RunID}, nil)
		case ev := <-final:
			if ev.Status != storage.RunCompleted {
				if !asJSON {
					fmt.Fprintf(stderr, "ferry: the run %s: %s\n", ev.Status, ev.Error)
				}
				return 1
			}
			return 0
		case <-c.Done():
			fmt.Fprintln(stderr, "ferry: the browser host closed the connection before the run ended")
			return 1
		}
	}
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
