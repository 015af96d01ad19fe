package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What the audit log and the log file keep of a call: its shape wherever the text is
// sensitive or large. They are kept for weeks (audit.retention_days) and copied
// around (exports, bug reports), while what they stand for may be a typed password,
// a key, or a file the person has since deleted; so:
//
//   - a secret is never kept, only "[redacted]": a value whose schema says so
//     (x-secret, format password), whose name says so (secret, token, password, key,
//     …), or that the tool says was sensitive once it ran (Tool.Secret: text typed into
//     a password field);
//   - a tool's bulk data (Tool.AuditShape: a file's body) is kept as its size and
//     SHA-256 only, in the arguments and in the result;
//   - any other string over MaxAuditString keeps its first auditHead bytes with its
//     size and hash, and arguments still over MaxAuditArguments (or that did not
//     parse) are kept as a whole as their size, hash and field names.
//
// The confirmation card a person reads before a call runs is not stored: it shows
// the arguments with only the secrets redacted (cardArguments).
const (
	MaxAuditResult    = 2 << 10 // bytes of result summary or reason
	MaxAuditArguments = 4 << 10 // bytes of (shaped) arguments
	MaxAuditString    = 1 << 10 // a longer string is kept cut
	// MaxCardArguments bounds the arguments a confirmation card shows.
	MaxCardArguments = 16 << 10

	auditHead = 256
)

// Redacted is what the audit log shows in place of a secret value.
const Redacted = "[redacted]"

// secretWords are the words of an argument's name that say it holds a secret.
var secretWords = map[string]bool{
	"secret": true, "secrets": true, "token": true, "tokens": true, "password": true, "passwords": true,
	"passwd": true, "passphrase": true, "key": true, "keys": true, "apikey": true, "credential": true,
	"credentials": true, "otp": true, "pin": true, "cvv": true, "cvc": true,
}

// SecretName reports whether an argument's name says it holds a secret: one of its
// words (split at '_', '-', '.', spaces and lower-to-upper case changes: api_key,
// apiKey, X-Auth-Token) is secret, token, password, key or a kin of them.
func SecretName(name string) bool {
	words := strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		start := 0
		rs := []rune(w)
		for i := 1; i <= len(rs); i++ {
			if i == len(rs) || (unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i-1])) {
				if secretWords[strings.ToLower(string(rs[start:i]))] {
					return true
				}
				start = i
			}
		}
		if secretWords[strings.ToLower(w)] {
			return true
		}
	}
	return false
}

// shaper walks a value, replacing what is not kept.
type shaper struct {
	secret map[string]bool // top-level names the tool marked secret for this call
	shape  map[string]bool // top-level names kept as size and hash only
	cut    bool            // cut long strings (the audit log), or keep them (a card)
	found  []string        // the secret strings replaced, to scrub from the result
}

func (s *shaper) walk(v, schema any, top bool) any {
	sm, _ := schema.(map[string]any)
	if sm != nil && isSecret(sm) {
		return s.redact(v)
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := sm["properties"].(map[string]any)
		out := make(map[string]any, len(x))
		for k, val := range x {
			switch {
			case top && s.secret[k], SecretName(k) && textual(val):
				out[k] = s.redact(val)
			case top && s.shape[k] && s.cut:
				out[k] = shapeOf(val)
			default:
				out[k] = s.walk(val, props[k], false)
			}
		}
		return out
	case []any:
		prefix, _ := sm["prefixItems"].([]any)
		out := make([]any, len(x))
		for i, val := range x {
			var is any
			if i < len(prefix) {
				is = prefix[i]
			} else if sm != nil {
				is = sm["items"]
			}
			out[i] = s.walk(val, is, false)
		}
		return out
	case string:
		if s.cut && len(x) > MaxAuditString {
			return map[string]any{"cut": truncate(x, auditHead), "bytes": len(x), "sha256": sum(x)}
		}
	}
	return v
}

// isSecret: a property whose schema has "x-secret": true or "format": "password"
// holds a secret; the audit log and the dangerous-call warning show it redacted.
func isSecret(schema map[string]any) bool {
	return schema["x-secret"] == true || schema["format"] == "password"
}

// textual: a secret is held in text (or in a structure of it); a number or a flag
// under a secret-sounding name (max_tokens) is not one.
func textual(v any) bool {
	switch v.(type) {
	case string, map[string]any, []any:
		return true
	}
	return false
}

func (s *shaper) redact(v any) any {
	collectStrings(v, &s.found)
	return Redacted
}

func collectStrings(v any, into *[]string) {
	switch x := v.(type) {
	case string:
		*into = append(*into, x)
	case map[string]any:
		for _, val := range x {
			collectStrings(val, into)
		}
	case []any:
		for _, val := range x {
			collectStrings(val, into)
		}
	}
}

// shapeOf is what stands for bulk data: its size and hash, never its text.
func shapeOf(v any) any {
	b, ok := v.(string)
	if !ok {
		raw, _ := marshalNoEscape(v)
		b = string(raw)
	}
	return map[string]any{"bytes": len(b), "sha256": sum(b)}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// wholeShape stands for arguments too large to keep even shaped, or that did not
// parse (and may hold anything): their size, hash and, for an object, field names.
func wholeShape(b []byte) []byte {
	out := map[string]any{"bytes": len(b), "sha256": sum(string(b))}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) == nil {
		fields := make([]string, 0, len(m))
		for k := range m {
			fields = append(fields, k)
		}
		slices.Sort(fields)
		out["fields"] = fields
	}
	j, _ := marshalNoEscape(out)
	return j
}

func names(ns []string) map[string]bool {
	m := make(map[string]bool, len(ns))
	for _, n := range ns {
		m[n] = true
	}
	return m
}

// newShaper is the shaper of one call for the audit log: res is the outcome, nil
// before the call has run.
func newShaper(st *callState, res *Result) *shaper {
	s := &shaper{cut: true}
	if st.e == nil {
		return s
	}
	s.shape = names(st.e.tool.AuditShape)
	if st.e.tool.Secret != nil {
		var result any
		if res != nil && res.Success {
			result = res.Result
		}
		s.secret = names(st.e.tool.Secret(st.call, result))
	}
	return s
}

// logArguments is a call's arguments as the log file shows them before it runs.
func logArguments(st *callState) json.RawMessage {
	b, _ := shapeArguments(st, newShaper(st, nil))
	return b
}

// auditOf is what the audit row keeps of a call: its arguments, and its result
// summary (or failure reason) with the tool's bulk fields as their shape, long
// strings cut, no secret of the arguments repeated, at most MaxAuditResult bytes.
func auditOf(st *callState, res Result) (json.RawMessage, string) {
	args, s := shapeArguments(st, newShaper(st, &res))
	var summary string
	if res.Success {
		b, err := marshalNoEscape(s.walk(res.Result, nil, true))
		if err != nil {
			b = []byte("(result not JSON: " + err.Error() + ")")
		}
		summary = string(b)
	} else {
		summary = res.Reason
	}
	return args, truncate(scrub(summary, s.found), MaxAuditResult)
}

func shapeArguments(st *callState, s *shaper) (json.RawMessage, *shaper) {
	var schema any
	if st.e != nil {
		schema = st.e.schema.doc
	}
	var b []byte
	switch {
	case st.args != nil:
		b, _ = marshalNoEscape(s.walk(st.args, schema, true))
	case len(strings.TrimSpace(string(st.call.Arguments))) == 0:
		b = []byte("{}")
	default:
		// Arguments that did not parse: what was sent, as its shape.
		return wholeShape(st.call.Arguments), s
	}
	if len(b) > MaxAuditArguments {
		b = wholeShape(b)
	}
	return b, s
}

// scrub removes from text every secret the arguments held: a page or a tool that
// echoes a typed password back (in a value, in an error) must not carry it into the
// log that way. Strings too short to be told from ordinary text are left.
func scrub(text string, secrets []string) string {
	for _, secret := range secrets {
		if utf8.RuneCountInString(secret) < 4 {
			continue
		}
		text = strings.ReplaceAll(text, secret, Redacted)
		if j, err := marshalNoEscape(secret); err == nil && len(j) > 2 {
			text = strings.ReplaceAll(text, string(j[1:len(j)-1]), Redacted)
		}
	}
	return text
}

// cardArguments is what a confirmation card shows: every argument as sent, but
// secrets redacted and the whole bounded.
// recordedMessage is a card's message as the conversation keeps it (Confirmation):
// any secret of the arguments that the message repeats is redacted, as the
// arguments themselves are wherever they are kept.
func recordedMessage(st *callState, msg string) string {
	s := &shaper{}
	if st.args != nil {
		var schema any
		if st.e != nil {
			schema = st.e.schema.doc
		}
		s.walk(st.args, schema, true)
	}
	return scrub(msg, s.found)
}

func cardArguments(st *callState) json.RawMessage {
	s := &shaper{}
	var schema any
	if st.e != nil {
		schema = st.e.schema.doc
	}
	var b []byte
	if st.args != nil {
		b, _ = marshalNoEscape(s.walk(st.args, schema, true))
	} else {
		b, _ = marshalNoEscape(truncate(string(st.call.Arguments), MaxCardArguments))
	}
	if len(b) > MaxCardArguments {
		b, _ = marshalNoEscape(truncate(string(b), MaxCardArguments))
	}
	return b
}
