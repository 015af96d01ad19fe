package host

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
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

// A comment is read by whoever has the repository and nothing else, so it names no
// document that lives beside it (the specification seeds, the design map, a
// machine's own folders): what such a document says, the comment says itself.
func TestCommentsPointInsideTheRepository(t *testing.T) {
	outside := regexp.MustCompile(`(?i)\bseeds?\s+\d+|\bseeds/|\bDESIGN\.md\b|/work/|\bshared/`)
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			for _, c := range g.List {
				if m := outside.FindString(c.Text); m != "" {
					t.Errorf("%s: a comment points outside the repository (%q): %s", fset.Position(c.Pos()), m, c.Text)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
