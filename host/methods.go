package host

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/ferryhq/ferry/protocol"
)

// MethodFunc answers one JSON-RPC method. params is the raw params member (nil when
// absent).
type MethodFunc func(ctx context.Context, params json.RawMessage) (any, error)

// Methods is the table of JSON-RPC methods the host answers. It refuses a second
// registration of a name, so two features can never silently fight over one method.
type Methods struct {
	table map[string]MethodFunc
}

// NewMethods returns an empty table.
func NewMethods() *Methods { return &Methods{table: map[string]MethodFunc{}} }

// Register adds a method; a name already taken is an error.
func (m *Methods) Register(name string, fn MethodFunc) error {
	if name == "" || fn == nil {
		return fmt.Errorf("register method: a name and a function are required")
	}
	if _, dup := m.table[name]; dup {
		return fmt.Errorf("register method: %q is already registered", name)
	}
	m.table[name] = fn
	return nil
}

// Names lists the registered methods in order.
func (m *Methods) Names() []string {
	names := make([]string, 0, len(m.table))
	for n := range m.table {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Handle is the protocol.Handler that dispatches to the table.
func (m *Methods) Handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	fn, ok := m.table[method]
	if !ok {
		return nil, protocol.Errorf(protocol.CodeMethodNotFound, "method not found: %s", method)
	}
	return fn(ctx, params)
}
