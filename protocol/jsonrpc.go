package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Message is any JSON-RPC 2.0 message. ID is kept raw so that absent (a notification)
// and null stay distinct and numbers round-trip exactly as the peer wrote them.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// IsRequest reports a call that expects a response.
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports a call that expects none.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports an answer to one of our own requests.
func (m *Message) IsResponse() bool { return m.Method == "" && m.ID != nil }

// DecodeMessage parses and checks one frame's JSON. The returned Error says what is
// wrong in terms a peer's developer can act on; its code is parse error or invalid
// request. When the id could be read it is returned too, so the error can be answered.
//
// Params and Result may share the memory of data. Params are checked to be valid
// JSON; the Result of a response of 64 KiB or more is only delimited, and its
// decoding (by the caller waiting for it) is what checks it.
func DecodeMessage(data []byte) (*Message, *Error) {
	m, ok := scanEnvelope(data)
	if !ok {
		m = Message{}
		if perr := unmarshalMessage(data, &m); perr != nil {
			return nil, perr
		}
	}
	if m.ID != nil && !validID(m.ID) {
		m.ID = json.RawMessage("null")
		return &m, Errorf(CodeInvalidRequest, "invalid request: id must be a string, a number or null")
	}
	if m.JSONRPC != "2.0" {
		return &m, Errorf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	switch {
	case m.Method != "":
		if m.Result != nil || m.Error != nil {
			return &m, Errorf(CodeInvalidRequest, "invalid request: a request carries no result or error")
		}
		if len(m.Params) > 0 {
			if c := firstByte(m.Params); c != '{' && c != '[' && !bytes.Equal(m.Params, []byte("null")) {
				return &m, Errorf(CodeInvalidRequest, "invalid request: params must be an object or an array")
			}
		}
	case m.ID != nil:
		if (m.Result == nil) == (m.Error == nil) {
			return &m, Errorf(CodeInvalidRequest, "invalid response: exactly one of result and error is required")
		}
	default:
		return &m, Errorf(CodeInvalidRequest, "invalid request: no method and no id")
	}
	return &m, nil
}

// unmarshalMessage is the general reading of a frame, for what scanEnvelope leaves.
func unmarshalMessage(data []byte, m *Message) *Error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if !json.Valid(trimmed) {
			return Errorf(CodeParseError, "parse error: frame is not valid JSON")
		}
		return Errorf(CodeInvalidRequest, "invalid request: batches are not supported; send one message per frame")
	}
	if err := json.Unmarshal(data, m); err != nil {
		if !json.Valid(data) {
			return Errorf(CodeParseError, "parse error: frame is not valid JSON")
		}
		return Errorf(CodeInvalidRequest, "invalid request: %v", err)
	}
	return nil
}

func validID(id json.RawMessage) bool {
	switch c := firstByte(id); {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	default:
		return bytes.Equal(id, []byte("null"))
	}
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// DecodeParams reads a request's params into v, absent params being an empty object.
// Unknown fields are refused: a misspelt "api_key" must not be dropped silently while
// the caller believes it was used. A bad shape is the caller's mistake: invalid params,
// saying what is wrong.
func DecodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 || bytes.Equal(params, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(CodeInvalidParams, "invalid params: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}
