//go:build linux

package control

import (
	"os"
	"strconv"
	"strings"
)

// Parent describes the process that started this one (the browser): its name and,
// from its command line, the profile (user data directory and profile directory).
func Parent() (browser, profile string) {
	ppid := strconv.Itoa(os.Getppid())
	if b, err := os.ReadFile("/proc/" + ppid + "/comm"); err == nil {
		browser = strings.TrimSpace(string(b))
	}
	b, err := os.ReadFile("/proc/" + ppid + "/cmdline")
	if err != nil {
		return browser, ""
	}
	var dir, prof string
	for _, a := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(a, "--user-data-dir="); ok {
			dir = v
		}
		if v, ok := strings.CutPrefix(a, "--profile-directory="); ok {
			prof = v
		}
	}
	switch {
	case dir != "" && prof != "":
		profile = dir + " (" + prof + ")"
	case dir != "":
		profile = dir
	default:
		profile = prof
	}
	return browser, profile
}
