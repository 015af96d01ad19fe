package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckPortable(t *testing.T) {
	for _, c := range []struct {
		schema string
		want   []string // substrings of the problems; none: portable
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, nil},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"anyOf":[{"required":["a"]},{"required":["b"]}],"additionalProperties":false}`, []string{"/anyOf: not taken at the root"}},
		{`{"type":"object","properties":{"a":{"type":"string"}},"dependentSchemas":{"a":{"properties":{"b":false}}},"additionalProperties":false}`, []string{"/dependentSchemas"}},
		{`{"properties":{}}`, []string{`/type: the root must be "type": "object"`}},
		{`{"type":"object"}`, []string{"/properties: the root must have properties"}},
		{`{"type":"object","properties":{"a":false},"additionalProperties":false}`, []string{"/properties/a: a bare false subschema"}},
		{`{"type":"object","properties":{"a":{"description":"untyped"}},"additionalProperties":false}`, []string{"/properties/a: a subschema needs a type"}},
		{`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"}}}},"additionalProperties":false}`, []string{"/properties/o/additionalProperties"}},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"],"additionalProperties":false}`, []string{"/required: b is not among the properties"}},
	} {
		got := CheckPortable([]byte(c.schema))
		if len(c.want) == 0 && len(got) > 0 {
			t.Errorf("%s: %v, want portable", c.schema, got)
		}
		for _, w := range c.want {
			if !strings.Contains(strings.Join(got, "\n"), w) {
				t.Errorf("%s: %v, want a problem with %q", c.schema, got, w)
			}
		}
	}
}

// Portable makes what a page declares acceptable to every client, and the result
// passes the check; the host keeps validating the original.
func TestPortable(t *testing.T) {
	in := `{"type":"object","properties":{"ref":{"type":"string"},"selector":{"type":"string"},"x":true,"y":false},
	"anyOf":[{"required":["ref"]},{"required":["selector"]}],"dependentSchemas":{"ref":{"properties":{"selector":false}}},"additionalProperties":false}`
	out := Portable([]byte(in))
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["anyOf"]; ok {
		t.Errorf("anyOf kept: %s", out)
	}
	props := m["properties"].(map[string]any)
	if _, ok := props["y"]; ok {
		t.Errorf("a false property kept: %s", out)
	}
	if p := CheckPortable(out); len(p) != 1 || !strings.Contains(p[0], "/properties/x: a subschema needs a type") {
		t.Errorf("Portable(%s) = %s: %v", in, out, p)
	}
	if s := string(Portable([]byte(`{"properties":{"a":{"type":"string"}}}`))); !strings.Contains(s, `"type":"object"`) {
		t.Errorf("no root type added: %s", s)
	}
}
