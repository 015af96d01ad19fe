package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/gateway/store"
)

// TestSetHonoursDB: user set and team set act on the database --db names, not
// on the default one (which they must neither change nor create).
func TestSetHonoursDB(t *testing.T) {
	e := newEnv(t, "sqlite")
	other := filepath.Join(t.TempDir(), "other.db")
	e.must("", "user", "add", "carol", "--db", other)
	e.must("", "user", "set", "carol", "--daily-tokens", "77", "--team", "ops", "--db", other)
	e.must("", "team", "set", "ops", "--rpm", "9", "--db", other)

	var users []store.User
	json.Unmarshal([]byte(e.must("", "user", "list", "--json", "--db", other)), &users)
	if len(users) != 1 || users[0].DailyTokens != 77 || users[0].Team != "ops" {
		t.Fatalf("user set --db: %+v", users)
	}
	var teams []store.Team
	json.Unmarshal([]byte(e.must("", "team", "list", "--json", "--db", other)), &teams)
	if len(teams) != 1 || teams[0].RPM != 9 {
		t.Fatalf("team set --db: %+v", teams)
	}
	if _, err := os.Stat(e.dsn); !os.IsNotExist(err) {
		t.Fatalf("the default database %s was touched: %v", e.dsn, err)
	}
	// Against the default database, which has no carol, user set fails.
	if _, errs, code := e.ferry("", "user", "set", "carol", "--rpm", "1"); code == 0 || !strings.Contains(errs, "carol") {
		t.Fatalf("user set on the default database: exit %d %s", code, errs)
	}
}
