package toolbox

import (
	"testing"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// The host's own tools compile their schemas on first use (a browser waits for the
// host's first answer); this is where a builtin with a bad schema is caught.
func TestBuiltinSchemasCompile(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, err := Open(db, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	all := tb.Registry.All(0)
	if len(all) < 20 {
		t.Fatalf("only %d builtin tools registered", len(all))
	}
	for _, l := range all {
		if _, err := tools.NormalizeParameters(l.Parameters); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
	}
}
