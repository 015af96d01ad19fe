package control

import (
	"os"
	"reflect"
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
	// control.hello answers the host's Info, field for field.
	hello := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(HelloMethod) + "` \\| `\\{token(?:, client\\?)?\\}` → `\\{([^}]*)\\}`").FindStringSubmatch(string(doc))
	if hello == nil {
		t.Fatalf("PROTOCOL.md does not document %s {token} → {…}", HelloMethod)
	}
	var documentedInfo, info []string
	for _, f := range strings.Split(hello[1], ",") {
		documentedInfo = append(documentedInfo, strings.TrimSuffix(strings.TrimSpace(f), "?"))
	}
	it := reflect.TypeFor[Info]()
	for i := range it.NumField() {
		name, _, _ := strings.Cut(it.Field(i).Tag.Get("json"), ",")
		info = append(info, name)
	}
	sort.Strings(documentedInfo)
	sort.Strings(info)
	if strings.Join(documentedInfo, " ") != strings.Join(info, " ") {
		t.Errorf("PROTOCOL.md: %s answers %v; Info has %v", HelloMethod, documentedInfo, info)
	}
}
