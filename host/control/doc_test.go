package control

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// PROTOCOL.md's table of the socket's methods is socketMethods: the same names.
func TestProtocolMDSocketMethods(t *testing.T) {
	doc, err := os.ReadFile("../../protocol/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Control socket")
	if !ok {
		t.Fatal("PROTOCOL.md has no Control socket section")
	}
	_, section, _ = strings.Cut(section, "| method | on the socket |")
	section, _, _ = strings.Cut(section, "\n\n")
	var documented []string
	for _, row := range regexp.MustCompile("(?m)^\\| (.*?) \\|").FindAllStringSubmatch(section, -1) {
		for _, m := range regexp.MustCompile("`([a-z_.]+)`").FindAllStringSubmatch(row[1], -1) {
			documented = append(documented, m[1])
		}
	}
	var code []string
	for m := range socketMethods {
		code = append(code, m)
	}
	sort.Strings(documented)
	sort.Strings(code)
	if strings.Join(documented, " ") != strings.Join(code, " ") {
		t.Fatalf("PROTOCOL.md's control socket methods\n  %v\nsocketMethods\n  %v", documented, code)
	}
	if !strings.Contains(string(doc), "| `"+HelloMethod+"` |") {
		t.Errorf("PROTOCOL.md does not document %s", HelloMethod)
	}
}
