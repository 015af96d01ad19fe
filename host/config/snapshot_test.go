package config

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func init() {
	Register(Setting{Key: "test.n", Default: "7", Validate: IntRange(0, 100), Description: "test"})
	Register(Setting{Key: "test.on", Default: "false", Validate: OneOf("true", "false"), Description: "test"})
	Register(Setting{Key: "test.list", Default: "a", Description: "test",
		Validate: func(v string) error {
			if strings.Contains(v, "!") {
				return errors.New("no bangs")
			}
			return nil
		}})
}

// One fallback for every getter: unset and no-longer-valid values read as the
// default; a deny list read as stored keeps what it named.
func TestSnapshotFallsBackOneWay(t *testing.T) {
	s := Of(map[string]string{"test.n": "200", "test.on": "true", "test.list": " x, ,y! "})
	if s.Int("test.n") != 7 || !s.Invalid("test.n") {
		t.Errorf("an out-of-range int: %d", s.Int("test.n"))
	}
	if !s.Bool("test.on") || s.Invalid("test.on") {
		t.Error("a valid bool")
	}
	if got := s.List("test.list"); strings.Join(got, "|") != "a" {
		t.Errorf("an invalid list reads as its default: %q", got)
	}
	if got := s.ListAsStored("test.list"); strings.Join(got, "|") != "x|y!" {
		t.Errorf("as stored: %q", got)
	}
	if d := Of(nil); d.Int("test.n") != 7 || d.Bool("test.on") || d.Seconds("test.n") != 7*time.Second || d.Invalid("test.n") {
		t.Error("defaults")
	}
	var nilSnap *Snapshot
	if nilSnap.String("test.n") != "7" || Values(nil).Snapshot(context.Background()).Int64("test.n") != 7 {
		t.Error("a nil snapshot is the defaults")
	}
	defer func() {
		if recover() == nil {
			t.Error("an unregistered key was read")
		}
	}()
	s.String("no.such.key")
}

type countingStore struct {
	reads int
	m     map[string]string
	err   error
}

func (c *countingStore) ListSettings(context.Context) (map[string]string, error) {
	c.reads++
	if c.err != nil {
		return nil, c.err
	}
	out := map[string]string{}
	for k, v := range c.m {
		out[k] = v
	}
	return out, nil
}

func (c *countingStore) SetSetting(_ context.Context, k, v string) error { c.m[k] = v; return nil }

// The host's Live reads the store at most once a LiveTTL, at once after a change
// made through it, and keeps its last view when the store cannot be read.
func TestLiveCachesAndRefreshes(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(0, 0)
	st := &countingStore{m: map[string]string{"test.n": "1"}}
	l := NewLive(st, func() time.Time { return now })
	first := l.Snapshot(ctx)
	if first.Int("test.n") != 1 || l.Snapshot(ctx) != first || st.reads != 1 {
		t.Fatalf("reads %d", st.reads)
	}
	if err := l.Set(ctx, "test.n", "2"); err != nil {
		t.Fatal(err)
	}
	if l.Snapshot(ctx).Int("test.n") != 2 || st.reads != 2 {
		t.Fatalf("after Set: reads %d", st.reads)
	}
	st.m["test.n"] = "3" // another process
	if l.Snapshot(ctx).Int("test.n") != 2 {
		t.Fatal("read again within the TTL")
	}
	now = now.Add(LiveTTL)
	if l.Snapshot(ctx).Int("test.n") != 3 {
		t.Fatal("not read again after the TTL")
	}
	st.err = errors.New("disk on fire")
	now = now.Add(LiveTTL)
	if s := l.Snapshot(ctx); s.Int("test.n") != 3 || s.Err != nil {
		t.Fatalf("an unreadable store must leave the last view: %d %v", s.Int("test.n"), s.Err)
	}
	fresh := NewLive(st, nil)
	if s := fresh.Snapshot(ctx); s.Err == nil || s.Int("test.n") != 7 {
		t.Fatalf("nothing read yet: defaults and the error, got %d %v", s.Int("test.n"), s.Err)
	}
	var none *Live
	if none.Snapshot(ctx).Int("test.n") != 7 {
		t.Fatal("a nil Live is the defaults")
	}
	if err := NewLive(readOnly{}, nil).Set(ctx, "test.n", "1"); err == nil {
		t.Fatal("a read-only source took a write")
	}
}

type readOnly struct{}

func (readOnly) ListSettings(context.Context) (map[string]string, error) { return nil, nil }
