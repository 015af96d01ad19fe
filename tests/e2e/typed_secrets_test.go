package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The finding: the audit log and ferry.log kept the full text of browser_type, typed
// passwords too. Text typed into a password field, or a field whose name or
// autocomplete says it holds a secret, now reaches neither, nor any file of the
// database; what is typed into an ordinary field is still audited.
func TestTypedSecretsLeaveNoTrace(t *testing.T) {
	s := start(t, 90*time.Second)
	srv := fixtureServer(t)
	_, tab := s.openTab(srv.URL + "/login.html")
	mark := func(what string) string {
		b := make([]byte, 8)
		rand.Read(b)
		return what + "-" + hex.EncodeToString(b)
	}
	typed := map[string]string{"#user": mark("alice"), "#pass": mark("hunter2"), "#key": mark("sk-live"), "#code": mark("otp")}
	results := map[string]map[string]any{}
	for sel, text := range typed {
		var r map[string]any
		s.must("tools.call", map[string]any{"name": "browser_type", "tab_id": tab,
			"arguments": map[string]any{"tab_id": tab, "selector": sel, "text": text}}, &r)
		if r["success"] != true {
			t.Fatalf("typing into %s: %v", sel, r)
		}
		results[sel] = r["result"].(map[string]any)
	}
	// A call that fails before anything is typed: nobody can tell what the field was.
	lost := mark("maybe-a-password")
	var r map[string]any
	s.must("tools.call", map[string]any{"name": "browser_type", "tab_id": tab,
		"arguments": map[string]any{"tab_id": tab, "selector": "#nowhere", "text": lost}}, &r)
	if r["success"] != false {
		t.Fatalf("typing into nothing: %v", r)
	}

	for sel, res := range results {
		secret := sel != "#user"
		if res["sensitive"] != secret {
			t.Errorf("%s: sensitive %v, want %v", sel, res["sensitive"], secret)
		}
		if secret && strings.Contains(res["value"].(string), typed[sel]) {
			t.Errorf("%s: the value comes back unmasked: %v", sel, res["value"])
		}
	}

	var audit struct {
		Entries []struct {
			Arguments json.RawMessage `json:"arguments"`
			Result    string          `json:"result"`
			Code      string          `json:"code"`
		} `json:"entries"`
	}
	s.must("audit.query", map[string]any{"tool": "browser_type"}, &audit)
	if len(audit.Entries) != 5 {
		t.Fatalf("%d audit rows, want 5", len(audit.Entries))
	}
	sawUser := false
	for _, e := range audit.Entries {
		row := string(e.Arguments) + e.Result
		if strings.Contains(row, typed["#user"]) {
			sawUser = true
		}
		for _, secret := range []string{typed["#pass"], typed["#key"], typed["#code"], lost} {
			if strings.Contains(row, secret) {
				t.Errorf("audit row keeps %s: %s", secret[:strings.IndexByte(secret, '-')], row)
			}
		}
	}
	if !sawUser {
		t.Errorf("the ordinary field's text is not audited")
	}
	info := s.info()
	for _, secret := range []string{typed["#pass"], typed["#key"], typed["#code"], lost} {
		for _, p := range []string{info.LogPath, info.DatabasePath, info.DatabasePath + "-wal"} {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the typed %s", filepath.Base(p), secret[:strings.IndexByte(secret, '-')])
			}
		}
	}
}
