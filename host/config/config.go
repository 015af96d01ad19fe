// Package config is the table of documented settings (`ferry config`, the options
// page). Each feature registers its own keys from its package, with a default and a
// check, so that a typo is refused with a reason instead of silently ignored.
package config

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
)

// Setting documents one key.
type Setting struct {
	Key         string
	Description string
	Default     string
	Validate    func(string) error // nil accepts any value
}

var (
	mu    sync.RWMutex
	table = map[string]Setting{}
)

// Register adds a setting. Registering a key twice is a programming error and panics
// at start-up, where it is found at once.
func Register(s Setting) {
	mu.Lock()
	defer mu.Unlock()
	if s.Key == "" {
		panic("config: a setting needs a key")
	}
	if _, dup := table[s.Key]; dup {
		panic(fmt.Sprintf("config: setting %q registered twice", s.Key))
	}
	if s.Validate != nil {
		if err := s.Validate(s.Default); err != nil {
			panic(fmt.Sprintf("config: default of %q is invalid: %v", s.Key, err))
		}
	}
	table[s.Key] = s
}

// All lists every setting sorted by key.
func All() []Setting {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Setting, 0, len(table))
	for _, s := range table {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Lookup finds a documented key.
func Lookup(key string) (Setting, error) {
	mu.RLock()
	s, ok := table[key]
	mu.RUnlock()
	if ok {
		return s, nil
	}
	var keys []string
	for _, s := range All() {
		keys = append(keys, s.Key)
	}
	return Setting{}, fmt.Errorf("unknown setting %q; known settings: %v (see `ferry config list`)", key, keys)
}

// Check validates a value for key.
func (s Setting) Check(v string) error {
	if s.Validate == nil {
		return nil
	}
	return s.Validate(v)
}

// OneOf accepts exactly the listed values.
func OneOf(values ...string) func(string) error {
	return func(v string) error {
		for _, ok := range values {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("must be one of %v", values)
	}
}

// IntRange accepts an integer between lo and hi inclusive.
func IntRange(lo, hi int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be a whole number from %d to %d", lo, hi)
		}
		return nil
	}
}
