package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// The envelope of a message ({"jsonrpc":"2.0","id":…,"method":…,"params":…}) is read
// here in one pass that checks the JSON as it goes and leaves params and result as
// slices of the frame. json.Unmarshal into Message would scan the whole frame twice
// (once to validate, once to decode) and copy params; the method's own decode of its
// params is then the one full decode of a large request. Anything this reader does
// not expect (another member, an escaped method name, an error response, a duplicate
// member, malformed JSON) is left to json.Unmarshal, which then gives the answer and
// the error it always gave: the fast path never decides a case differently.

// fastResponseMin is the size from which a response's result is delimited but not
// checked: the caller's json.Unmarshal of it (Call) is then the one pass over a
// multi-megabyte browser answer, and a malformed result fails that call at once.
const fastResponseMin = 64 << 10

// maxDepth is encoding/json's nesting limit: deeper values go to json.Unmarshal so
// that they fail with its error.
const maxDepth = 10000

// scanEnvelope reads data as one JSON-RPC message. ok false means "decode it with
// json.Unmarshal instead", not that the message is bad.
func scanEnvelope(data []byte) (m Message, ok bool) {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return m, false
	}
	var seen [5]bool
	lazyResult := false
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return m, skipWS(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return m, false
		}
		end := plainString(data, i)
		if end < 0 {
			return m, false
		}
		slot := memberSlot(data[i+1 : end-1])
		if slot < 0 || seen[slot] {
			return m, false // unknown or case-folded names and duplicates: Unmarshal's rules
		}
		seen[slot] = true
		i = skipWS(data, end)
		if i >= len(data) || data[i] != ':' {
			return m, false
		}
		i = skipWS(data, i+1)
		var vend int
		switch slot {
		case slotJSONRPC, slotMethod:
			vend = plainString(data, i)
		case slotResult:
			if len(data) >= fastResponseMin {
				vend, lazyResult = skipValue(data, i), true
			} else {
				vend = validValue(data, i, 2) // the envelope is the first level
			}
		default:
			vend = validValue(data, i, 2) // the envelope is the first level
		}
		if vend < 0 {
			return m, false
		}
		val := data[i:vend]
		switch slot {
		case slotJSONRPC:
			m.JSONRPC = string(val[1 : len(val)-1])
		case slotMethod:
			m.Method = string(val[1 : len(val)-1])
		case slotID:
			m.ID = json.RawMessage(val)
		case slotParams:
			m.Params = json.RawMessage(val)
		case slotResult:
			m.Result = json.RawMessage(val)
		}
		i = skipWS(data, vend)
		if i >= len(data) {
			return m, false
		}
		if data[i] == ',' {
			i = skipWS(data, i+1)
			continue
		}
		if data[i] != '}' || skipWS(data, i+1) != len(data) {
			return m, false
		}
		break
	}
	// An unchecked result is only for answers: a request carrying one is refused,
	// and which refusal (parse error or invalid request) is Unmarshal's to say.
	if lazyResult && m.Method != "" {
		return Message{}, false
	}
	return m, true
}

const (
	slotJSONRPC = iota
	slotID
	slotMethod
	slotParams
	slotResult
)

func memberSlot(name []byte) int {
	switch string(name) {
	case "jsonrpc":
		return slotJSONRPC
	case "id":
		return slotID
	case "method":
		return slotMethod
	case "params":
		return slotParams
	case "result":
		return slotResult
	}
	return -1
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString returns the index just past the string at b[i] when it is a valid JSON
// string of valid UTF-8 without escapes (its bytes are then its value, as
// json.Unmarshal would decode it: that replaces bad UTF-8), or -1.
func plainString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	end := validString(b, i)
	if end < 0 {
		return -1
	}
	s := b[i+1 : end-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return -1
	}
	return end
}

// validContainer is validValue for the object or array starting at b[i]: members
// `"key": value` or elements `value`, separated by commas, then the closing bracket.
func validContainer(b []byte, i, depth int) int {
	if depth > maxDepth {
		return -1
	}
	object := b[i] == '{'
	closer := byte(']')
	if object {
		closer = '}'
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == closer {
		return i + 1
	}
	for {
		if object {
			if i >= len(b) || b[i] != '"' {
				return -1
			}
			if i = validString(b, i); i < 0 {
				return -1
			}
			if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
				return -1
			}
			i = skipWS(b, i+1)
		}
		if i = validValue(b, i, depth+1); i < 0 {
			return -1
		}
		if i = skipWS(b, i); i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case closer:
			return i + 1
		default:
			return -1
		}
	}
}

// validValue returns the index just past the JSON value starting at b[i], or -1 when
// there is none or it is not valid JSON (RFC 8259, as encoding/json reads it: any
// byte of 0x20 and above may stand in a string, valid UTF-8 or not).
func validValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{' || c == '[':
		return validContainer(b, i, depth)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return -1
}

func literal(b []byte, i int, word string) int {
	if len(b)-i >= len(word) && string(b[i:i+len(word)]) == word {
		return i + len(word)
	}
	return -1
}

// validNumber: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// Eight bytes at a time: a word has a byte below 0x20, a quote or a backslash when
// hasSpecial says so (it may also say so for a byte just above one of those, never
// miss one): a string's plain bytes then cost an eighth of a step each.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

func hasSpecial(x uint64) bool {
	below := (x - ones*0x20) &^ x & highs
	return below|hasZero(x^ones*'"')|hasZero(x^ones*'\\') != 0
}

func hasZero(y uint64) uint64 { return (y - ones) &^ y & highs }

// validString returns the index just past the JSON string starting at b[i] (a quote),
// or -1 when it is unterminated, holds a control character or a bad escape.
func validString(b []byte, i int) int {
	i++
	for {
		for i+8 <= len(b) && !hasSpecial(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipString returns the index just past the JSON string starting at b[i] ('"'), or
// -1, looking only at quotes and the backslashes before them: what the unchecked
// result of a large answer is delimited with.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		k := i
		for k > 0 && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
		i++ // an escaped quote
	}
}

// skipValue returns the index just past the JSON value starting at b[i], or -1,
// without checking it.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	// A number, true, false or null: up to the next delimiter.
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
