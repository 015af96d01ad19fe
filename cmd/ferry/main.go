// Command ferry is Ferry's one binary: the native-messaging host a browser starts,
// and the command line that installs, checks and drives it.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/origins"
)

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands is the one table of subcommands; usage is printed from it.
var commands = []command{
	{"version", "print the version and protocol", cmdVersion},
	{"install", "register the host with the browsers found (or --browser, --user-data-dir)", cmdInstall},
	{"uninstall", "remove what install wrote", cmdUninstall},
	{"doctor", "check the installation end to end; exit 0 when healthy", cmdDoctor},
	{"config", "get, set or list settings: config get|set|unset|list [KEY [VALUE]]", cmdConfig},
	{"secret", "store a secret read from stdin: secret set|delete|list [KEY]", cmdSecret},
	{"tools", "list the tools the host offers", cmdTools},
	{"call", "call one tool through the full pipeline: call NAME [JSON-ARGS]", cmdCall},
	{"audit", "the audit log of tool calls, newest first: audit [--since DATE] [--tool T] [--code C] [--json]…", cmdAudit},
	{"provider", "manage model providers: provider add|list|remove|test", cmdProvider},
	{"run", "run the agent in the terminal: run [--provider ID] [--json] [--local] PROMPT", cmdRun},
	{"mcp", "an MCP server on stdio for other agents (claude mcp add ferry -- ferry mcp)", cmdMCP},
	{"gateway", "the team's model gateway: gateway serve|upstream|route|user|team|usage|audit|config", cmdGateway},
	{"demo", "serve the demo pages and open Chromium wired to Ferry", cmdDemo},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// A browser starts us with the caller's origin among the arguments.
	if origin, ok := origins.Caller(args); ok {
		return runHost(origin, stdin, stdout, stderr)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "ferry: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "%s\n\nUsage: ferry COMMAND [ARGS]\n\nCommands:\n", buildinfo.VersionLine())
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nA browser starts ferry itself, with its extension's origin as the argument.\nData directory: $FERRY_HOME, or the per-user default. Run `ferry COMMAND -h` for a command's flags.\n")
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, buildinfo.VersionLine())
	return 0
}
