package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLength bounds a registered name. Names longer than a model accepts are
// mapped (see ModelName); this only stops absurd input.
const MaxNameLength = 256

// The strictest vendor rule for tool names (OpenAI, Anthropic, Gemini all accept it).
const maxModelName = 64

func modelChar(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidModelName reports whether s satisfies ^[a-zA-Z0-9_-]{1,64}$.
func ValidModelName(s string) bool {
	if len(s) == 0 || len(s) > maxModelName {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !modelChar(s[i]) {
			return false
		}
	}
	return true
}

// ModelName maps a registered name to the name the model sees. The mapping is a pure
// function of the name, so every process and every listing agree, and the registry
// keeps the reverse table (Registry.Resolve). Three rules, first match wins:
//
//  1. a name that is already valid and has no "__" is itself ("web_fetch");
//  2. "app:name" whose two halves are valid, have no "__", and fit, is "app__name";
//  3. anything else is its valid characters (":" as "__", others as "_"), cut to 55
//     bytes, then "_" and the first 8 hex digits of its SHA-256 ("a very long
//     name…" → "a_very_long_name…_1f2e3d4c").
//
// Rules 1 and 2 never produce the same output for two names (rule 1 outputs have no
// "__", rule 2 outputs have exactly one); rule 3's hash makes a collision with them
// or with each other a 1-in-4-billion event, and the registry refuses one anyway.
func ModelName(name string) string {
	if ValidModelName(name) && !strings.Contains(name, "__") {
		return name
	}
	if app, local, ok := strings.Cut(name, ":"); ok && len(app)+2+len(local) <= maxModelName &&
		ValidModelName(app) && ValidModelName(local) &&
		!strings.Contains(app, "__") && !strings.Contains(local, "__") &&
		!strings.HasSuffix(app, "_") && !strings.HasPrefix(local, "_") {
		return app + "__" + local
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case modelChar(c):
			b.WriteByte(c)
		case c == ':':
			b.WriteString("__")
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > maxModelName-9 {
		s = s[:maxModelName-9]
	}
	sum := sha256.Sum256([]byte(name))
	return s + "_" + hex.EncodeToString(sum[:4])
}

// checkName refuses names no mapping should have to deal with.
func checkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("a tool needs a name")
	case len(name) > MaxNameLength:
		return fmt.Errorf("tool name is %d bytes; the most accepted is %d", len(name), MaxNameLength)
	case !utf8.ValidString(name):
		return fmt.Errorf("tool name %q is not valid UTF-8", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("tool name %q contains a control character", name)
		}
	}
	return nil
}

// FoldName is a name with case, '-', '_', '.' and white space taken out: two names
// that fold alike read alike to a model or a person ("Execute_Script",
// "execute-script" and "executescript" are one name), so a page action may not take
// a name that folds like a builtin's.
func FoldName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r == '-' || r == '_' || r == '.' || unicode.IsSpace(r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
