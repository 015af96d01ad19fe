package origins

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/config"
)

func TestCaller(t *testing.T) {
	origin := "chrome-extension://" + buildinfo.ExtensionID + "/"
	for _, args := range [][]string{
		{origin},                         // Linux and macOS
		{origin, "--parent-window=1234"}, // Windows
		{"--parent-window=0", origin},    // order is not promised
	} {
		if got, ok := Caller(args); !ok || got != origin {
			t.Errorf("Caller(%q) = %q, %v", args, got, ok)
		}
	}
	if _, ok := Caller([]string{"version"}); ok {
		t.Error("a command line was taken for a browser start")
	}
}

func TestCheckExtension(t *testing.T) {
	other := strings.Repeat("b", 32)
	allowed := []string{buildinfo.ExtensionID, other}
	for _, ok := range []string{
		"chrome-extension://" + buildinfo.ExtensionID + "/",
		"chrome-extension://" + other + "/",
		"chrome-extension://" + other,
	} {
		if _, err := CheckExtension(ok, allowed); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	stranger := strings.Repeat("c", 32)
	_, err := CheckExtension("chrome-extension://"+stranger+"/", allowed)
	if err == nil || !strings.Contains(err.Error(), "ferry install --extension-id "+stranger) {
		t.Errorf("unknown extension: %v; want a refusal naming the fix", err)
	}
	for _, bad := range []string{"chrome-extension://short/", "chrome-extension://" + strings.Repeat("z", 32) + "/", "https://evil.example/", "chrome-extension://"} {
		if _, err := CheckExtension(bad, allowed); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestAllowedExtensionsFromSettings(t *testing.T) {
	extra := strings.Repeat("d", 32)
	ids, err := AllowedExtensions(config.Of(map[string]string{SettingAllowedExtensions: `["` + extra + `"]`}))
	if err != nil || len(ids) != 2 || ids[0] != buildinfo.ExtensionID || ids[1] != extra {
		t.Fatalf("allowed = %v, %v", ids, err)
	}
	ids, err = AllowedExtensions(config.Of(map[string]string{SettingAllowedExtensions: `not json`}))
	if err == nil || len(ids) != 1 {
		t.Fatalf("a corrupt setting must fall back to the pinned ID alone and say so: %v %v", ids, err)
	}
	ids, err = AllowedExtensions(&config.Snapshot{Err: errors.New("disk on fire")})
	if err == nil || len(ids) != 1 || ids[0] != buildinfo.ExtensionID {
		t.Fatalf("an unreadable setting must leave the pinned ID alone and say so: %v %v", ids, err)
	}
}

func TestAllowedExtensionsValidate(t *testing.T) {
	s, err := config.Lookup(SettingAllowedExtensions)
	if err != nil {
		t.Fatal(err)
	}
	if s.Check(`["`+strings.Repeat("a", 32)+`"]`) != nil || s.Check(`["nope"]`) == nil || s.Check(`x`) == nil {
		t.Fatal("extension ID list validation is wrong")
	}
}

func TestParseList(t *testing.T) {
	m, err := ParseList(" https://A.example/ , http://b.example:80, https://c.example:8443, https://a.example")
	if err != nil || strings.Join(m, " ") != "https://a.example http://b.example https://c.example:8443" {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"a.example", "https://a.example/path", "ftp://a.example", "https://"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
