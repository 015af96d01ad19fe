package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
