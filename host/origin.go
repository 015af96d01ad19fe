package host

import (
	"fmt"
	"regexp"
	"strings"
)

var extensionIDPattern = regexp.MustCompile(`^[a-p]{32}$`)

// ValidExtensionID reports whether id has the shape of a Chromium extension ID: 32
// letters a–p (the hex digits of a key hash, shifted).
func ValidExtensionID(id string) bool { return extensionIDPattern.MatchString(id) }

// CallerOrigin finds the caller origin among the arguments the browser started us
// with. Chrome passes it first on Linux and macOS, but Windows adds
// --parent-window=N and other browsers may add more, so it is searched for, not
// assumed at a position. ok is false when no argument is an origin: not started by a
// browser.
func CallerOrigin(args []string) (origin string, ok bool) {
	for _, a := range args {
		if strings.HasPrefix(a, "chrome-extension://") {
			return a, true
		}
	}
	return "", false
}

// CheckOrigin returns the extension ID of origin when it is one of allowed, and a
// clear refusal otherwise. Chrome already enforces the manifest's allowed_origins; this
// check keeps a hand-edited or stale manifest from widening who may drive the host.
func CheckOrigin(origin string, allowed []string) (string, error) {
	rest, ok := strings.CutPrefix(origin, "chrome-extension://")
	id := strings.TrimSuffix(rest, "/")
	if !ok || !ValidExtensionID(id) {
		return "", fmt.Errorf("refusing caller %q: not a chrome-extension:// origin with a valid extension ID", origin)
	}
	for _, a := range allowed {
		if a == id {
			return id, nil
		}
	}
	return "", fmt.Errorf("refusing caller %s: extension %s is not allowed to use this host; if it is yours, run `ferry install --extension-id %s`", origin, id, id)
}
