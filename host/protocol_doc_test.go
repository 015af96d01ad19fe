package host

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// hostMethodRows is PROTOCOL.md's table of host methods: method → its "params →
// result" cell.
func hostMethodRows(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile("../protocol/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)[strings.Index(string(doc), "## Host methods"):]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\| (.*) \\|$").FindAllStringSubmatch(section, -1) {
		rows[m[1]] = strings.ReplaceAll(m[2], `\|`, "|")
	}
	return rows
}

var memberName = regexp.MustCompile(`^\s*([a-z_]+)`)

// topFields lists the member names of the first {…} in s, top level only:
// "{tab_id?, url?, action?: "back"|"forward", timeout_ms=30000}" gives tab_id, url,
// action, timeout_ms.
func topFields(s string) ([]string, bool) {
	start := strings.Index(s, "{")
	if start < 0 {
		return nil, false
	}
	var names []string
	depth, item := 0, strings.Builder{}
	flush := func() {
		if m := memberName.FindStringSubmatch(item.String()); m != nil {
			names = append(names, m[1])
		}
		item.Reset()
	}
	for _, r := range s[start:] {
		switch {
		case r == '{' || r == '[':
			depth++
			if depth == 1 {
				continue
			}
		case r == '}' || r == ']':
			depth--
			if depth == 0 {
				flush()
				sort.Strings(names)
				return names, true
			}
		case r == ',' && depth == 1:
			flush()
			continue
		}
		if depth == 1 {
			item.WriteRune(r)
		}
	}
	return nil, false
}

// jsonFields are the JSON names of a params struct's fields.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// TestProtocolMDParams holds each host method's documented params to the struct
// its handler decodes them into (a field the doc lacks is one a client cannot know
// of; one the struct lacks is refused as an unknown field).
func TestProtocolMDParams(t *testing.T) {
	rows := hostMethodRows(t)
	h := newTestHost(t)
	compared := 0
	for method, cell := range rows {
		typ := h.Methods.Params(method)
		if typ == nil || typ.Kind() != reflect.Struct {
			continue // not registered (TestProtocolMDMethodTable says so) or not an object
		}
		params, _, hasArrow := strings.Cut(cell, "→")
		params = strings.TrimPrefix(strings.TrimSpace(params), "notification ")
		documented, ok := topFields(params)
		if !ok {
			if strings.TrimSpace(params) != "" || !hasArrow {
				continue // "the same filter": said in words
			}
		}
		if got := jsonFields(typ); strings.Join(got, " ") != strings.Join(documented, " ") {
			t.Errorf("PROTOCOL.md: %s takes {%s}; its handler decodes {%s}", method, strings.Join(documented, ", "), strings.Join(got, ", "))
		}
		compared++
	}
	if compared < 25 {
		t.Errorf("only %d methods' params compared", compared)
	}
}

// TestProtocolMDResults holds the documented results of the methods that need no
// params to what they answer: the same top-level fields.
func TestProtocolMDResults(t *testing.T) {
	rows := hostMethodRows(t)
	h := newTestHost(t)
	for _, method := range []string{"host.info", "settings.list", "tools.list", "audit.query", "providers.list",
		"conversations.list", "page.origins", "workspace.usage", "workspace.list"} {
		_, result, _ := strings.Cut(rows[method], "→")
		documented, ok := topFields(result)
		if !ok {
			t.Errorf("PROTOCOL.md gives %s no result object: %q", method, rows[method])
			continue
		}
		res, err := h.Methods.Dispatch(context.Background(), method, nil)
		if err != nil {
			t.Errorf("%s: %v", method, err)
			continue
		}
		b, _ := json.Marshal(res)
		var got map[string]json.RawMessage
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("%s answered %s, not an object", method, b)
			continue
		}
		var keys []string
		for k := range got {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// A field the doc marks optional (name?) may be absent from this answer.
		for _, d := range documented {
			if !slices.Contains(keys, d) && !strings.Contains(result, d+"?") {
				t.Errorf("PROTOCOL.md: %s answers %s; it answered %v", method, d, keys)
			}
		}
		for _, k := range keys {
			if !slices.Contains(documented, k) {
				t.Errorf("%s answers %s, which PROTOCOL.md does not document (%v)", method, k, documented)
			}
		}
	}
}

// TestProtocolMDSocketMethods: PROTOCOL.md's table of the control socket's methods
// names exactly the methods registered as protocol.Outside.
func TestProtocolMDSocketMethods(t *testing.T) {
	doc, err := os.ReadFile("../protocol/PROTOCOL.md")
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
	h := newTestHost(t)
	var code []string
	for _, m := range h.Methods.Names() {
		if h.Methods.IsOutside(m) {
			code = append(code, m)
		}
	}
	sort.Strings(documented)
	if strings.Join(documented, " ") != strings.Join(code, " ") {
		t.Fatalf("PROTOCOL.md's control socket methods\n  %v\nthe methods registered as protocol.Outside\n  %v", documented, code)
	}
}
