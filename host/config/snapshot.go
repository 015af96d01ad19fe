package config

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Settings is where a package reads settings: one snapshot at a time, with the
// same fallback everywhere. *Live is the host's; Values serves tests and callers
// that hold their settings already.
type Settings interface {
	Snapshot(ctx context.Context) *Snapshot
}

// Reader is where stored settings come from; *storage.DB satisfies it.
type Reader interface {
	ListSettings(ctx context.Context) (map[string]string, error)
}

// Snapshot is the settings as stored at one moment. Its getters are typed and all
// fall back the same way: a key that is unset, or whose stored value no longer
// passes its check (written by hand, or by an older ferry), reads as its default,
// which is always the cautious value. Asking for a key nobody registered is a
// programming error and panics, so the first test that reads it finds it.
type Snapshot struct {
	stored map[string]string
	// Err is why the store could not be read, when it could not: the snapshot then
	// holds the last values read, or the defaults.
	Err error
}

// Of is a snapshot of stored values (nil: every setting at its default).
func Of(stored map[string]string) *Snapshot { return &Snapshot{stored: stored} }

// String is key's value.
func (s *Snapshot) String(key string) string {
	def, err := Lookup(key)
	if err != nil {
		panic(err)
	}
	if s != nil {
		if v, ok := s.stored[key]; ok && def.Check(v) == nil {
			return v
		}
	}
	return def.Default
}

// Invalid reports whether key holds a stored value that no longer passes its check
// (it reads as the default), for a caller that should say so.
func (s *Snapshot) Invalid(key string) bool {
	def, err := Lookup(key)
	if err != nil {
		panic(err)
	}
	if s == nil {
		return false
	}
	v, ok := s.stored[key]
	return ok && def.Check(v) != nil
}

// Bool is key's value as true or false ("true" is true).
func (s *Snapshot) Bool(key string) bool { return strings.TrimSpace(s.String(key)) == "true" }

// Int is key's value as a whole number; a value that is not one reads as the
// default's (0 when the default is not one either).
func (s *Snapshot) Int(key string) int {
	if n, err := strconv.Atoi(strings.TrimSpace(s.String(key))); err == nil {
		return n
	}
	def, _ := Lookup(key)
	n, _ := strconv.Atoi(def.Default)
	return n
}

// Int64 is Int for values that may pass 2^31 (bytes).
func (s *Snapshot) Int64(key string) int64 {
	if n, err := strconv.ParseInt(strings.TrimSpace(s.String(key)), 10, 64); err == nil {
		return n
	}
	def, _ := Lookup(key)
	n, _ := strconv.ParseInt(def.Default, 10, 64)
	return n
}

// Seconds is key's value, a whole number of seconds, as a duration.
func (s *Snapshot) Seconds(key string) time.Duration {
	return time.Duration(s.Int(key)) * time.Second
}

// List is key's value as a comma-separated list: entries trimmed, empty ones
// dropped, in order.
func (s *Snapshot) List(key string) []string { return splitList(s.String(key)) }

func splitList(v string) []string {
	var out []string
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// ListAsStored is List of the value as stored, checked or not (the default when
// unset). A list that refuses (denied origins, turned-off origins) reads this way:
// one entry that no longer passes the check must not make the whole list fall back
// to a default that refuses nothing.
func (s *Snapshot) ListAsStored(key string) []string {
	v := s.String(key)
	if s != nil {
		if stored, ok := s.stored[key]; ok {
			v = stored
		}
	}
	return splitList(v)
}

// Values is a fixed set of stored values: a Settings that never changes.
type Values map[string]string

// Snapshot is the values as they are.
func (v Values) Snapshot(context.Context) *Snapshot { return Of(v) }

// LiveTTL is how stale the host's view of its settings may get. A setting changed
// by `ferry config set` (another process) reaches a running host within it; one
// changed through settings.set reaches it at once. Reading SQLite for every setting
// of every call instead would cost more than the whole tool pipeline.
const LiveTTL = time.Second

// Live is the host's settings: a snapshot of the store read at most LiveTTL ago.
// A nil *Live is every setting at its default.
type Live struct {
	src Reader
	now func() time.Time

	mu  sync.Mutex
	cur *Snapshot
	at  time.Time
}

// NewLive reads settings from src; now is the clock (nil: time.Now).
func NewLive(src Reader, now func() time.Time) *Live {
	if now == nil {
		now = time.Now
	}
	return &Live{src: src, now: now}
}

// Snapshot is the current snapshot: the same value until it is LiveTTL old or
// Refresh drops it. When the store cannot be read, the last snapshot stays in
// force (or the defaults, with Err saying why).
func (l *Live) Snapshot(ctx context.Context) *Snapshot {
	if l == nil || l.src == nil {
		return Of(nil)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil && l.now().Sub(l.at) < LiveTTL {
		return l.cur
	}
	stored, err := l.src.ListSettings(ctx)
	if err != nil {
		if l.cur != nil {
			return l.cur
		}
		return &Snapshot{Err: err}
	}
	l.cur, l.at = Of(stored), l.now()
	return l.cur
}

// Set stores key's value through the Live's source (which must also write, as
// *storage.DB does) and refreshes it, so its next snapshot has the value. The value
// is stored as given: callers check it first (Lookup(key).Check).
func (l *Live) Set(ctx context.Context, key, value string) error {
	w, ok := l.src.(interface {
		SetSetting(ctx context.Context, key, value string) error
	})
	if !ok {
		return fmt.Errorf("setting %s: these settings are read-only", key)
	}
	defer l.Refresh()
	return w.SetSetting(ctx, key, value)
}

// Refresh makes the next Snapshot read the store again (after a change made here).
func (l *Live) Refresh() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.cur = nil
	l.mu.Unlock()
}
