package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/ferryhq/ferry/host/toolbox"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/rs/zerolog"
)

// openToolbox opens the database and builds the same registry host mode builds.
// Logs (a dangerous tool's warning, say) go to stderr; stdout carries only results.
func openToolbox(stderr io.Writer) (*toolbox.Toolbox, func(), bool) {
	db, ok := openDB(stderr)
	if !ok {
		return nil, nil, false
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true}).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	tb, err := toolbox.Open(db, log, nil)
	if err != nil {
		db.Close()
		fmt.Fprintln(stderr, "ferry:", err)
		return nil, nil, false
	}
	return tb, func() { tb.Close(); db.Close() }, true
}

func cmdTools(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print every tool with its JSON Schema as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ferry tools [--json]\n\nLists the tools the host offers (builtins; page actions exist only in the browser).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	tb, done, ok := openToolbox(stderr)
	if !ok {
		return 1
	}
	defer done()
	all := tb.Registry.All(0)
	_, unavail := tb.Registry.List(context.Background(), 0)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"tools": all, "unavailable": unavail, "tokens": tools.TotalTokens(all)}); err != nil {
			fmt.Fprintln(stderr, "ferry:", err)
			return 1
		}
		return 0
	}
	why := map[string]string{}
	for _, u := range unavail {
		why[u.Name] = u.Reason
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tKIND\tTOKENS\tDESCRIPTION")
	for _, l := range all {
		desc := l.Description
		if i := strings.IndexAny(desc, ".\n"); i > 0 {
			desc = desc[:i]
		}
		name := l.Name
		if l.ModelName != l.Name {
			name += " (" + l.ModelName + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", name, l.Source, l.Kind, l.Tokens, desc)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\n%d tools, about %d tokens (o200k_base, estimated) in every request that offers them all.\n", len(all), tools.TotalTokens(all))
	for _, u := range unavail {
		fmt.Fprintf(stdout, "Unavailable now: %s: %s\n", u.Name, u.Reason)
	}
	return 0
}

func cmdCall(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	trace := fs.String("trace", "", "trace id to continue (an outside agent chaining calls); default a new trace")
	parent := fs.String("parent-trace", "", "the trace that started this one")
	depth := fs.Int("depth", 0, "depth in the call chain (with --trace)")
	conv := fs.String("conversation", "", "conversation the call belongs to (rate limits and the audit log)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ferry call [flags] NAME [JSON-ARGS]\n\nRuns one tool call through the full pipeline and prints the result JSON;\nexit status 0 when success is true, 1 when not, 2 for a usage error.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return 2
	}
	if *depth < 0 {
		fmt.Fprintln(stderr, "ferry: --depth cannot be negative")
		return 2
	}
	name := fs.Arg(0)
	var raw json.RawMessage
	if fs.NArg() == 2 {
		a := fs.Arg(1)
		if a == "-" {
			b, err := io.ReadAll(io.LimitReader(os.Stdin, 64<<20))
			if err != nil {
				fmt.Fprintln(stderr, "ferry: reading arguments from stdin:", err)
				return 1
			}
			a = string(b)
		}
		// Arguments that are not JSON still go through the pipeline: the result says
		// INVALID_PARAMS like it would to any other caller, and the audit log has it.
		raw = json.RawMessage(a)
	}
	tb, done, ok := openToolbox(stderr)
	if !ok {
		return 1
	}
	defer done()
	res := tb.Registry.Call(context.Background(), &tools.Call{
		Tool: name, Arguments: raw, Caller: "cli",
		TraceID: *trace, ParentTrace: *parent, Depth: *depth, ConversationID: *conv,
	})
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	if !res.Success {
		return 1
	}
	return 0
}
