package tools

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Arguments are validated against the compiled schema; each way they break it is a
// Violation located by JSON pointer, worded for a model to correct its call.

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
