package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// Mux is the table of JSON-RPC methods a peer answers. Every method is registered
// with Handle, which decodes its params once, strictly (DecodeParams), before the
// method's own code runs: no handler repeats that prologue, and a misspelt field is
// refused the same way everywhere.
type Mux struct {
	table   map[string]func(context.Context, json.RawMessage) (any, error)
	params  map[string]reflect.Type
	outside map[string]bool
}

// NewMux returns an empty table.
func NewMux() *Mux {
	return &Mux{table: map[string]func(context.Context, json.RawMessage) (any, error){}, params: map[string]reflect.Type{}, outside: map[string]bool{}}
}

// MethodOption says something about a method where it is registered.
type MethodOption int

// Outside opens a method to outside clients (the control socket's) beside the
// extension. A method without it belongs to the extension alone. An outside method
// reads who calls from its context (the caller's scope, its peer), which the entry
// point set once when the client connected.
const Outside MethodOption = 1

// Handle registers the method name on mux: fn receives the params decoded into P
// (absent params are P's zero value; unknown fields are invalid params). A name
// registered twice is a programming error and panics when the table is built, at
// start-up, so two features can never silently fight over one method.
func Handle[P any](mux *Mux, name string, fn func(ctx context.Context, params P) (any, error), opts ...MethodOption) {
	if name == "" || fn == nil {
		panic("protocol: a method needs a name and a function")
	}
	if _, dup := mux.table[name]; dup {
		panic(fmt.Sprintf("protocol: method %q registered twice", name))
	}
	mux.table[name] = func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p P
		if err := DecodeParams(raw, &p); err != nil {
			return nil, err
		}
		res, err := fn(ctx, p)
		return res, WireError(err)
	}
	mux.params[name] = reflect.TypeFor[P]()
	for _, o := range opts {
		if o == Outside {
			mux.outside[name] = true
		}
	}
}

// IsOutside reports whether outside clients may call name.
func (m *Mux) IsOutside(name string) bool { return m.outside[name] }

// Peer is the far end of a connection, for a method that talks back to the one
// client that called it: notifications meant for it alone, and its going away.
type Peer interface {
	Notify(method string, params any) error
	OnClose(func())
}

type peerKey struct{}

// WithPeer is ctx for the methods a peer calls.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerFrom is the peer whose call ctx belongs to, or nil (the extension's own).
func PeerFrom(ctx context.Context) Peer { p, _ := ctx.Value(peerKey{}).(Peer); return p }

// Params is the type the method decodes its params into (nil: no such method), so
// that the documentation of each method's params can be held to the code.
func (m *Mux) Params(name string) reflect.Type {
	return m.params[name]
}

// Has reports whether name is registered.
func (m *Mux) Has(name string) bool {
	_, ok := m.table[name]
	return ok
}

// Names lists the registered methods in order.
func (m *Mux) Names() []string {
	names := make([]string, 0, len(m.table))
	for n := range m.table {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Dispatch is the Handler that answers from the table; an unknown method is
// CodeMethodNotFound.
func (m *Mux) Dispatch(ctx context.Context, method string, params json.RawMessage) (any, error) {
	fn, ok := m.table[method]
	if !ok {
		return nil, Errorf(CodeMethodNotFound, "method not found: %s", method)
	}
	return fn(ctx, params)
}
