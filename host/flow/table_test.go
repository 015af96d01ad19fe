package flow_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/flow"
	"github.com/ferryhq/ferry/host/toolbox"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// TestBuiltinsTable holds flow.Builtins to the tools the host registers (every
// builtin classified, none that does not exist) and to the README's table.
func TestBuiltinsTable(t *testing.T) {
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, err := toolbox.Open(db, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	registered := map[string]bool{}
	for _, l := range tb.Registry.All(0) {
		if l.Source == tools.SourceBuiltin {
			registered[l.Name] = true
			if _, ok := flow.Builtins[l.Name]; !ok {
				t.Errorf("builtin %s is not in flow.Builtins: say how the origin-set rule sees it", l.Name)
			}
		}
	}
	for name := range flow.Builtins {
		if !registered[name] {
			t.Errorf("flow.Builtins names %s, which the host does not register", name)
		}
	}

	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	inReadme := map[flow.Class][]string{}
	row := regexp.MustCompile("(?m)^\\| (read|way out|page write|destroy|local|ask) \\| (`[a-z_]+`(?:, `[a-z_]+`)*) \\|$")
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		for _, n := range strings.Split(m[2], ", ") {
			inReadme[flow.Class(m[1])] = append(inReadme[flow.Class(m[1])], strings.Trim(n, "`"))
		}
	}
	inCode := map[flow.Class][]string{}
	for name, class := range flow.Builtins {
		inCode[class] = append(inCode[class], name)
	}
	for class, names := range inCode {
		got := append([]string(nil), inReadme[class]...)
		sort.Strings(got)
		sort.Strings(names)
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("README's %q row lists %v; flow.Builtins has %v", class, got, names)
		}
	}
}
