package host

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ferryhq/ferry/"

// The host's rooms import downwards only: nothing below host/ imports the host
// itself, and the leaf packages stand alone (at most the settings table).
func TestNoImportRunsBackUp(t *testing.T) {
	leaves := map[string]bool{"host/logfile": true, "host/markdown": true, "host/origins": true, "host/config": true}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "." {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := "host/" + filepath.ToSlash(filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rel, ours := strings.CutPrefix(p, module)
			switch {
			case !ours:
			case rel == "host":
				t.Errorf("%s imports the host it sits below", path)
			case leaves[pkg] && strings.HasPrefix(rel, "host/") && rel != "host/config":
				t.Errorf("%s is a leaf package but imports %s", path, rel)
			case strings.HasPrefix(rel, "host/") && strings.HasPrefix(pkg, rel+"/"):
				t.Errorf("%s imports %s, a package above it", path, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
