package flow_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/toolbox"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// TestDeclaredEffects holds every builtin the host registers to declaring its
// place in the rule where it is defined (its Class, with Effects and Provenance
// beside it), and the README's table to those declarations.
func TestDeclaredEffects(t *testing.T) {
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
	inCode := map[tools.Class][]string{}
	for _, l := range tb.Registry.All(0) {
		if l.Source != tools.SourceBuiltin {
			continue
		}
		if l.Class == "" {
			t.Errorf("builtin %s declares no class: say beside it what it does in the data-flow rule (tools.Tool.Class, Effects, Provenance)", l.Name)
			continue
		}
		inCode[l.Class] = append(inCode[l.Class], l.Name)
	}

	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	inReadme := map[tools.Class][]string{}
	row := regexp.MustCompile("(?m)^\\| (read|way out|page write|destroy|local|ask) \\| (`[a-z_]+`(?:, `[a-z_]+`)*) \\|$")
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		for _, n := range strings.Split(m[2], ", ") {
			inReadme[tools.Class(m[1])] = append(inReadme[tools.Class(m[1])], strings.Trim(n, "`"))
		}
	}
	for _, class := range []tools.Class{tools.ClassRead, tools.ClassWayOut, tools.ClassPageWrite, tools.ClassDestroy, tools.ClassLocal, tools.ClassAsk} {
		got, names := append([]string(nil), inReadme[class]...), inCode[class]
		sort.Strings(got)
		sort.Strings(names)
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("README's %q row lists %v; the tools declare %v", class, got, names)
		}
	}

	// No tool is named in the rule: a name switch there would be a second place
	// where a tool says what it does.
	for _, f := range []string{"flow.go", "rule.go", "state.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range tb.Registry.All(0) {
			if strings.Contains(string(b), `"`+l.Name+`"`) {
				t.Errorf("%s names the tool %s", f, l.Name)
			}
		}
	}
}
