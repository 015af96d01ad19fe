// Package origins is where Ferry decides whose origin is whose: the extension that
// started the host (its chrome-extension:// origin, checked against the allowed
// extension IDs) and the http(s) origins of pages that the origin-list settings
// name, all normalised one way so that a setting typed by hand matches.
package origins

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/config"
)

// SettingAllowedExtensions holds the extension IDs, beyond the pinned one, that may
// start the host (a JSON array; `ferry install --extension-id` adds to it).
const SettingAllowedExtensions = "host.allowed_extension_ids"

func init() {
	config.Register(config.Setting{
		Key:         SettingAllowedExtensions,
		Description: "extension IDs, beyond the pinned one, that may start the host (JSON array; `ferry install --extension-id` maintains it)",
		Default:     "[]",
		Validate: func(v string) error {
			var ids []string
			if err := json.Unmarshal([]byte(v), &ids); err != nil {
				return fmt.Errorf(`must be a JSON array of extension IDs, like ["abcdefghijklmnopabcdefghijklmnop"]`)
			}
			for _, id := range ids {
				if !ValidExtensionID(id) {
					return fmt.Errorf("%q is not an extension ID (32 letters a-p)", id)
				}
			}
			return nil
		},
	})
}

// ValidExtensionID reports whether id has the shape of a Chromium extension ID: 32
// letters a–p (the hex digits of a key hash, shifted). It runs before the host's
// first reply, so it is a loop rather than a regular expression compiled for it.
func ValidExtensionID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := range len(id) {
		if id[i] < 'a' || id[i] > 'p' {
			return false
		}
	}
	return true
}

// Caller finds the caller origin among the arguments the browser started us
// with. Chrome passes it first on Linux and macOS, but Windows adds
// --parent-window=N and other browsers may add more, so it is searched for, not
// assumed at a position. ok is false when no argument is an origin: not started by a
// browser.
func Caller(args []string) (origin string, ok bool) {
	for _, a := range args {
		if strings.HasPrefix(a, "chrome-extension://") {
			return a, true
		}
	}
	return "", false
}

// AllowedExtensions is the pinned extension ID plus the ones the user installed for.
// A corrupt setting leaves the pinned ID alone, with the error saying why.
func AllowedExtensions(s *config.Snapshot) ([]string, error) {
	ids := []string{buildinfo.ExtensionID}
	var extra []string
	json.Unmarshal([]byte(s.String(SettingAllowedExtensions)), &extra) // checked: a JSON array of IDs
	ids = append(ids, extra...)
	switch {
	case s.Err != nil:
		return ids, s.Err
	case s.Invalid(SettingAllowedExtensions):
		return ids, fmt.Errorf("setting %s is not a JSON array of extension IDs", SettingAllowedExtensions)
	}
	return ids, nil
}

// CheckExtension returns the extension ID of origin when it is one of allowed, and a
// clear refusal otherwise. Chrome already enforces the manifest's allowed_origins; this
// check keeps a hand-edited or stale manifest from widening who may drive the host.
func CheckExtension(origin string, allowed []string) (string, error) {
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
