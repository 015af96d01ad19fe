package storage

import (
	"errors"
	"fmt"
)

// Kind is what a refusal of the store means to whoever asked. It is the one
// vocabulary the edges map from: host/tools (AsFailure) to tool result codes for
// the tools, protocol (WireError) to JSON-RPC codes for the methods. No package in
// between maps storage errors on its own.
type Kind int

const (
	// KindNone is not a refusal but a failure of the database itself.
	KindNone Kind = iota
	// NotFound: the conversation, run, task, file or provider named is not there.
	NotFound
	// Invalid: the input is malformed or not allowed (a path that climbs out of the
	// workspace, an empty title).
	Invalid
	// Conflict: what is stored refuses it (a folder where a file is asked for, a run
	// already going in the conversation).
	Conflict
	// Quota: it would take the store past a limit.
	Quota
)

// String is the kind as the wire names it (data.reason of a method's error).
func (k Kind) String() string {
	switch k {
	case NotFound:
		return "not_found"
	case Invalid:
		return "invalid"
	case Conflict:
		return "conflict"
	case Quota:
		return "quota"
	}
	return ""
}

// Error is a refusal with its kind. Its message says what was wrong and what to do
// instead, for the person or the model that reads it. The errors of this package
// are *Error values compared with errors.Is; wrapping keeps the kind.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Reason is the kind as the wire names it: it makes a storage error a
// protocol.Refusal, which the method table answers as invalid params.
func (e *Error) Reason() string { return e.Kind.String() }

// NewError is a refusal of kind k. Packages above storage use it for refusals of
// the same nature (a conversation that already has a run going is a Conflict).
func NewError(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// KindOf is the kind of err, KindNone when it is not a refusal of the store.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindNone
}
