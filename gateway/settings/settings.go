// Package settings is the table of the gateway's settings: each key with its
// default, what it does and how its value is checked. `ferry gateway config`
// and the serving process read the same table.
package settings

import (
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Keys.
const (
	StoreContent  = "store_content"
	RetentionDays = "audit.retention_days"
	OutputReserve = "quota.output_reserve"
	MaxBodyMB     = "limits.max_body_mb"
	IdleTimeout   = "upstream.idle_timeout_s"
	UserInFlight  = "limits.user_concurrency"
	TeamInFlight  = "limits.team_concurrency"
	BodyMemoryMB  = "limits.body_memory_mb"
	FirstByte     = "upstream.first_byte_timeout_s"
	WholeTimeout  = "upstream.whole_timeout_s"
)

// Setting is one documented key.
type Setting struct {
	Key     string
	Default string
	Doc     string
	kind    string // "bool" or "int"
	min     int64
	max     int64
}

// All is every setting, by key.
var All = []Setting{
	{StoreContent, "false", "keep each request's prompt and answer (up to 1 MiB each) beside its audit row", "bool", 0, 0},
	{RetentionDays, "90", "days audit rows and stored content are kept; usage per day stays; 0 keeps them for ever", "int", 0, 36500},
	{OutputReserve, "4096", "tokens of answer reserved against a token quota for a request that names no max_tokens; a stream's reservation grows by this much as it runs", "int", 16, 1 << 20},
	{MaxBodyMB, "32", "largest request body accepted, in MiB", "int", 1, 1024},
	{UserInFlight, "16", "requests one user may have in flight at once on one gateway process; past it they are refused with 429 before their body is read (0: no cap)", "int", 0, 1 << 20},
	{TeamInFlight, "0", "requests one team's members may have in flight at once on one gateway process (0: no cap)", "int", 0, 1 << 20},
	{BodyMemoryMB, "256", "MiB of request bodies one gateway process holds at once; a request that would take it past is refused with 503 before its body is read", "int", 1, 1 << 20},
	{FirstByte, "60", "seconds a streamed answer may take to send its first event (vendors send one at once, before any thinking); past it the next upstream is tried", "int", 1, 86400},
	{IdleTimeout, "60", "seconds a stream may send nothing between events, or a whole answer between bytes, before the call is given up", "int", 1, 86400},
	{WholeTimeout, "600", "seconds a whole (not streamed) answer may take to begin, which the vendor sends only once it is written", "int", 1, 86400},
}

// Lookup finds a setting.
func Lookup(key string) (Setting, error) {
	for _, s := range All {
		if s.Key == key {
			return s, nil
		}
	}
	var keys []string
	for _, s := range All {
		keys = append(keys, s.Key)
	}
	sort.Strings(keys)
	return Setting{}, fmt.Errorf("unknown gateway setting %q; known: %v", key, keys)
}

// Check validates a value for the setting and returns it in its canonical form.
func (s Setting) Check(v string) (string, error) {
	switch s.kind {
	case "bool":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", fmt.Errorf("%s: %q is not true or false", s.Key, v)
		}
		return strconv.FormatBool(b), nil
	default:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < s.min || n > s.max {
			return "", fmt.Errorf("%s: %q must be a whole number from %d to %d", s.Key, v, s.min, s.max)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// Values are the settings in force: stored values over defaults.
type Values map[string]string

// Get is the value of key, its default when not stored (or stored wrongly).
func (v Values) Get(key string) string {
	s, err := Lookup(key)
	if err != nil {
		return ""
	}
	if x, ok := v[key]; ok {
		if c, err := s.Check(x); err == nil {
			return c
		}
	}
	return s.Default
}

// Bool reads a bool setting.
func (v Values) Bool(key string) bool { b, _ := strconv.ParseBool(v.Get(key)); return b }

// Int reads an int setting.
func (v Values) Int(key string) int64 { n, _ := strconv.ParseInt(v.Get(key), 10, 64); return n }

// Seconds reads a setting in seconds.
func (v Values) Seconds(key string) time.Duration { return time.Duration(v.Int(key)) * time.Second }
