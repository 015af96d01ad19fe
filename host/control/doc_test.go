package control

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// PROTOCOL.md documents control.hello's answer field for field (the socket's
// methods are held to the method table in host's TestProtocolMDSocketMethods).
func TestProtocolMDHello(t *testing.T) {
	doc, err := os.ReadFile("../../protocol/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
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
