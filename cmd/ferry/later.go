package main

import (
	"fmt"
	"io"
)

// These commands belong to features that arrive with later work (the tool registry,
// model providers, the agent runtime, the demo). They exist now so scripts can rely
// on the names, and say plainly that they are not there yet.
func notYet(what string) func([]string, io.Writer, io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		fmt.Fprintf(stderr, "ferry: %s is not available in this version yet\n", what)
		return 2
	}
}

var (
	cmdDemo = notYet("`ferry demo` (the demo pages)")
)
