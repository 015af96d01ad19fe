package tools

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// What every major model vendor and MCP client takes as a tool's input schema. The
// rules are the intersection of what they document or enforce:
//
//   - MCP (the specification's Tool.inputSchema, and the MCP Inspector's check of
//     it): a JSON Schema object whose root is "type": "object", with properties.
//   - Anthropic's tool use: input_schema is an object schema; oneOf, allOf and
//     anyOf are refused at its root.
//   - OpenAI's function calling: parameters is an object schema; a root anyOf,
//     oneOf, allOf, enum or not is refused. Its strict mode further takes no
//     boolean subschemas, no not, no if/then/else, no dependentRequired or
//     dependentSchemas, no patternProperties, only local $refs, a type on every
//     subschema, and additionalProperties false on every object. (Strict mode's
//     rule that every property be required is not applied: Ferry does not ask for
//     strict mode, and optional parameters are the point of most tools.)
//
// A page's own schema is validated by the host exactly as declared; what Portable
// leaves out of the copy a client is shown, the host still checks.

// rootRefused are the keywords no vendor takes at a tool schema's root.
var rootRefused = []string{"anyOf", "oneOf", "allOf", "not", "if", "then", "else", "enum", "const", "dependentSchemas", "dependentRequired"}

// strictRefused are the keywords OpenAI's strict mode takes nowhere.
var strictRefused = []string{"not", "if", "then", "else", "dependentSchemas", "dependentRequired", "patternProperties"}

// CheckPortable lists every way schema breaks the rules above, each with its JSON
// pointer; nil when it keeps them all.
func CheckPortable(schema []byte) []string {
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	m, ok := root.(map[string]any)
	if !ok {
		return []string{`the root is not an object schema`}
	}
	var out []string
	if m["type"] != "object" {
		out = append(out, `/type: the root must be "type": "object"`)
	}
	if p, ok := m["properties"].(map[string]any); !ok {
		out = append(out, `/properties: the root must have properties (an object, {} for none)`)
	} else if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if s, _ := r.(string); p[s] == nil {
				out = append(out, fmt.Sprintf("/required: %v is not among the properties", r))
			}
		}
	}
	for _, k := range rootRefused {
		if _, ok := m[k]; ok {
			out = append(out, fmt.Sprintf("/%s: not taken at the root of a tool schema", k))
		}
	}
	walk(m, "", &out)
	sort.Strings(out)
	return out
}

// walk checks one subschema and those below it.
func walk(s map[string]any, ptr string, out *[]string) {
	for _, k := range strictRefused {
		if _, ok := s[k]; ok && ptr != "" {
			*out = append(*out, fmt.Sprintf("%s/%s: not taken by every vendor", ptr, k))
		}
	}
	if ref, ok := s["$ref"].(string); ok && !strings.HasPrefix(ref, "#") {
		*out = append(*out, fmt.Sprintf("%s/$ref: only local references are taken", ptr))
	}
	_, typed := s["type"]
	_, hasRef := s["$ref"]
	_, hasAny := s["anyOf"]
	_, hasEnum := s["enum"]
	_, hasConst := s["const"]
	if !typed && !hasRef && !hasAny && !hasEnum && !hasConst {
		*out = append(*out, fmt.Sprintf("%s: a subschema needs a type", orRoot(ptr)))
	}
	if props, ok := s["properties"].(map[string]any); ok {
		if ap, has := s["additionalProperties"]; !has || ap != false {
			*out = append(*out, fmt.Sprintf("%s/additionalProperties: an object with properties should say false (strict mode)", ptr))
		}
		for name, v := range props {
			sub(v, ptr+"/properties/"+escapePointer(name), out)
		}
	}
	for _, k := range []string{"items", "contains", "propertyNames"} {
		if v, ok := s[k]; ok {
			sub(v, ptr+"/"+k, out)
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		if list, ok := s[k].([]any); ok {
			for i, v := range list {
				sub(v, fmt.Sprintf("%s/%s/%d", ptr, k, i), out)
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := s[k].(map[string]any); ok {
			for name, v := range defs {
				sub(v, ptr+"/"+k+"/"+escapePointer(name), out)
			}
		}
	}
}

func sub(v any, ptr string, out *[]string) {
	switch x := v.(type) {
	case bool:
		*out = append(*out, fmt.Sprintf("%s: a bare %v subschema is not taken by every vendor", ptr, x))
	case map[string]any:
		walk(x, ptr, out)
	default:
		*out = append(*out, fmt.Sprintf("%s: not a schema", ptr))
	}
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}

// Portable is schema as a client is shown it: the root made an object schema with
// properties, the combinators and conditionals no vendor takes at the root left
// out, bare boolean subschemas written as the object schemas they mean ({} and
// {"not": {}} are themselves refused by some, so true becomes {} and a false
// property is dropped), objects with properties closed (additionalProperties
// false) unless they say otherwise. What it leaves out, the host still validates.
func Portable(schema []byte) json.RawMessage {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil || root == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	root["type"] = "object"
	if _, ok := root["properties"].(map[string]any); !ok {
		root["properties"] = map[string]any{}
	}
	for _, k := range rootRefused {
		delete(root, k)
	}
	unbool(root)
	b, err := marshalNoEscape(root)
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

func unbool(s map[string]any) {
	if props, ok := s["properties"].(map[string]any); ok {
		// Strict mode takes only closed objects; the host still accepts what the
		// declared schema accepts.
		if _, has := s["additionalProperties"]; !has {
			s["additionalProperties"] = false
		}
		for name, v := range props {
			switch x := v.(type) {
			case bool:
				if x {
					props[name] = map[string]any{}
				} else {
					delete(props, name)
				}
			case map[string]any:
				unbool(x)
			}
		}
	}
	for _, k := range []string{"items", "contains"} {
		switch x := s[k].(type) {
		case bool:
			if x {
				s[k] = map[string]any{}
			} else {
				delete(s, k)
			}
		case map[string]any:
			unbool(x)
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := s[k].([]any); ok {
			for i, v := range list {
				switch x := v.(type) {
				case bool:
					list[i] = map[string]any{}
				case map[string]any:
					unbool(x)
				}
			}
		}
	}
	delete(s, "dependentSchemas")
}
