package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// A tool's parameters come in three dialects: a JSON Schema, the shorthand object
// ({name: {type, required, …}}) and the list ([{name, label, type, …}]). Each is
// turned here into the one JSON Schema the model is shown and the host validates
// with, members in the order their author wrote them.

// kv keeps members in the order they were written: a model reads the properties in
// the order the page author chose.
type kv struct {
	Key   string
	Value any
}
type ordered []kv

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		v, err := marshalNoEscape(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// isRawSchema tells a JSON Schema from the shorthand: a schema declares $schema, or
// has a "type" that is a string or an array. In the shorthand every member is a
// parameter definition, so "type" there is an object.
func isRawSchema(raw []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil {
		return true // let the raw path report the syntax error
	}
	if _, ok := probe["$schema"]; ok {
		return true
	}
	if t, ok := probe["type"]; ok {
		t = bytes.TrimSpace(t)
		return len(t) > 0 && (t[0] == '"' || t[0] == '[')
	}
	return false
}

func fromRaw(raw []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if v, ok := doc["$schema"]; ok {
		if v != draft2020URI && v != draft07URI && v != strings.TrimSuffix(draft07URI, "#") {
			return nil, fmt.Errorf("$schema %v is not supported; use %s or %s", v, draft2020URI, draft07URI)
		}
	}
	if doc["type"] != "object" {
		return nil, fmt.Errorf(`the root of a tool's schema must have "type": "object" (arguments are always an object)`)
	}
	// Passed through as written, only compacted: the page author's key order stays.
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var jsonTypes = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "object": true, "array": true, "null": true}

// shorthandKeys are the members a shorthand parameter may carry: the dialect's five, and
// the common schema keywords a page author reaches for (passed through as written).
var shorthandKeys = map[string]bool{
	"type": true, "required": true, "description": true, "enum": true, "default": true,
	"minimum": true, "maximum": true, "minLength": true, "maxLength": true, "pattern": true,
	"items": true, "format": true, "secret": true, "x-secret": true,
}

func fromShorthand(raw []byte) ([]byte, error) {
	members, err := orderedMembers(raw)
	if err != nil {
		return nil, err
	}
	props := ordered{}
	var required []string
	for _, m := range members {
		var def map[string]json.RawMessage
		if err := json.Unmarshal(m.raw, &def); err != nil || def == nil {
			return nil, fmt.Errorf(`parameter %q must be an object like {"type": "string"}; for a raw JSON Schema, give the root "type": "object"`, m.key)
		}
		keys, _ := orderedMembers(m.raw)
		prop := ordered{}
		for _, k := range keys {
			if !shorthandKeys[k.key] {
				return nil, fmt.Errorf("parameter %q: unknown member %q (accepted: %s); for a raw JSON Schema, give the root \"type\": \"object\"", m.key, k.key, keyList(shorthandKeys))
			}
			switch k.key {
			case "required":
				var req bool
				if err := json.Unmarshal(k.raw, &req); err != nil {
					return nil, fmt.Errorf("parameter %q: required must be true or false", m.key)
				}
				if req {
					required = append(required, m.key)
				}
				continue
			case "type":
				var t string
				if err := json.Unmarshal(k.raw, &t); err != nil || !jsonTypes[t] {
					return nil, fmt.Errorf("parameter %q: type must be one of string, number, integer, boolean, object, array, null", m.key)
				}
			case "secret":
				var sec bool
				if err := json.Unmarshal(k.raw, &sec); err != nil {
					return nil, fmt.Errorf("parameter %q: secret must be true or false", m.key)
				}
				if sec {
					prop = append(prop, kv{"x-secret", true})
				}
				continue
			}
			prop = append(prop, kv{k.key, json.RawMessage(k.raw)})
		}
		props = append(props, kv{m.key, prop})
	}
	return objectSchema(props, required)
}

func objectSchema(props ordered, required []string) ([]byte, error) {
	root := ordered{{"type", "object"}, {"properties", props}}
	if len(required) > 0 {
		root = append(root, kv{"required", required})
	}
	root = append(root, kv{"additionalProperties", false})
	return root.MarshalJSON()
}

// listKeys are the members of one entry of the list dialect.
var listKeys = map[string]bool{
	"name": true, "label": true, "description": true, "type": true, "minLength": true, "maxLength": true,
	"pattern": true, "enum": true, "minimum": true, "maximum": true, "optional": true, "default": true,
	"secret": true, "x-secret": true, "format": true, "items": true,
}

// listOrder is the order the list form's keywords take in the schema, whatever order
// the page wrote them in.
var listOrder = []string{"type", "description", "enum", "format", "minLength", "maxLength", "pattern", "minimum", "maximum", "items", "default", "x-secret"}

func fromList(raw []byte) ([]byte, error) {
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("each entry must be an object like {\"name\": \"text\", \"label\": \"…\"}: %v", err)
	}
	props := ordered{}
	var required []string
	seen := map[string]bool{}
	for i, e := range entries {
		var name string
		if err := json.Unmarshal(e["name"], &name); err != nil || name == "" {
			return nil, fmt.Errorf("entry %d needs a \"name\" string", i)
		}
		if seen[name] {
			return nil, fmt.Errorf("parameter %q is listed twice", name)
		}
		seen[name] = true
		for k := range e {
			if !listKeys[k] {
				return nil, fmt.Errorf("parameter %q: unknown member %q (accepted: %s)", name, k, keyList(listKeys))
			}
		}
		vals := map[string]json.RawMessage{}
		for k, v := range e {
			vals[k] = v
		}
		delete(vals, "name")
		// A parameter with no type is text: the list form describes form fields.
		if _, ok := vals["type"]; !ok {
			vals["type"] = json.RawMessage(`"string"`)
		}
		var t string
		if err := json.Unmarshal(vals["type"], &t); err != nil || !jsonTypes[t] {
			return nil, fmt.Errorf("parameter %q: type must be one of string, number, integer, boolean, object, array, null", name)
		}
		if label, ok := vals["label"]; ok {
			if _, hasDesc := vals["description"]; !hasDesc {
				vals["description"] = label
			}
			delete(vals, "label")
		}
		optional := false
		if o, ok := vals["optional"]; ok {
			if err := json.Unmarshal(o, &optional); err != nil {
				return nil, fmt.Errorf("parameter %q: optional must be true or false", name)
			}
			delete(vals, "optional")
		}
		if s, ok := vals["secret"]; ok {
			var sec bool
			if err := json.Unmarshal(s, &sec); err != nil {
				return nil, fmt.Errorf("parameter %q: secret must be true or false", name)
			}
			delete(vals, "secret")
			if sec {
				vals["x-secret"] = json.RawMessage("true")
			}
		}
		prop := ordered{}
		for _, k := range listOrder {
			if v, ok := vals[k]; ok {
				prop = append(prop, kv{k, v})
			}
		}
		props = append(props, kv{name, prop})
		if !optional {
			required = append(required, name)
		}
	}
	return objectSchema(props, required)
}

type member struct {
	key string
	raw json.RawMessage
}

// orderedMembers lists an object's members in document order, refusing duplicates.
func orderedMembers(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		if seen[key] {
			return nil, fmt.Errorf("member %q appears twice", key)
		}
		seen[key] = true
		out = append(out, member{key, v})
	}
	return out, nil
}

func keyList(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
