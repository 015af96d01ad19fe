package agent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// PROTOCOL.md's table of run events is the code's: the same event types, and every
// field an event may carry named in it.
func TestProtocolMDRunEvents(t *testing.T) {
	doc, err := os.ReadFile("../../protocol/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Run events\n")
	if !ok {
		t.Fatal("PROTOCOL.md has no Run events section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	backticked := regexp.MustCompile("`([a-z_]+)")
	var types []string
	fields := map[string]bool{}
	for _, row := range regexp.MustCompile("(?m)^\\| (`[a-z_]+`.*?) \\| (.*) \\|$").FindAllStringSubmatch(section, -1) {
		for _, m := range backticked.FindAllStringSubmatch(row[1], -1) {
			types = append(types, m[1])
		}
		for _, m := range backticked.FindAllStringSubmatch(row[2], -1) {
			fields[m[1]] = true
		}
	}
	// The event types: the Event… constants of events.go.
	f, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var code []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for i, name := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(name.Name, "Event") && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					code = append(code, v)
				}
			}
		}
		return true
	})
	sort.Strings(types)
	sort.Strings(code)
	if strings.Join(types, " ") != strings.Join(code, " ") {
		t.Errorf("PROTOCOL.md's run events\n  %v\nevents.go\n  %v", types, code)
	}
	// The fields every event has are said in the text above the table.
	for _, common := range []string{"type", "run_id", "conversation_id", "seq"} {
		fields[common] = strings.Contains(section, "`"+common+"`")
	}
	ev := reflect.TypeFor[Event]()
	for i := range ev.NumField() {
		name, _, _ := strings.Cut(ev.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && !fields[name] {
			t.Errorf("an event may carry %s, which PROTOCOL.md's Run events do not name", name)
		}
	}
}
