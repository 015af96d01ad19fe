package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

func TestCallerOrigin(t *testing.T) {
	origin := "chrome-extension://" + buildinfo.ExtensionID + "/"
	for _, args := range [][]string{
		{origin},                         // Linux and macOS
		{origin, "--parent-window=1234"}, // Windows
		{"--parent-window=0", origin},    // order is not promised
	} {
		if got, ok := CallerOrigin(args); !ok || got != origin {
			t.Errorf("CallerOrigin(%q) = %q, %v", args, got, ok)
		}
	}
	if _, ok := CallerOrigin([]string{"version"}); ok {
		t.Error("a command line was taken for a browser start")
	}
}

func TestCheckOrigin(t *testing.T) {
	other := strings.Repeat("b", 32)
	allowed := []string{buildinfo.ExtensionID, other}
	for _, ok := range []string{
		"chrome-extension://" + buildinfo.ExtensionID + "/",
		"chrome-extension://" + other + "/",
		"chrome-extension://" + other,
	} {
		if _, err := CheckOrigin(ok, allowed); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	stranger := strings.Repeat("c", 32)
	_, err := CheckOrigin("chrome-extension://"+stranger+"/", allowed)
	if err == nil || !strings.Contains(err.Error(), "ferry install --extension-id "+stranger) {
		t.Errorf("unknown extension: %v; want a refusal naming the fix", err)
	}
	for _, bad := range []string{"chrome-extension://short/", "chrome-extension://" + strings.Repeat("z", 32) + "/", "https://evil.example/", "chrome-extension://"} {
		if _, err := CheckOrigin(bad, allowed); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestMethodsRefuseDuplicates(t *testing.T) {
	m := NewMethods()
	fn := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	if err := m.Register("a.b", fn); err != nil {
		t.Fatal(err)
	}
	if err := m.Register("a.b", fn); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("duplicate registration: %v", err)
	}
	if err := m.Register("", fn); err == nil {
		t.Fatal("empty name accepted")
	}
}

func TestAllowedExtensionsFromSettings(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h, _ := New(db, dir, zerolog.Nop())
	ctx := context.Background()
	extra := strings.Repeat("d", 32)
	db.SetSetting(ctx, SettingAllowedExtensions, `["`+extra+`"]`)
	ids, err := h.AllowedExtensions(ctx)
	if err != nil || len(ids) != 2 || ids[0] != buildinfo.ExtensionID || ids[1] != extra {
		t.Fatalf("allowed = %v, %v", ids, err)
	}
	db.SetSetting(ctx, SettingAllowedExtensions, `not json`)
	ids, err = h.AllowedExtensions(ctx)
	if err == nil || len(ids) != 1 {
		t.Fatalf("a corrupt setting must fall back to the pinned ID alone and say so: %v %v", ids, err)
	}
}

func TestSettingsValidate(t *testing.T) {
	s, err := config.Lookup(SettingAllowedExtensions)
	if err != nil {
		t.Fatal(err)
	}
	if s.Check(`["`+strings.Repeat("a", 32)+`"]`) != nil || s.Check(`["nope"]`) == nil || s.Check(`x`) == nil {
		t.Fatal("extension ID list validation is wrong")
	}
	if _, err := config.Lookup("no.such"); err == nil || !strings.Contains(err.Error(), "log.level") {
		t.Fatalf("unknown key: %v; want the list of known keys", err)
	}
}

func TestLogFileRotatesAtCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "ferry.log")
	lf, err := OpenLogFile(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("x", 39) + "\n")
	for i := 0; i < 10; i++ {
		lf.Write(line)
	}
	lf.Close()
	cur, _ := os.Stat(path)
	old, err := os.Stat(path + ".1")
	if err != nil {
		t.Fatal("no rotated file")
	}
	if cur.Size() > 100 || old.Size() > 100 {
		t.Fatalf("sizes %d and %d exceed the 100-byte cap", cur.Size(), old.Size())
	}
	if cur.Mode().Perm() != 0o600 {
		t.Fatalf("log mode %v, want 0600", cur.Mode().Perm())
	}
}
