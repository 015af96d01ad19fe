package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Dialect says how a tool's parameters were written.
type Dialect string

const (
	DialectNone      Dialect = "none"      // no parameters
	DialectSchema    Dialect = "schema"    // a raw JSON Schema (draft 2020-12 or draft-07)
	DialectShorthand Dialect = "shorthand" // {name: {type, required, description, enum, default}}
	DialectList      Dialect = "list"      // [{name, label, type, minLength, …, optional}]
)

const (
	draft2020URI = "https://json-schema.org/draft/2020-12/schema"
	draft07URI   = "http://json-schema.org/draft-07/schema#"
)

// Schema is a tool's parameters, normalised and compiled once at registration.
type Schema struct {
	Dialect Dialect
	// JSON is the one JSON Schema object sent to the model and listed by tools.list.
	JSON json.RawMessage

	compiled *jsonschema.Schema
	doc      any // JSON decoded, for redaction and error messages

	// compile, when set, compiles on first use: the host's own tools, whose schemas
	// the tests compile, wait until they are called, so a browser starting the host
	// gets its first answer without compiling thirty schemas first.
	compile func() (*jsonschema.Schema, error)
	once    sync.Once
}

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

// marshalNoEscape is json.Marshal without HTML escaping: a pattern such as "<\d+>"
// must reach the model as written.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// NormalizeParameters reads parameters in any dialect and returns the compiled
// schema, or the reason it is refused.
func NormalizeParameters(raw json.RawMessage) (*Schema, error) {
	return normalizeParameters(raw, false)
}

// NormalizeParametersWith reads parameters in any dialect, lets extend add to the
// normalised object schema (decoded, numbers kept exact), and compiles the result
// once: for a caller that adds parameters of its own (a per-record action's record).
func NormalizeParametersWith(raw json.RawMessage, extend func(root map[string]any) error) (*Schema, error) {
	s, err := normalizeParameters(raw, true)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(s.JSON))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	if err := extend(root); err != nil {
		return nil, err
	}
	out, err := marshalNoEscape(root)
	if err != nil {
		return nil, err
	}
	c, err := compileSchema(out, false)
	if err != nil {
		return nil, err
	}
	c.Dialect = s.Dialect
	return c, nil
}

func normalizeParameters(raw json.RawMessage, lazy bool) (*Schema, error) {
	trimmed := bytes.TrimSpace(raw)
	var (
		out     []byte
		dialect Dialect
		err     error
	)
	switch {
	case len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) || bytes.Equal(trimmed, []byte("{}")) || bytes.Equal(trimmed, []byte("[]")):
		dialect = DialectNone
		out = []byte(`{"type":"object","properties":{},"additionalProperties":false}`)
	case trimmed[0] == '[':
		dialect = DialectList
		out, err = fromList(trimmed)
	case trimmed[0] == '{':
		if isRawSchema(trimmed) {
			dialect = DialectSchema
			out, err = fromRaw(trimmed)
		} else {
			dialect = DialectShorthand
			out, err = fromShorthand(trimmed)
		}
	default:
		return nil, fmt.Errorf("parameters must be a JSON object (a JSON Schema or the shorthand) or an array (the list form), not %.20s", trimmed)
	}
	if err != nil {
		return nil, fmt.Errorf("parameters (%s form): %w", dialect, err)
	}
	s, err := compileSchema(out, lazy)
	if err != nil {
		return nil, fmt.Errorf("parameters (%s form): %w", dialect, err)
	}
	s.Dialect = dialect
	return s, nil
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

// compileSchema compiles the normalised schema once. Patterns are compiled from
// their Go translation (see ecmaregex.go); the model still sees the original.
func compileSchema(out []byte, lazy bool) (s *Schema, err error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	goDoc, err := translatePatterns(doc, "")
	if err != nil {
		return nil, err
	}
	goJSON, err := json.Marshal(goDoc)
	if err != nil {
		return nil, err
	}
	s = &Schema{JSON: out, doc: doc}
	if lazy {
		s.compile = func() (*jsonschema.Schema, error) { return compileGo(goJSON) }
		return s, nil
	}
	if s.compiled, err = compileGo(goJSON); err != nil {
		return nil, err
	}
	return s, nil
}

func compileGo(goJSON []byte) (compiled *jsonschema.Schema, err error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	// Nothing outside the schema is fetched: a page must not make the host load URLs.
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("$ref to %s: schemas may only refer inside themselves", u)
	}
	const url = "ferry:tool-parameters.json"
	if err := c.AddResource(url, bytes.NewReader(goJSON)); err != nil {
		return nil, fmt.Errorf("does not compile: %v", err)
	}
	defer func() {
		// The library panics on some malformed input instead of returning an error;
		// a page's bad schema must be a refusal, never a crash of the host.
		if p := recover(); p != nil {
			compiled, err = nil, fmt.Errorf("does not compile: %v", p)
		}
	}()
	compiled, err = c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("does not compile: %v", strings.TrimPrefix(err.Error(), "jsonschema "+url+" compilation failed: "))
	}
	return compiled, nil
}

// schemaValued are the keywords whose value is data, not a schema: nothing in them
// is a pattern to translate.
var schemaValued = map[string]bool{"enum": true, "const": true, "default": true, "examples": true}

// translatePatterns returns a copy of a schema with every "pattern" and every
// patternProperties key translated from ECMAScript to Go.
func translatePatterns(v any, path string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			switch {
			case schemaValued[k]:
				out[k] = val
			case k == "pattern":
				src, ok := val.(string)
				if !ok {
					return nil, fmt.Errorf("%s/pattern must be a string", path)
				}
				goPat, err := TranslateECMARegex(src)
				if err != nil {
					return nil, fmt.Errorf("%s/pattern: %v", path, err)
				}
				out[k] = goPat
			case k == "patternProperties":
				pp, ok := val.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s/patternProperties must be an object", path)
				}
				tpp := make(map[string]any, len(pp))
				for src, sub := range pp {
					goPat, err := TranslateECMARegex(src)
					if err != nil {
						return nil, fmt.Errorf("%s/patternProperties: %v", path, err)
					}
					t, err := translatePatterns(sub, path+"/patternProperties/"+escapePointer(src))
					if err != nil {
						return nil, err
					}
					tpp[goPat] = t
				}
				out[k] = tpp
			case k == "properties" || k == "$defs" || k == "definitions" || k == "dependentSchemas":
				// Maps of name → schema: a property may itself be called "pattern".
				m, ok := val.(map[string]any)
				if !ok {
					out[k] = val
					continue
				}
				tm := make(map[string]any, len(m))
				for name, sub := range m {
					t, err := translatePatterns(sub, path+"/"+k+"/"+escapePointer(name))
					if err != nil {
						return nil, err
					}
					tm[name] = t
				}
				out[k] = tm
			default:
				t, err := translatePatterns(val, path+"/"+escapePointer(k))
				if err != nil {
					return nil, err
				}
				out[k] = t
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			t, err := translatePatterns(val, path+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = t
		}
		return out, nil
	default:
		return v, nil
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Violation is one way arguments break a schema, located by JSON pointer.
type Violation struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

func (v Violation) String() string {
	p := v.Pointer
	if p == "" {
		p = "(arguments)"
	}
	return p + ": " + v.Message
}

// Validate checks decoded arguments (numbers as json.Number) and lists every
// violation, most specific first, each with the pointer of the value at fault.
func (s *Schema) Validate(args any) []Violation {
	if s.compile != nil {
		s.once.Do(func() {
			var err error
			if s.compiled, err = s.compile(); err != nil {
				panic(fmt.Sprintf("a builtin tool's schema does not compile: %v", err))
			}
		})
	}
	err := s.compiled.Validate(args)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []Violation{{Message: err.Error()}}
	}
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, s.explain(e)...)
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// explain turns one leaf error into violations whose pointer names the value at
// fault: a missing property's pointer is where it should have been.
func (s *Schema) explain(e *jsonschema.ValidationError) []Violation {
	loc := e.InstanceLocation
	kw := e.KeywordLocation
	switch {
	case strings.HasSuffix(kw, "/required") && strings.HasPrefix(e.Message, "missing properties: "):
		var out []Violation
		for _, name := range splitQuoted(strings.TrimPrefix(e.Message, "missing properties: ")) {
			out = append(out, Violation{loc + "/" + escapePointer(name), "required property is missing"})
		}
		return out
	case strings.HasSuffix(kw, "/additionalProperties") && strings.HasPrefix(e.Message, "additionalProperties "):
		var out []Violation
		names := strings.TrimSuffix(strings.TrimPrefix(e.Message, "additionalProperties "), " not allowed")
		for _, name := range splitQuoted(names) {
			out = append(out, Violation{loc + "/" + escapePointer(name), "property is not allowed (no such parameter)"})
		}
		return out
	case strings.Contains(kw, "/dependentRequired/") || strings.Contains(kw, "/dependencies/"):
		if name, _, ok := strings.Cut(strings.TrimPrefix(e.Message, "property "), " is required"); ok {
			return []Violation{{loc + "/" + escapePointer(splitQuoted(name)[0]), strings.TrimPrefix(e.Message[len("property ")+len(name):], " ")}}
		}
	case strings.HasSuffix(kw, "/pattern"):
		// Report the page's own pattern, not the Go translation validation used.
		if src, ok := pointerGet(s.doc, kw); ok {
			return []Violation{{loc, fmt.Sprintf("does not match pattern %v", src)}}
		}
	}
	return []Violation{{loc, e.Message}}
}

// splitQuoted reads the library's list form 'a', 'b'.
func splitQuoted(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ", ") {
		part = strings.TrimSpace(part)
		if len(part) >= 2 && part[0] == '\'' && part[len(part)-1] == '\'' {
			part = strings.ReplaceAll(part[1:len(part)-1], `\'`, `'`)
		}
		out = append(out, part)
	}
	return out
}

func pointerGet(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
