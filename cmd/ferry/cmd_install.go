package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ferryhq/ferry/install"
)

// listFlag collects a flag given several times (--browser chrome --browser edge), also
// accepting comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

const installUsage = `usage: ferry install [--browser NAME]... [--user-data-dir DIR] [--system] [--extension-id ID]...

Registers this ferry binary as the native-messaging host "ferry_host", so that the
Ferry extension can start it. One line is printed per location: written, or unchanged
when it already said the same.

  --browser NAME      chrome, chromium, edge, brave, vivaldi or all; repeatable.
                      Default: every browser found (its profile folder or program
                      exists); when none is found, all of them, so a browser
                      installed later finds Ferry too.
  --user-data-dir DIR register only in the browser profile DIR (a browser started
                      with --user-data-dir=DIR), as DIR/NativeMessagingHosts/ferry_host.json.
                      Not on Windows, where browsers look only in the registry.
  --system            register for every user of this machine (needs root, or an
                      administrator on Windows).
  --extension-id ID   also let extension ID connect (a development build loaded
                      unpacked, say); repeatable. IDs are kept in the setting
                      host.allowed_extension_ids, which the host checks too.
`

const uninstallUsage = `usage: ferry uninstall [--browser NAME]... [--user-data-dir DIR] [--system] [--extension-id ID]...

Removes what ferry install wrote: Ferry's manifests (never another program's file)
and, on Windows, the registry keys that point at Ferry's manifest. One line is
printed per location: removed, not present, or left alone (with the reason).

  --browser NAME      chrome, chromium, edge, brave, vivaldi or all; repeatable.
                      Default: all.
  --user-data-dir DIR the browser profile DIR given to ferry install.
  --system            the machine-wide registration.
  --extension-id ID   also remove ID from host.allowed_extension_ids; repeatable.
`

const doctorUsage = `usage: ferry doctor [--browser NAME]... [--user-data-dir DIR] [--json]

Checks the installation end to end: each browser's manifest, the binary it names
(present, executable, same version as this one), its allowed origins, Ferry's data
directory, database and log file. Each problem comes with the command that fixes it.
Browsers that are not installed and not registered are skipped. Exits 0 when healthy,
1 otherwise.

  --browser NAME      check only this browser (chrome, chromium, edge, brave, vivaldi).
  --user-data-dir DIR check the registration inside browser profile DIR.
  --json              print one JSON object: {"healthy": bool, "checks": [{"browser",
                      "name", "status": "ok"|"warn"|"fail"|"skip", "detail", "fix"}]}.
`

// parseFlags parses args; done is true when the command should return code at once
// (help asked for, or a usage error).
func parseFlags(fs *flag.FlagSet, usage string, args []string, stdout, stderr io.Writer) (done bool, code int) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return true, 0
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "ferry %s: %v\n%s", fs.Name(), err, usage)
		return true, 2
	}
	return false, 0
}

func installFlags(name, usage string, args []string, stdout, stderr io.Writer) (install.Options, bool, int) {
	var o install.Options
	var browsers, ids listFlag
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Var(&browsers, "browser", "")
	fs.StringVar(&o.UserDataDir, "user-data-dir", "", "")
	fs.BoolVar(&o.System, "system", false, "")
	fs.Var(&ids, "extension-id", "")
	done, code := parseFlags(fs, usage, args, stdout, stderr)
	o.Browsers, o.ExtensionIDs = browsers, ids
	if !done {
		if err := checkBrowserFlag(browsers); err != nil {
			fmt.Fprintf(stderr, "ferry %s: %v\n", name, err)
			return o, true, 2
		}
	}
	return o, done, code
}

// checkBrowserFlag rejects an unknown --browser as a usage error, before anything runs.
func checkBrowserFlag(names []string) error {
	_, _, err := install.ParseBrowsers(names)
	return err
}

func printReport(w io.Writer, rep *install.Report) {
	if rep == nil {
		return
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	for _, r := range rep.Results {
		fmt.Fprintln(w, r)
	}
}

func cmdInstall(args []string, stdout, stderr io.Writer) int {
	opts, done, code := installFlags("install", installUsage, args, stdout, stderr)
	if done {
		return code
	}
	env, err := install.DefaultEnv()
	if err != nil {
		fmt.Fprintln(stderr, "ferry install:", err)
		return 1
	}
	rep, err := install.Install(context.Background(), env, opts)
	printReport(stdout, rep)
	if err != nil {
		fmt.Fprintln(stderr, "ferry install:", err)
		return 1
	}
	fmt.Fprintln(stdout, "host:", env.Exe)
	return 0
}

func cmdUninstall(args []string, stdout, stderr io.Writer) int {
	opts, done, code := installFlags("uninstall", uninstallUsage, args, stdout, stderr)
	if done {
		return code
	}
	env, err := install.DefaultEnv()
	if err != nil {
		fmt.Fprintln(stderr, "ferry uninstall:", err)
		return 1
	}
	rep, err := install.Uninstall(context.Background(), env, opts)
	printReport(stdout, rep)
	if err != nil {
		fmt.Fprintln(stderr, "ferry uninstall:", err)
		return 1
	}
	return 0
}

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	var opts install.DoctorOptions
	var browsers listFlag
	var asJSON bool
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.Var(&browsers, "browser", "")
	fs.StringVar(&opts.UserDataDir, "user-data-dir", "", "")
	fs.BoolVar(&asJSON, "json", false, "")
	if done, code := parseFlags(fs, doctorUsage, args, stdout, stderr); done {
		return code
	}
	opts.Browsers = browsers
	if err := checkBrowserFlag(browsers); err != nil {
		fmt.Fprintln(stderr, "ferry doctor:", err)
		return 2
	}
	env, err := install.DefaultEnv()
	if err != nil {
		fmt.Fprintln(stderr, "ferry doctor:", err)
		return 1
	}
	rep := install.Doctor(context.Background(), env, opts)
	if asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "ferry doctor:", err)
		return 1
	}
	if !rep.Healthy {
		return 1
	}
	return 0
}
