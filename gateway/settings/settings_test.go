package settings

import (
	"os"
	"strings"
	"testing"
)

// TestREADMETable holds the README's table of gateway settings to this one.
func TestREADMETable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Team gateway")
	if !ok {
		t.Fatal("README has no Team gateway section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	rows := map[string]string{}
	for _, l := range strings.Split(sec, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) == 5 && strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = strings.Trim(strings.TrimSpace(cells[2]), "`")
		}
	}
	for _, s := range All {
		if d, ok := rows[s.Key]; !ok || d != s.Default {
			t.Errorf("README: %s has default %q, the code %q", s.Key, d, s.Default)
		}
		delete(rows, s.Key)
	}
	for k := range rows {
		t.Errorf("README lists %s, which is no setting", k)
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("unknown key accepted")
	}
	if v, err := All[0].Check("TRUE"); err != nil || v != "true" {
		t.Errorf("bool check %q %v", v, err)
	}
	if _, err := All[1].Check("-1"); err == nil {
		t.Error("negative retention accepted")
	}
	if (Values{MaxBodyMB: "garbage"}).Int(MaxBodyMB) != 32 {
		t.Error("a bad stored value must read as the default")
	}
}
