package host

import (
	"sort"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/config"
)

// Every package's settings are in the one table the host serves: an unknown key is
// refused with the list of known ones.
func TestUnknownSettingNamesKnownKeys(t *testing.T) {
	for _, known := range []string{"log.level", "host.allowed_extension_ids", "workspace.quota_bytes", "browser.allow_navigate"} {
		if _, err := config.Lookup(known); err != nil {
			t.Errorf("%s: %v", known, err)
		}
	}
	if _, err := config.Lookup("no.such"); err == nil || !strings.Contains(err.Error(), "log.level") {
		t.Fatalf("unknown key: %v; want the list of known keys", err)
	}
}

// PROTOCOL.md's table of host methods is the host's method table: every method
// registered is documented, and nothing documented is missing.
func TestProtocolMDMethodTable(t *testing.T) {
	var documented []string
	for m := range hostMethodRows(t) {
		documented = append(documented, m)
	}
	sort.Strings(documented)
	h := newTestHost(t)
	if got, want := strings.Join(documented, " "), strings.Join(h.Methods.Names(), " "); got != want {
		t.Fatalf("PROTOCOL.md documents\n  %s\nthe host registers\n  %s", got, want)
	}
}
