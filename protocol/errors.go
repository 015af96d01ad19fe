package protocol

import (
	"errors"
	"fmt"
)

// Every JSON-RPC error code Ferry sends or expects, in one table: the host's
// methods, the control socket, and the extension's answers to the host's browser
// requests. Codes from -32000 to -32099 are the range JSON-RPC 2.0 leaves to a
// server's own errors. PROTOCOL.md lists the same table (a test holds the two
// together), and the extension reads its copy from extension/lib/host-errors.js
// (a node test holds that one to this).
//
// A tool call that fails is not among these: its failure is a result with a tool
// code (host/tools: INVALID_PARAMS, ACTION_UNAVAILABLE, …), because the call itself
// was understood and answered.
const (
	// CodeParseError: the frame is not valid JSON.
	CodeParseError = -32700
	// CodeInvalidRequest: the JSON is not a JSON-RPC 2.0 request, response or
	// notification Ferry accepts (a batch, a wrong "jsonrpc", a bad id).
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: no method of that name (or not one this client may call).
	CodeMethodNotFound = -32601
	// CodeInvalidParams: the params are not what the method takes, or they name
	// something that is not there or not allowed (a stored thing's kind says which:
	// data.reason is not_found, invalid, conflict or quota).
	CodeInvalidParams = -32602
	// CodeInternalError: the method failed for a reason of the host's own; the
	// message says what, and the host's log says more.
	CodeInternalError = -32603
	// CodeProtocolMismatch: host.hello from a client of another protocol version;
	// data is {host_protocol, client_protocol} and the message says which side to
	// update.
	CodeProtocolMismatch = -32000
	// CodeCancelled: the request was cancelled before it was answered (the peer
	// went away, the host is shutting down, or the caller stopped waiting).
	CodeCancelled = -32001
	// CodeUnauthorized: a control-socket request before a successful control.hello,
	// or a control.hello with the wrong token.
	CodeUnauthorized = -32003
	// CodeBusy: the control socket turned a new client away because too many are
	// connected, or connecting without having presented the token; try again
	// shortly.
	CodeBusy = -32004
	// CodeBrowserError: the extension could not do what a browser method asked
	// (protocol/BROWSER.md); data.reason names why (no_tab, stale_ref, gone, …) and
	// host/browser maps it to a tool code.
	CodeBrowserError = -32010
	// CodeAskRefused: page.ask (a page's ferry.ask) was refused: the origin is
	// denied or turned off, asked too often, or the person did not allow it.
	CodeAskRefused = -32020
)

// Codes lists every code of the table above, for the tests that hold the docs and
// the extension to it.
var Codes = []int{
	CodeParseError, CodeInvalidRequest, CodeMethodNotFound, CodeInvalidParams, CodeInternalError,
	CodeProtocolMismatch, CodeCancelled, CodeUnauthorized, CodeBusy, CodeBrowserError, CodeAskRefused,
}

// Error is a JSON-RPC error object. Handlers return it to choose the code the peer
// sees; any other error becomes CodeInternalError.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// Refusal is an error of the caller's asking rather than of the host: what it named
// is not there, is malformed, is refused by what is stored, or would pass a quota.
// Storage's errors are refusals (their Reason is their kind); the method table
// answers every refusal the same way, so no method maps them on its own.
type Refusal interface {
	error
	Reason() string // not_found, invalid, conflict or quota
}

// WireError is the one mapping of a method's error to what the peer sees: an *Error
// as it is; a Refusal as CodeInvalidParams with its message and data.reason; any
// other error as it is (the connection answers it as CodeInternalError).
func WireError(err error) error {
	var pe *Error
	var r Refusal
	switch {
	case err == nil, errors.As(err, &pe):
		return err
	case errors.As(err, &r) && r.Reason() != "":
		return &Error{Code: CodeInvalidParams, Message: err.Error(), Data: map[string]string{"reason": r.Reason()}}
	}
	return err
}

// Errorf builds an Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
