package tools

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Page patterns are ECMAScript regular expressions, and the browser evaluates them
// with ECMAScript's engine. The host validates with Go's RE2, whose syntax and
// meaning differ in places. Rather than hoping the two agree, the host translates
// each pattern from a documented subset of ECMAScript (as `new RegExp(p, "u")`
// reads it, the mode JSON Schema validators such as Ajv use) into a Go pattern of
// the same meaning, and refuses at registration anything outside the subset.
//
// The rule, precisely:
//
//   - JSON Schema "pattern" is a search: is there a match anywhere? Backtracking and
//     RE2 find a match for exactly the same strings, so greedy/lazy quantifiers and
//     alternation order agree even where the chosen match would differ.
//   - Kept as is: literals, ^ $ (no flags, so start and end of the whole string in
//     both), | ( ) (?: ), quantifiers * + ? {n} {n,} {n,m} (greedy or lazy, counts up
//     to 1000, RE2's limit), \d \D \w \W \b \B (ASCII in both without the i flag),
//     character classes and ranges, \t \n \v \f \r, escaped syntax characters.
//   - Translated: . (ECMAScript excludes \n \r U+2028 U+2029, Go only \n); \s and \S
//     (ECMAScript's Unicode white space and line terminators, Go's \s is ASCII only);
//     \0 \xHH \uHHHH \u{H…} \cX and surrogate pairs to Go's \x{…}; [\b] (backspace);
//     [] (matches nothing) and [^] (any character); (?<name>…) to (?P<name>…);
//     \p{Gc}, \p{Script=X}/\p{sc=X} to Go's \p{…} when Go knows the name.
//   - Refused: lookahead and lookbehind (?= ?! ?<= ?<!, backreferences \1…\9 and
//     \k<…> (RE2 cannot evaluate them), \S inside a character class (RE2 cannot
//     subtract from a class it unions), lone surrogates, inline flags and modifiers,
//     other \p properties, identity escapes of ordinary characters and lone ] { }
//     (syntax errors in "u" mode), and anything Go's compiler then rejects.
//
// The pattern the model sees is always the page's original source; only validation
// uses the translation.

// ecmaSpace is ECMAScript's \s: WhiteSpace (TAB VT FF SP NBSP ZWNBSP and category
// Zs) plus LineTerminator (LF CR LS PS), written as the inside of a Go class.
const ecmaSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

// TranslateECMARegex returns a Go regexp with the same meaning as the ECMAScript
// pattern src, or an error saying why no such translation is offered.
func TranslateECMARegex(src string) (string, error) {
	t := &reTranslator{src: src}
	out, err := t.run()
	if err != nil {
		return "", fmt.Errorf("pattern %q: %w", src, err)
	}
	if _, err := regexp.Compile(out); err != nil {
		return "", fmt.Errorf("pattern %q is not one the host can evaluate as the browser does: %v", src, err)
	}
	return out, nil
}

type reTranslator struct {
	src string
	pos int
	out strings.Builder
	// quantifiable says whether the last thing emitted is an atom a quantifier may
	// follow (ECMAScript "u" mode forbids quantifying assertions and nothing).
	quantifiable bool
	depth        int
}

func (t *reTranslator) run() (string, error) {
	for t.pos < len(t.src) {
		if err := t.term(); err != nil {
			return "", err
		}
	}
	if t.depth != 0 {
		return "", fmt.Errorf("unclosed group")
	}
	return t.out.String(), nil
}

func (t *reTranslator) next() rune {
	r, n := utf8.DecodeRuneInString(t.src[t.pos:])
	t.pos += n
	return r
}

func (t *reTranslator) peek() rune {
	if t.pos >= len(t.src) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(t.src[t.pos:])
	return r
}

func (t *reTranslator) atom(s string) {
	t.out.WriteString(s)
	t.quantifiable = true
}

func (t *reTranslator) assertion(s string) {
	t.out.WriteString(s)
	t.quantifiable = false
}

func (t *reTranslator) term() error {
	start := t.pos
	r := t.next()
	switch r {
	case '^', '$':
		t.assertion(string(r))
	case '|':
		t.assertion("|")
	case '.':
		t.atom(`[^\n\r\x{2028}\x{2029}]`)
	case '(':
		return t.group()
	case ')':
		if t.depth == 0 {
			return fmt.Errorf("unmatched ) at offset %d", start)
		}
		t.depth--
		t.atom(")")
	case '*', '+', '?':
		return t.quantifier(string(r))
	case '{':
		q, ok := t.braces()
		if !ok {
			return fmt.Errorf("lone { at offset %d (escape it as \\{)", start)
		}
		return t.quantifier(q)
	case '}', ']':
		return fmt.Errorf("lone %c at offset %d (escape it as \\%c)", r, start, r)
	case '[':
		return t.class()
	case '\\':
		return t.escape(false)
	default:
		t.atom(regexp.QuoteMeta(string(r)))
	}
	return nil
}

func (t *reTranslator) group() error {
	if !strings.HasPrefix(t.src[t.pos:], "?") {
		t.depth++
		t.assertion("(")
		return nil
	}
	rest := t.src[t.pos:]
	switch {
	case strings.HasPrefix(rest, "?:"):
		t.pos += 2
		t.depth++
		t.assertion("(?:")
		return nil
	case strings.HasPrefix(rest, "?=") || strings.HasPrefix(rest, "?!") ||
		strings.HasPrefix(rest, "?<=") || strings.HasPrefix(rest, "?<!"):
		return fmt.Errorf("lookahead and lookbehind (%s…) cannot be evaluated by the host's regular expression engine; express the rule without them", "(?"+rest[1:min(len(rest), 3)])
	case strings.HasPrefix(rest, "?<"):
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			return fmt.Errorf("unterminated group name")
		}
		name := rest[2:end]
		if name == "" || !isWordString(name) || unicode.IsDigit(rune(name[0])) {
			return fmt.Errorf("group name %q: only ASCII letters, digits and _ are accepted", name)
		}
		t.pos += end + 1
		t.depth++
		t.assertion("(?P<" + name + ">")
		return nil
	default:
		return fmt.Errorf("group syntax (%s is not accepted (inline flags and modifiers are refused)", "(?"+rest[1:min(len(rest), 2)])
	}
}

// braces reads {n}, {n,} or {n,m} after the opening brace, or reports that the text
// is not a quantifier.
func (t *reTranslator) braces() (string, bool) {
	rest := t.src[t.pos:]
	end := strings.IndexByte(rest, '}')
	if end < 0 {
		return "", false
	}
	body := rest[:end]
	lo, hi, comma := strings.Cut(body, ",")
	if !allDigits(lo) || (comma && hi != "" && !allDigits(hi)) {
		return "", false
	}
	t.pos += end + 1
	return "{" + body + "}", true
}

func (t *reTranslator) quantifier(q string) error {
	if !t.quantifiable {
		return fmt.Errorf("quantifier %s has nothing to repeat", q)
	}
	if strings.HasPrefix(q, "{") {
		for _, part := range strings.Split(strings.Trim(q, "{}"), ",") {
			if part == "" {
				continue
			}
			if n, err := strconv.Atoi(part); err != nil || n > 1000 {
				return fmt.Errorf("repeat count in %s is over 1000, the most the host's engine evaluates", q)
			}
		}
	}
	t.out.WriteString(q)
	if t.peek() == '?' {
		t.pos++
		t.out.WriteByte('?')
	}
	// A second quantifier right after is an error in ECMAScript.
	t.quantifiable = false
	return nil
}

// escape handles a backslash sequence; inClass says it sits inside [...].
func (t *reTranslator) escape(inClass bool) error {
	if t.pos >= len(t.src) {
		return fmt.Errorf("pattern ends with a lone backslash")
	}
	out, err := t.escapeText(inClass)
	if err != nil {
		return err
	}
	if inClass {
		t.out.WriteString(out)
		return nil
	}
	if out == `\b` || out == `\B` {
		t.assertion(out)
	} else {
		t.atom(out)
	}
	return nil
}

func (t *reTranslator) escapeText(inClass bool) (string, error) {
	at := t.pos - 1
	r := t.next()
	switch r {
	case 'd', 'D', 'w', 'W', 't', 'n', 'v', 'f', 'r':
		return `\` + string(r), nil
	case 'b':
		if inClass {
			return `\x{8}`, nil
		}
		return `\b`, nil
	case 'B':
		if inClass {
			return "", fmt.Errorf(`\B inside a character class is a syntax error`)
		}
		return `\B`, nil
	case 's':
		if inClass {
			return ecmaSpace, nil
		}
		return "[" + ecmaSpace + "]", nil
	case 'S':
		if inClass {
			return "", fmt.Errorf(`\S inside a character class (offset %d) cannot be evaluated by the host's engine; write (?:\S|[...]) instead`, at)
		}
		return "[^" + ecmaSpace + "]", nil
	case '0':
		if c := t.peek(); c >= '0' && c <= '9' {
			return "", fmt.Errorf(`\0 followed by a digit (offset %d) is a syntax error`, at)
		}
		return `\x{0}`, nil
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "", fmt.Errorf(`backreference \%c (offset %d) cannot be evaluated by the host's regular expression engine`, r, at)
	case 'k':
		return "", fmt.Errorf(`named backreference \k (offset %d) cannot be evaluated by the host's regular expression engine`, at)
	case 'x':
		hex := t.src[t.pos:min(len(t.src), t.pos+2)]
		if len(hex) != 2 || !allHex(hex) {
			return "", fmt.Errorf(`\x at offset %d needs two hex digits`, at)
		}
		t.pos += 2
		return codePoint(parseHex(hex)), nil
	case 'u':
		cp, err := t.unicodeEscape(at)
		if err != nil {
			return "", err
		}
		return codePoint(cp), nil
	case 'c':
		c := t.peek()
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", fmt.Errorf(`\c at offset %d needs a letter`, at)
		}
		t.pos++
		return codePoint(int(c) % 32), nil
	case 'p', 'P':
		return t.property(r, at)
	case '-':
		if inClass {
			return `\-`, nil
		}
	}
	if strings.ContainsRune(`^$\.*+?()[]{}|/`, r) {
		return regexp.QuoteMeta(string(r)), nil
	}
	return "", fmt.Errorf(`escape \%c at offset %d is not valid in a Unicode-mode pattern`, r, at)
}

func (t *reTranslator) unicodeEscape(at int) (int, error) {
	rest := t.src[t.pos:]
	if strings.HasPrefix(rest, "{") {
		end := strings.IndexByte(rest, '}')
		if end < 2 || !allHex(rest[1:end]) || end > 9 {
			return 0, fmt.Errorf(`\u{…} at offset %d needs 1 to 8 hex digits`, at)
		}
		cp := parseHex(rest[1:end])
		if cp > unicode.MaxRune {
			return 0, fmt.Errorf(`\u{%s} at offset %d is beyond U+10FFFF`, rest[1:end], at)
		}
		t.pos += end + 1
		return checkSurrogate(cp, at)
	}
	if len(rest) < 4 || !allHex(rest[:4]) {
		return 0, fmt.Errorf(`\u at offset %d needs four hex digits`, at)
	}
	cp := parseHex(rest[:4])
	t.pos += 4
	// In "u" mode a high surrogate escape followed by a low one is one code point.
	if cp >= 0xD800 && cp <= 0xDBFF {
		low := t.src[t.pos:]
		if len(low) >= 6 && low[:2] == `\u` && allHex(low[2:6]) {
			if lo := parseHex(low[2:6]); lo >= 0xDC00 && lo <= 0xDFFF {
				t.pos += 6
				return 0x10000 + (cp-0xD800)<<10 + (lo - 0xDC00), nil
			}
		}
	}
	return checkSurrogate(cp, at)
}

func checkSurrogate(cp, at int) (int, error) {
	if cp >= 0xD800 && cp <= 0xDFFF {
		return 0, fmt.Errorf("lone surrogate U+%04X at offset %d never occurs in a valid string", cp, at)
	}
	return cp, nil
}

func (t *reTranslator) property(r rune, at int) (string, error) {
	rest := t.src[t.pos:]
	end := strings.IndexByte(rest, '}')
	if !strings.HasPrefix(rest, "{") || end < 0 {
		return "", fmt.Errorf(`\%c at offset %d needs {Name}`, r, at)
	}
	body := rest[1:end]
	t.pos += end + 1
	name := body
	if k, v, ok := strings.Cut(body, "="); ok {
		if k != "Script" && k != "sc" && k != "General_Category" && k != "gc" {
			return "", fmt.Errorf(`property \%c{%s} is not one the host evaluates; use a general category (\p{L}) or \p{Script=Name}`, r, body)
		}
		name = v
	}
	_, isCat := unicode.Categories[name]
	_, isScript := unicode.Scripts[name]
	if !isCat && !isScript || !isWordString(name) {
		return "", fmt.Errorf(`property \%c{%s} is not one the host evaluates; use a general category short name (\p{L}, \p{Nd}) or \p{Script=Name}`, r, body)
	}
	return `\` + string(r) + "{" + name + "}", nil
}

// class translates a character class after its [.
func (t *reTranslator) class() error {
	at := t.pos - 1
	negate := t.peek() == '^'
	if negate {
		t.pos++
	}
	if t.peek() == ']' {
		t.pos++
		if negate {
			t.atom(`[\x{0}-\x{10FFFF}]`)
		} else {
			t.atom(`[^\x{0}-\x{10FFFF}]`)
		}
		return nil
	}
	t.out.WriteByte('[')
	if negate {
		t.out.WriteByte('^')
	}
	// prevSingle says the last member was one character, so a following "-x" is a
	// range; ECMAScript "u" mode refuses ranges with a class escape at either end.
	prevSingle := false
	for {
		if t.pos >= len(t.src) {
			return fmt.Errorf("character class at offset %d is not closed", at)
		}
		r := t.next()
		switch {
		case r == ']':
			t.out.WriteByte(']')
			t.quantifiable = true
			return nil
		case r == '-' && prevSingle && t.peek() != ']' && t.peek() != -1:
			t.out.WriteByte('-')
			if t.peek() == '\\' {
				t.pos++
				s, err := t.escapeText(true)
				if err != nil {
					return err
				}
				if !isSingleCharEscape(s) {
					return fmt.Errorf("character class range at offset %d ends in a class escape", at)
				}
				t.out.WriteString(s)
			} else {
				t.out.WriteString(regexp.QuoteMeta(string(t.next())))
			}
			prevSingle = false
			continue
		case r == '\\':
			s, err := t.escapeText(true)
			if err != nil {
				return err
			}
			single := isSingleCharEscape(s)
			if !single && strings.HasPrefix(t.src[t.pos:], "-") && !strings.HasPrefix(t.src[t.pos:], "-]") {
				return fmt.Errorf("character class range at offset %d starts with a class escape", at)
			}
			t.out.WriteString(s)
			prevSingle = single
			continue
		case r == '[' || r == '^' || r == '-' || r == '&' || r == '~':
			// Literal inside a class in ECMAScript; escape so RE2 never reads [: or
			// similar as its own syntax.
			t.out.WriteString(`\` + string(r))
		default:
			t.out.WriteString(regexp.QuoteMeta(string(r)))
		}
		prevSingle = true
	}
}

func isSingleCharEscape(s string) bool {
	if strings.HasPrefix(s, `\x{`) {
		return true
	}
	switch s {
	case `\t`, `\n`, `\v`, `\f`, `\r`, `\-`:
		return true
	}
	return len(s) == 2 && s[0] == '\\' && strings.ContainsRune(`^$\.*+?()[]{}|/`, rune(s[1]))
}

func codePoint(cp int) string { return `\x{` + strconv.FormatInt(int64(cp), 16) + `}` }

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func allHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

func parseHex(s string) int {
	n, _ := strconv.ParseInt(s, 16, 64)
	return int(n)
}

func isWordString(s string) bool {
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}
