package browser

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Every browser method the host asks for is in BROWSER.md's method table, and
// every method documented there is one the host asks for (the worker's side is
// held to the same table by extension/test/browser-doc.test.js).
func TestBrowserMDMethodTable(t *testing.T) {
	doc, err := os.ReadFile("../../protocol/BROWSER.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)[strings.Index(string(doc), "\n## Methods\n"):]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(browser\\.[a-z.]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
	}
	if len(documented) < 16 {
		t.Fatalf("only %d methods in BROWSER.md's table", len(documented))
	}
	// The method names the host's code sends: string literals, in every package.
	literal := regexp.MustCompile(`"(browser\.(?:tabs|page|script)\.[a-z_]+)"`)
	asked := map[string]bool{}
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			asked[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing, unused []string
	for m := range asked {
		if !documented[m] {
			missing = append(missing, m)
		}
	}
	for m := range documented {
		if !asked[m] {
			unused = append(unused, m)
		}
	}
	sort.Strings(missing)
	sort.Strings(unused)
	if len(missing) > 0 || len(unused) > 0 {
		t.Fatalf("the host asks for %v, which BROWSER.md does not document; BROWSER.md documents %v, which the host never asks for", missing, unused)
	}
}
