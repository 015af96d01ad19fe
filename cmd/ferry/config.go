package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/storage"
)

// openDB opens the database of the data directory for a command.
func openDB(stderr io.Writer) (*storage.DB, bool) {
	dir, err := storage.DefaultDataDir()
	if err == nil {
		var db *storage.DB
		if db, err = storage.Open(dir); err == nil {
			return db, true
		}
	}
	fmt.Fprintf(stderr, "ferry: %v\nRun `ferry doctor` to check the installation.\n", err)
	return nil, false
}

func cmdConfig(args []string, stdout, stderr io.Writer) int {
	const use = "usage: ferry config get KEY | set KEY VALUE | unset KEY | list"
	if wantsHelp(args) {
		fmt.Fprintln(stdout, use+"\n\nlist shows every setting with its value, its default and what it does.")
		return 0
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, use)
		return 2
	}
	want := map[string]int{"get": 2, "set": 3, "unset": 2, "list": 1}
	n, ok := want[args[0]]
	if !ok || len(args) != n {
		fmt.Fprintln(stderr, use)
		return 2
	}
	var spec config.Setting
	if n > 1 {
		var err error
		if spec, err = config.Lookup(args[1]); err != nil {
			fmt.Fprintln(stderr, "ferry:", err)
			return 2
		}
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	ctx := context.Background()
	switch args[0] {
	case "get":
		v, set, err := db.GetSetting(ctx, spec.Key)
		if err != nil {
			fmt.Fprintln(stderr, "ferry:", err)
			return 1
		}
		if !set {
			v = spec.Default
		}
		fmt.Fprintln(stdout, v)
	case "set":
		if err := spec.Check(args[2]); err != nil {
			fmt.Fprintf(stderr, "ferry: %s: %v\n", spec.Key, err)
			return 2
		}
		if err := db.SetSetting(ctx, spec.Key, args[2]); err != nil {
			fmt.Fprintln(stderr, "ferry:", err)
			return 1
		}
	case "unset":
		if err := db.DeleteSetting(ctx, spec.Key); err != nil {
			fmt.Fprintln(stderr, "ferry:", err)
			return 1
		}
	case "list":
		stored, err := db.ListSettings(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "ferry:", err)
			return 1
		}
		for _, s := range config.All() {
			v, set := stored[s.Key]
			mark := "(default)"
			if set {
				mark = ""
			} else {
				v = s.Default
			}
			fmt.Fprintf(stdout, "%s = %s %s\n    %s\n", s.Key, v, mark, s.Description)
		}
	}
	return 0
}

func cmdSecret(args []string, stdout, stderr io.Writer) int {
	const use = "usage: ferry secret set KEY (value read from stdin) | delete KEY | list"
	if wantsHelp(args) {
		fmt.Fprintln(stdout, use)
		return 0
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, use)
		return 2
	}
	switch {
	case args[0] == "set" && len(args) == 2, args[0] == "delete" && len(args) == 2, args[0] == "list" && len(args) == 1:
	default:
		fmt.Fprintln(stderr, use)
		return 2
	}
	var value []byte
	if args[0] == "set" {
		// Read before opening the database so a failed read writes nothing. Only the
		// line ending is trimmed: secrets may legitimately contain spaces.
		b, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		if err != nil {
			fmt.Fprintln(stderr, "ferry: reading the secret from stdin:", err)
			return 1
		}
		value = []byte(strings.TrimRight(string(b), "\r\n"))
		if len(value) == 0 {
			fmt.Fprintln(stderr, "ferry: the secret read from stdin is empty; pipe it in, e.g. `echo \"$KEY\" | ferry secret set NAME`")
			return 2
		}
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	ctx := context.Background()
	var err error
	switch args[0] {
	case "set":
		if err = db.SetSecret(ctx, args[1], value); err == nil {
			fmt.Fprintf(stdout, "secret %s stored (%d bytes)\n", args[1], len(value))
		}
	case "delete":
		err = db.DeleteSecret(ctx, args[1])
	case "list":
		var keys []string
		if keys, err = db.SecretKeys(ctx); err == nil {
			for _, k := range keys {
				fmt.Fprintln(stdout, k)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	return 0
}

// wantsHelp says whether args ask for help: -h or --help as the verb or the key, so
// that `ferry secret delete -h` shows the usage instead of deleting a secret named
// -h (a value, `config set KEY -h`, is taken as given).
func wantsHelp(args []string) bool {
	for _, a := range args[:min(len(args), 2)] {
		if a == "-h" || a == "-help" || a == "--help" {
			return true
		}
	}
	return false
}
